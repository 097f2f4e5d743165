"""A KindDesk gift becomes one CRM gift; the backup poll and reconcile read the gifts API."""

from __future__ import annotations

import sqlite3
from datetime import date
from decimal import Decimal
from typing import Any

from synctool import mappings, platforms
from synctool.crm.constituents import Person
from synctool.platforms import watermark
from synctool.platforms.context import Job
from synctool.platforms.reconcile import Expected
from synctool.platforms.webhook import Event
from synctool.queue.handlers import handler
from synctool.queue.jobs import Outcome
from synctool.runtime import Runtime

ROLE = "kind"


@handler(ROLE, "kind_gift")
def kind_gift(event: Event, job: Job) -> Outcome:
    gift = event.payload.get("gift") or event.data
    default = {"fund_id": job.config.section(ROLE).default_fund_id}
    body = {
        "external_id": f"kind_{gift['id']}",
        "received_amount": float(gift["amount"]),
        "received_date": gift["created_at"][:10],
        **mappings.coding(mappings.get(job.conn, "type_default", "kind:default"), default),
        **mappings.payment_coding(job.conn, "kind:card"),
    }
    person = Person(gift["first_name"], gift["last_name"], gift["email"])
    constituent_id, gift_id, created = job.make_gift(person, body)
    return Outcome("succeeded", "gift created" if created else "gift already in the CRM", crm_constituent_id=constituent_id,
                   crm_gift_id=gift_id, amount=gift["amount"])  # fmt: skip


def _job(gift: dict[str, Any]) -> dict[str, Any]:
    return {"source": ROLE, "entity_type": "kind_gift", "entity_id": gift["id"], "external_id": f"kind_{gift['id']}",
            "payload": {"gift": gift}, "email": gift["email"], "amount": gift["amount"]}  # fmt: skip


def poll(conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    started, since = watermark.window(conn, ROLE, overlap_minutes=60, first_lookback_hours=24, fresh=fresh, lookback=lookback)
    queued = 0
    with platforms.using(rt, ROLE) as client:
        found = client.gifts(since)
        spent = client.api.requests_sent
    for gift in found:
        queued += watermark.queue_unseen(
            conn, rt.config.queue.max_attempts, **{**_job(gift), "payload": {"gift": gift, "origin": "poll"}}
        )
    result = {"since": since, "seen": len(found), "queued": queued, "requests": spent}
    watermark.save(conn, ROLE, started, result)
    return result


def expected(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    with platforms.using(rt, ROLE) as client:
        listed = client.gifts()
        spent = client.api.requests_sent
    items = [
        Expected(
            ROLE, f"kind_{g['id']}", g["id"], Decimal(g["amount"]), Decimal(g["amount"]), g["created_at"][:10], sync_job=_job(g)
        )
        for g in listed
        if str(start) <= g["created_at"][:10] <= str(end)
    ]
    return items, spent
