"""KindDesk's webhook registration (``synctool webhooks status|register``): ``GET /v1/webhooks``, ``POST
/v1/webhooks`` (which answers with the signing secret) and ``PUT /v1/webhooks/{id}`` to repair ours in place."""

from __future__ import annotations

import sqlite3
from typing import Any

from synctool.platform import Check, Found, RegisterResult, Runtime, Wanted, compare, needs_repair, ours
from synctool_kinddesk.models import ROLE
from synctool_kinddesk.webhook import SECRET

EVENTS = ["gift.created", "gift.refunded"]


def _wanted(base: str) -> Wanted:
    return Wanted(ROLE, f"{base}/webhooks/{ROLE}", EVENTS, SECRET)


def _found(client: Any) -> list[Found]:
    return [Found(str(w["id"]), w["url"], set(w.get("events") or []), bool(w.get("enabled", True))) for w in client.webhooks()]


def status(conn: sqlite3.Connection, rt: Runtime, base: str, client: Any) -> list[Check]:
    return [compare(_wanted(base), _found(client), rt.secrets.get(SECRET))]


def register(conn: sqlite3.Connection, rt: Runtime, base: str, client: Any) -> list[RegisterResult]:
    want = _wanted(base)
    mine = ours(_found(client), want)
    if mine is None:
        made = client.create_webhook(want.url, want.events)
        return [RegisterResult(ROLE, "created", str(made["id"]), secrets={SECRET: made["secret"]})]
    if needs_repair(mine, want):
        client.update_webhook(mine.id, want.url, sorted(mine.events | set(want.events)))
        return [RegisterResult(ROLE, "repaired", f"{mine.id}: URL, events and enabled set")]
    return [RegisterResult(ROLE, "unchanged", mine.id)]
