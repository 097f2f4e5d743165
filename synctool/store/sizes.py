"""The database's size: what ``doctor`` reports and ``prune`` records each day, and its growth per month."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from synctool.store import dialect
from synctool.store.engine import Connection
from synctool.store.transactions import atomic


def size(conn: Connection) -> dict[str, int]:
    """The database file's size, the part of it that is free pages (reused by later writes, or given back by
    ``prune``), and its ``auto_vacuum`` mode (2: incremental, what ``connect`` gives a new database). PostgreSQL:
    the current schema's tables with their indexes, no free pages counted, and 2 (its autovacuum makes space
    reusable as it goes)."""
    if dialect.on_postgres(conn):
        used = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_catalog.pg_class c"
            " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'"
        ).fetchone()[0]
        return {"bytes": int(used), "free_bytes": 0, "auto_vacuum": 2}
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    return {
        "bytes": conn.execute("PRAGMA page_count").fetchone()[0] * page,
        "free_bytes": conn.execute("PRAGMA freelist_count").fetchone()[0] * page,
        "auto_vacuum": conn.execute("PRAGMA auto_vacuum").fetchone()[0],
    }


def record_size(conn: Connection, day: str) -> dict[str, int]:
    """Keep today's size (``prune`` does, nightly), for ``growth_per_month``; returns it."""
    found = size(conn)
    with atomic(conn):
        conn.execute(
            "INSERT INTO store_sizes (day, bytes, free_bytes) VALUES (?, ?, ?)"
            " ON CONFLICT (day) DO UPDATE SET bytes = excluded.bytes, free_bytes = excluded.free_bytes",
            (day, found["bytes"], found["free_bytes"]),
        )
        conn.execute("DELETE FROM store_sizes WHERE day < ?", (_days_before(day, 400),))
    return found


def growth_per_month(conn: Connection, *, days: int = 90) -> float | None:
    """Bytes the database's data grew per 30 days over the last ``days`` of recorded sizes (free pages left
    out, so a vacuum does not count as shrinking); None until two sizes a week apart are recorded."""
    newest = conn.execute("SELECT max(day) FROM store_sizes").fetchone()[0]
    if newest is None:
        return None
    rows = conn.execute(
        "SELECT day, bytes - free_bytes FROM store_sizes WHERE day >= ? ORDER BY day", (_days_before(newest, days),)
    ).fetchall()
    if len(rows) < 2:
        return None
    (first, used_then), (last, used_now) = rows[0], rows[-1]
    span = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).days
    return (used_now - used_then) * 30 / span if span >= 7 else None


def _days_before(day: str, days: int) -> str:
    """The day ``days`` before ``day`` (``YYYY-MM-DD``, as stored)."""
    return (date.fromisoformat(day[:10]) - timedelta(days=days)).isoformat()
