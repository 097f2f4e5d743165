"""Stripe's webhook endpoint: ``GET`` / ``POST /v1/webhook_endpoints``. Its signing ``secret`` is returned
only when the endpoint is created, so an endpoint whose secret this side lost is replaced (deleted, then
created), never doubled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool.platform import Check, Found, RegisterResult, Runtime, Wanted, compare, needs_repair, ours

if TYPE_CHECKING:
    from synctool.platform import Connection
    from synctool.platforms.stripe.client import PaymentsClient

SECRET = "PAYMENTS_WEBHOOK_SECRET"
EVENTS = [
    "checkout.session.completed", "checkout.session.async_payment_succeeded", "checkout.session.async_payment_failed",
    "payment_intent.succeeded", "charge.refunded",
]  # fmt: skip


def wanted(conn: Connection, rt: Runtime, base: str) -> list[Wanted]:
    return [Wanted("payments", f"{base}/webhooks/payments", EVENTS, SECRET)]


def _found(client: PaymentsClient) -> list[Found]:
    return [
        Found(e["id"], e.get("url") or "", set(e.get("enabled_events") or []), e.get("status", "enabled") == "enabled")
        for e in client.webhook_endpoints()
    ]


def status(conn: Connection, rt: Runtime, base: str, client: PaymentsClient) -> list[Check]:
    [want] = wanted(conn, rt, base)
    return [compare(want, _found(client), rt.secrets.get(SECRET))]


def register(conn: Connection, rt: Runtime, base: str, client: PaymentsClient) -> list[RegisterResult]:
    [want] = wanted(conn, rt, base)
    mine = ours(_found(client), want)
    if mine is not None and not rt.secrets.get(SECRET):
        client.delete_webhook_endpoint(mine.id)  # its secret cannot be read again: replace it
        created = client.create_webhook_endpoint(want.url, want.events)
        return [
            RegisterResult(
                "payments", "secret renewed", f"{mine.id} replaced by {created['id']}", secrets={SECRET: created["secret"]}
            )
        ]
    if mine is None:
        created = client.create_webhook_endpoint(want.url, want.events)
        return [RegisterResult("payments", "created", created["id"], secrets={SECRET: created["secret"]})]
    if needs_repair(mine, want):
        client.update_webhook_endpoint(mine.id, want.url, sorted(mine.events | set(want.events)))
        return [RegisterResult("payments", "repaired", f"{mine.id}: URL, events and enabled set")]
    return [RegisterResult("payments", "unchanged", mine.id)]
