"""What synctool reads from KindDesk besides the webhooks: the backup poll (the gifts and refunds since the last
run that synctool has not seen), the deliveries KindDesk failed to make (``webhooks heal``) and a failed job's
gift afresh (``retry-all --fresh``)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from synctool.platform import Missed, Runtime, SynctoolError, jobs, log, parse_iso, store, using, watermark
from synctool_kinddesk.models import ROLE, external_id


def gift_job(gift: dict[str, Any], origin: str) -> dict[str, Any]:
    """The ``jobs.enqueue`` keywords of the job that syncs ``gift`` (what its webhook would have queued)."""
    return {"source": ROLE, "entity_type": "gift", "entity_id": str(gift["id"]), "external_id": external_id(gift["id"]),
            "payload": {"gift": gift, "origin": origin}, "email": gift.get("email"), "amount": str(gift.get("amount"))}  # fmt: skip


def refund_job(refund: dict[str, Any], gift_id: str, origin: str) -> dict[str, Any]:
    """The ``jobs.enqueue`` keywords of the job that applies one refund of a gift."""
    return {"source": ROLE, "entity_type": "refund", "entity_id": str(refund["id"]), "external_id": external_id(gift_id),
            "payload": {"refund": {**refund, "gift_id": gift_id}, "origin": origin}, "amount": f"-{refund['amount']}"}  # fmt: skip


def poll(conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    """``synctool poll``: the gifts KindDesk lists since the window's start, each queued unless a job already makes
    its gift, and each refund queued unless synctool has a job for it."""
    started, since = watermark.window(conn, ROLE, overlap_minutes=60, first_lookback_hours=24, fresh=fresh, lookback=lookback)
    queued = refunds_queued = 0
    with using(rt, ROLE) as client:
        found = client.gifts(since)
        spent = client.api.requests_sent
    for gift in found:
        queued += watermark.queue_unseen(conn, rt.config.queue.max_attempts, **gift_job(gift, "poll"))
        for refund in gift.get("refunds") or []:
            with store.atomic(conn):
                if log.has_entity_job(conn, ROLE, "refund", str(refund["id"])):
                    continue
                jobs.enqueue(conn, max_attempts=rt.config.queue.max_attempts, **refund_job(refund, str(gift["id"]), "poll"))
            refunds_queued += 1
    result = {"since": since, "seen": len(found), "queued": queued + refunds_queued, "refunds_queued": refunds_queued,
              "requests": spent}  # fmt: skip
    watermark.save(conn, ROLE, started, result)
    return result


def missed(conn: sqlite3.Connection, rt: Runtime, since: str) -> tuple[list[Missed], int]:
    """The deliveries KindDesk reports it failed to make since ``since`` (ISO), oldest first, with the body it
    sent: ``webhooks heal`` replays them through the receiver's path."""
    with using(rt, ROLE) as client:
        found = client.failed_deliveries(since)
        spent = client.api.requests_sent
    start = parse_iso(since)
    items = [
        Missed(str(d["event_id"]), str(d["type"]), str(d["at"]), json.dumps(d["body"]).encode(), str(d.get("why") or ""))
        for d in found
        if start is None or (parse_iso(str(d["at"])) or start) >= start
    ]
    return sorted(items, key=lambda m: m.at), spent


def refetch(conn: sqlite3.Connection, rt: Runtime, rows: list[sqlite3.Row]) -> tuple[int, list[str]]:
    """``retry-all --fresh``: each failed gift job gets the gift as KindDesk holds it now."""
    refreshed, errors = 0, []
    with using(rt, ROLE) as client:
        for row in rows:
            if row["entity_type"] != "gift":
                continue
            try:
                gift = client.gift(row["entity_id"])
            except SynctoolError as exc:
                errors.append(f"{row['entity_id']}: {exc}")
                continue
            jobs.set_payload(conn, row["id"], {"gift": gift, "origin": "refetch", "fresh": True})
            refreshed += 1
    return refreshed, errors
