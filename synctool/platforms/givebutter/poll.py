"""The backup poll of the donation platform (spec: poll-now, poll-fresh, dev poll-cron).

Reads transactions created since the saved watermark minus an overlap, 100 a page, and queues the
succeeded ones that have no job yet. One request when nothing is new. The platform's 429 and
``Retry-After`` are honoured by the client.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from typing import Any

from synctool import platforms, store
from synctool.platforms.givebutter.webhook import external_id, supporter_name
from synctool.queue import jobs, log
from synctool.runtime import Runtime
from synctool.timeutil import parse_duration, parse_iso


def poll(
    conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None, client=None
) -> dict[str, Any]:
    started = store.utcnow()
    state = conn.execute("SELECT * FROM poll_state WHERE source = 'donations'").fetchone()
    overlap = timedelta(minutes=rt.config.donations.poll_overlap_minutes)
    if fresh or lookback or state is None or not state["watermark"]:
        window = parse_duration(lookback) if lookback else timedelta(hours=rt.config.donations.poll_first_lookback_hours)
        since = started - window
    else:
        since = (parse_iso(state["watermark"]) or started) - overlap
    since_text = since.strftime("%Y-%m-%dT%H:%M:%SZ")
    seen = queued = 0
    with platforms.using(rt, "donations", client) as donations:
        for txn in donations.transactions_since(since_text, per_page=100):
            seen += 1
            if str(txn.get("status") or "").lower() != "succeeded" or not txn.get("id"):
                continue
            ext = external_id(txn["id"])
            with store.atomic(conn):
                if log.has_job(conn, ext):
                    continue
                jobs.enqueue(
                    conn,
                    source="donations",
                    entity_type="transaction",
                    entity_id=str(txn["id"]),
                    external_id=ext,
                    payload={"transaction": txn, "origin": "poll"},
                    email=txn.get("email"),
                    name=supporter_name(txn),
                    amount=str(txn.get("amount")),
                    max_attempts=rt.config.queue.max_attempts,
                )
            queued += 1
        requests = donations.api.requests_sent
    result = {
        "since": since_text,
        "seen": seen,
        "transactions_seen": seen,
        "queued": queued,
        "requests": requests,
        "fresh": bool(fresh or lookback),
    }
    with store.atomic(conn):
        store.database(conn).table("poll_state").upsert(
            {
                "source": "donations",
                "watermark": store.iso(started),
                "last_run_at": store.iso(),
                "last_result": json.dumps(result),
            },
            pk="source",
        )
    return result
