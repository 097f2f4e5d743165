"""Square's webhook subscription: ``GET`` / ``POST`` / ``PUT /v2/webhooks/subscriptions``. The signature
covers the notification URL byte for byte, so the URL registered is the one synctool verifies with
(``notification.py``). Square shows a subscription's ``signature_key`` only when it is
created or rotated (``POST .../signature-key``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool.platform import Check, Found, RegisterResult, Runtime, Wanted, compare, needs_repair, ours
from synctool.platforms import square
from synctool.platforms.square import notification

if TYPE_CHECKING:
    from synctool.platform import Connection
    from synctool.platforms.square.client import PosClient

SECRET = "POS_WEBHOOK_SIGNATURE_KEY"
EVENTS = ["order.created", "order.updated", "payment.created", "payment.updated", "refund.created", "refund.updated"]


def wanted(conn: Connection, rt: Runtime, base: str) -> list[Wanted]:
    return [Wanted("pos", f"{base}/webhooks/pos", EVENTS, SECRET)]


def _found(client: PosClient) -> list[Found]:
    return [
        Found(s["id"], s.get("notification_url") or "", set(s.get("event_types") or []), bool(s.get("enabled", True)))
        for s in client.subscriptions()
    ]


def status(conn: Connection, rt: Runtime, base: str, client: PosClient) -> list[Check]:
    [want] = wanted(conn, rt, base)
    check = compare(want, _found(client), rt.secrets.get(SECRET))
    verify_url = notification.url(conn, rt)
    if check.state == "ok" and verify_url != want.url:
        check = Check("pos", "wrong URL", f"registered {want.url}, but synctool verifies signatures with {verify_url or '(none)'}",
                      check.fix, registration_id=check.registration_id)  # fmt: skip
    return [check]


def register(conn: Connection, rt: Runtime, base: str, client: PosClient) -> list[RegisterResult]:
    [want] = wanted(conn, rt, base)
    mine = ours(_found(client), want)
    keep = {notification.SETTING: want.url}
    if mine is None:
        created = client.create_subscription(want.url, want.events, square.PosConfig.of(rt.config).square_version)
        return [
            RegisterResult("pos", "created", created.get("id", ""), secrets={SECRET: created["signature_key"]}, settings=keep)
        ]
    action, detail = "unchanged", mine.id
    if needs_repair(mine, want):
        client.update_subscription(mine.id, want.url, sorted(mine.events | set(want.events)))
        action, detail = "repaired", f"{mine.id}: URL, events and enabled set"
    if not rt.secrets.get(SECRET):  # the key is shown only once: rotate it to learn it
        return [RegisterResult("pos", "secret renewed" if action == "unchanged" else action, detail,
                        secrets={SECRET: client.rotate_signature_key(mine.id)}, settings=keep)]  # fmt: skip
    return [RegisterResult("pos", action, detail, settings=keep)]
