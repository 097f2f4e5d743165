"""Givebutter's webhook: ``GET`` / ``POST`` / ``PUT /v1/webhooks``. Its signing secret is the webhook's
``signature`` field, which Givebutter returns whenever the webhook is read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool.platform import Check, Found, RegisterResult, Runtime, Wanted, compare, needs_repair, ours

if TYPE_CHECKING:
    from synctool.platform import Connection

SECRET = "DONATIONS_WEBHOOK_SECRET"
EVENTS = [
    "transaction.succeeded", "ticket.created", "campaign.created", "campaign.updated", "refund.created",
    "plan.canceled", "plan.created", "plan.failed", "plan.paused", "plan.resumed", "plan.updated",
]  # fmt: skip


def wanted(conn: Connection, rt: Runtime, base: str) -> list[Wanted]:
    return [Wanted("donations", f"{base}/webhooks/donations", EVENTS, SECRET)]


def _found(client: Any) -> list[Found]:
    return [
        Found(
            str(w["id"]),
            w.get("url") or "",
            set(w.get("events") or ([w["event"]] if w.get("event") else [])),
            bool(w.get("enabled", True)),
            w.get("signature"),
        )  # fmt: skip
        for w in client.webhooks()
    ]


def status(conn: Connection, rt: Runtime, base: str, client: Any) -> list[Check]:
    [want] = wanted(conn, rt, base)
    found = _found(client)
    mine = ours(found, want)
    here = rt.secrets.get(SECRET)
    return [compare(want, found, here, secret_matches=None if mine is None or not mine.secret else mine.secret == here)]


def register(conn: Connection, rt: Runtime, base: str, client: Any) -> list[RegisterResult]:
    [want] = wanted(conn, rt, base)
    mine = ours(_found(client), want)
    if mine is None:
        created = client.create_webhook(want.url, want.events)
        return [RegisterResult("donations", "created", str(created.get("id")), secrets={SECRET: created["signature"]})]
    action, detail = "unchanged", mine.id
    if needs_repair(mine, want):
        client.update_webhook(mine.id, want.url, sorted(mine.events | set(want.events)))
        action, detail = "repaired", f"{mine.id}: URL, events and enabled set"
    secrets = {SECRET: mine.secret} if mine.secret and mine.secret != rt.secrets.get(SECRET) else {}
    return [
        RegisterResult("donations", "secret renewed" if secrets and action == "unchanged" else action, detail, secrets=secrets)
    ]
