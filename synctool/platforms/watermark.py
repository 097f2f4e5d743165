"""A backup poll's window (``poll_state``, one row per source): from the last run's start less an overlap, or
from a lookback on the first run, ``--fresh`` or ``--lookback``; the row the run leaves behind; and the one rule
of what a poll queues (``queue_unseen``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from synctool import store
from synctool.timeutil import parse_duration, parse_iso


def window(
    conn: store.Connection,
    source: str,
    *,
    overlap_minutes: int,
    first_lookback_hours: int,
    fresh: bool = False,
    lookback: str | None = None,
) -> tuple[datetime, str]:
    """When this run started, and the moment it reads from (``YYYY-MM-DDTHH:MM:SSZ``)."""
    started = store.utcnow()
    state = conn.execute("SELECT watermark FROM poll_state WHERE source = ?", (source,)).fetchone()
    if fresh or lookback or state is None or not state["watermark"]:
        since = started - (parse_duration(lookback) if lookback else timedelta(hours=first_lookback_hours))
    else:
        since = (parse_iso(state["watermark"]) or started) - timedelta(minutes=overlap_minutes)
    return started, since.strftime("%Y-%m-%dT%H:%M:%SZ")


class PollTimes(Protocol):
    """A platform's config section that times its poll (``poll_overlap_minutes``, ``poll_first_lookback_hours``)."""

    poll_overlap_minutes: int
    poll_first_lookback_hours: int


def window_of(
    conn: store.Connection, source: str, times: PollTimes, *, fresh: bool = False, lookback: str | None = None
) -> tuple[datetime, str]:
    """``window`` with the overlap and first lookback of the platform's config section ``times``."""
    return window(
        conn,
        source,
        overlap_minutes=times.poll_overlap_minutes,
        first_lookback_hours=times.poll_first_lookback_hours,
        fresh=fresh,
        lookback=lookback,
    )


def save(conn: store.Connection, source: str, started: datetime, result: Mapping[str, object]) -> None:
    """The run's start becomes the next run's watermark; its result is what ``doctor`` shows."""
    with store.atomic(conn):
        store.put_row(
            conn,
            "poll_state",
            {"source": source},
            {"watermark": store.iso(started), "last_run_at": store.iso(), "last_result": json.dumps(result)},
        )


def queue_unseen(conn: store.Connection, max_attempts: int, **spec: Any) -> int:
    """Queue the job ``spec`` describes (``jobs.enqueue``'s fields) unless a job already makes its gift (its
    ``external_id``): what a webhook announced, a backfill or an earlier poll queued. A refund job naming the
    gift does not count: the gift still has to be made. Returns 1 when it queued, else 0."""
    from synctool.queue import jobs, log

    with store.atomic(conn):
        if log.gift_job(conn, spec["external_id"]) is not None:
            return 0
        jobs.enqueue(conn, max_attempts=max_attempts, **spec)
    return 1


def queue_new(conn: store.Connection, max_attempts: int, **spec: Any) -> int:
    """Queue the job ``spec`` describes unless synctool has a job for the same item already (its ``source``,
    ``entity_type`` and ``entity_id``: a refund its webhook announced, or an earlier poll queued). Returns 1 when
    it queued, else 0."""
    from synctool.queue import jobs, log

    with store.atomic(conn):
        if log.has_entity_job(conn, spec["source"], spec["entity_type"], spec["entity_id"]):
            return 0
        jobs.enqueue(conn, max_attempts=max_attempts, **spec)
    return 1
