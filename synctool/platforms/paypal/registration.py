"""PayPal's webhook registration (``synctool webhooks status|register``): ``GET /v1/notifications/webhooks``,
``POST /v1/notifications/webhooks`` (its answer's ``id`` is the webhook id PayPal's signatures cover: kept as
``PAYPAL_WEBHOOK_ID``) and ``PATCH /v1/notifications/webhooks/{id}`` to repair synctool's in place."""

from __future__ import annotations

from typing import Any

from synctool.platform import Check, Connection, Found, RegisterResult, Runtime, Wanted, compare, needs_repair, ours
from synctool.platforms.paypal.models import ROLE
from synctool.platforms.paypal.webhook import GIFT_EVENTS, REFUND_EVENTS, SUBSCRIPTION_EVENTS, WEBHOOK_ID

EVENTS = [*GIFT_EVENTS, *REFUND_EVENTS, *SUBSCRIPTION_EVENTS]


def _wanted(base: str) -> Wanted:
    return Wanted(ROLE, f"{base}/webhooks/{ROLE}", EVENTS, WEBHOOK_ID)


def _found(client: Any) -> list[Found]:
    return [Found(str(w["id"]), str(w.get("url")), {str(e.get("name")) for e in w.get("event_types") or [] if isinstance(e, dict)})
            for w in client.webhooks()]  # fmt: skip


def _kept(rt: Runtime) -> str | None:
    return rt.secrets.get(WEBHOOK_ID) or rt.config.section(ROLE).webhook_id


def status(conn: Connection, rt: Runtime, base: str, client: Any) -> list[Check]:
    return [compare(_wanted(base), _found(client), _kept(rt))]


def register(conn: Connection, rt: Runtime, base: str, client: Any) -> list[RegisterResult]:
    want = _wanted(base)
    mine = ours(_found(client), want)
    if mine is None:
        made = client.create_webhook(want.url, want.events)
        return [RegisterResult(ROLE, "created", str(made["id"]), secrets={WEBHOOK_ID: str(made["id"])})]
    kept = {WEBHOOK_ID: mine.id} if _kept(rt) != mine.id else {}
    if needs_repair(mine, want):
        client.update_webhook(mine.id, want.url, sorted(mine.events | set(want.events)))
        return [RegisterResult(ROLE, "repaired", f"{mine.id}: URL and events set", secrets=kept)]
    return [RegisterResult(ROLE, "secret renewed" if kept else "unchanged", mine.id, secrets=kept)]
