"""`synctool prune`: donor data kept no longer than it is needed (invariant 10).

A delivery's raw body (and the headers kept with it) holds every donor's name, address and phone as the platform
sent them. ``retention.raw_bodies_days`` after it arrived (400 by default: a whole year-end cycle can be
replayed) the body becomes empty and ``body_pruned_at`` says when; the row stays, with its event id, and so does
its job, the sync log line with the external id, the amounts and the CRM ids. A body a job still needs is kept
whatever its age (``log.NEEDED_DELIVERIES``: queued, running, an open failure, held for review, previewed).

What else only ever grows goes after fixed bounds, which are no settings: a sign-in link a day after it expired,
was used or was revoked; a staff session a day after it ended, expired or was revoked; a mail 30 days after it
was sent (or given up); a "send me a link" request after a day (its rate limits look back an hour at most).

Work goes in batches of ``BATCH`` rows, each its own short transaction, so the receiver's inserts wait for one
batch at most. The dropped bytes are overwritten on disk (``secure_delete``), not left in free pages.

Then the database is kept compact: the free pages go back to the file system, ``VACUUM_PAGES`` per transaction
(a database made before 0.3.0 can only reuse them until ``prune --vacuum`` rewrites it once), ``PRAGMA optimize``
refreshes the query planner's statistics, and the day's size is recorded (``doctor``'s growth per month).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from synctool import store
from synctool.errors import InvalidInput
from synctool.ops.outbox import MAX_ATTEMPTS
from synctool.queue import log
from synctool.runtime import Runtime

logger = logging.getLogger("synctool.retention")

#: rows changed per transaction
BATCH = 500
#: how long an ended sign-in link, an ended staff session and a "send me a link" request are kept
SIGN_IN_KEPT = timedelta(days=1)
#: how long a mail is kept after it was sent (or given up)
MAIL_KEPT = timedelta(days=30)
#: free pages given back to the file system per transaction (4 MB at SQLite's page size)
VACUUM_PAGES = 1000

#: the raw bodies retention may drop: older than the cutoff, not dropped yet, needed by no job
_DROPPABLE = f"received_at < ? AND body_pruned_at IS NULL AND id NOT IN ({log.NEEDED_DELIVERIES})"


#: each table prune deletes rows of, by its key column
_KEYS = {"login_links": "token_hash", "staff_sessions": "id_hash", "outbox": "id", "sign_in_requests": "id"}


def _deleted(now: datetime) -> dict[str, tuple[str, tuple[str | int, ...]]]:
    """Each kind of row prune deletes: table -> (its WHERE, parameters)."""
    day, month = store.iso(now - SIGN_IN_KEPT), store.iso(now - MAIL_KEPT)
    return {
        "login_links": ("expires_at < ? OR used_at < ? OR revoked_at < ?", (day, day, day)),
        "staff_sessions": ("expires_at < ? OR ended_at < ? OR revoked_at < ?", (day, day, day)),
        "outbox": ("sent_at < ? OR (sent_at IS NULL AND attempts >= ? AND created_at < ?)", (month, MAX_ATTEMPTS, month)),
        "sign_in_requests": ("at < ?", (day,)),
    }


def prune(conn: store.Connection, rt: Runtime, *, dry_run: bool = False, vacuum: bool = False) -> dict[str, Any]:
    """Drop the raw bodies older than ``retention.raw_bodies_days`` that no job needs, and the ended sign-in
    links, sessions, sent mail and old sign-in requests, then compact the database (``vacuum``: rewrite it whole);
    with ``dry_run``, count them and change nothing. Returns the counts per kind, the dates the dropped bodies were
    received between, how many old bodies were kept for the jobs that still need them, and the database's size.
    Running it again drops nothing more."""
    if dry_run and vacuum:
        raise InvalidInput("--vacuum rewrites the database; --dry-run changes nothing", "give one of them")
    now = rt.clock()
    days = rt.config.retention.raw_bodies_days
    cutoff = store.iso(now - timedelta(days=days))
    found = conn.execute(
        f"SELECT count(*), min(received_at), max(received_at) FROM deliveries WHERE {_DROPPABLE}", (cutoff,)
    ).fetchone()
    kept = conn.execute(
        f"SELECT count(*) FROM deliveries WHERE received_at < ? AND body_pruned_at IS NULL AND id IN ({log.NEEDED_DELIVERIES})",
        (cutoff,),
    ).fetchone()[0]
    deleted = _deleted(now)
    if dry_run:
        counts = {"raw_bodies": found[0]} | {
            table: conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()[0]
            for table, (where, params) in deleted.items()
        }
    else:
        with store.dialect.secure_delete(conn):  # the dropped bytes are zeroed, not left in free pages
            counts = {"raw_bodies": _drop_bodies(conn, cutoff, store.iso(now))}
            for table, (where, params) in deleted.items():
                counts[table] = _delete(conn, table, where, params)
    size = store.size(conn) if dry_run else _compact(conn, now.date().isoformat(), vacuum=vacuum)
    result = {
        "dry_run": dry_run,
        "raw_bodies_days": days,
        "received_before": cutoff,
        "counts": counts,
        "raw_bodies_received": {"from": found[1], "to": found[2]} if found[0] else None,
        "kept_for_jobs": kept,
        "database": size,
    }
    if not dry_run:
        logger.info("prune: %s", said(result))
    return result


def _drop_bodies(conn: store.Connection, cutoff: str, now: str) -> int:
    """Empty the droppable bodies, ``BATCH`` at a time in id order (one pass over the table); each batch is
    chosen and emptied in one transaction, so a job retried meanwhile keeps its body."""
    dropped, after = 0, 0
    while True:
        with store.atomic(conn):
            ids = [
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM deliveries WHERE id > ? AND {_DROPPABLE} ORDER BY id LIMIT ?", (after, cutoff, BATCH)
                )
            ]
            if not ids:
                return dropped
            marks = ",".join("?" * len(ids))
            conn.execute(
                f"UPDATE deliveries SET body = ?, headers = '{{}}', body_pruned_at = ? WHERE id IN ({marks})", (b"", now, *ids)
            )
        dropped += len(ids)
        after = ids[-1]


def _compact(conn: store.Connection, day: str, *, vacuum: bool) -> dict[str, Any]:
    """Give the free pages back (``VACUUM_PAGES`` a transaction, so a delivery waits for one step at most; with
    ``vacuum``, rewrite the whole file, switching an old database to incremental vacuum), refresh the planner's
    statistics, record the day's size. Returns the size before and after."""
    before = store.size(conn)
    if vacuum:
        store.dialect.rewrite(conn)
    elif before["auto_vacuum"] == 2:
        free = before["free_bytes"]
        while free:
            with store.atomic(conn):
                store.dialect.give_back(conn, VACUUM_PAGES)
            free, was = store.size(conn)["free_bytes"], free
            if free >= was:
                break
    store.dialect.refresh_statistics(conn)
    after = store.record_size(conn, day)
    return {**after, "bytes_before": before["bytes"], "vacuumed": vacuum}


def _delete(conn: store.Connection, table: str, where: str, params: tuple[str | int, ...]) -> int:
    deleted = 0
    while True:
        with store.atomic(conn):
            gone = conn.execute(
                f"DELETE FROM {table} WHERE {_KEYS[table]} IN (SELECT {_KEYS[table]} FROM {table} WHERE {where} LIMIT ?)",
                (*params, BATCH),
            ).rowcount
        deleted += gone
        if gone < BATCH:
            return deleted


#: each kind prune drops: its name, and what of it goes
KINDS = {
    "raw_bodies": ("raw bodies", "of deliveries older than retention.raw_bodies_days; their rows and jobs stay"),
    "login_links": ("sign-in links", "expired, used or revoked over a day ago"),
    "staff_sessions": ("staff sessions", "ended, expired or revoked over a day ago"),
    "outbox": ("mail", "sent (or given up) over 30 days ago"),
    "sign_in_requests": ("sign-in requests", "over a day old (the rate limits look back an hour)"),
}


def said(result: dict[str, Any]) -> str:
    """The result in one line: the log's, and cron's when asked."""
    received = result["raw_bodies_received"]
    line = ", ".join(f"{result['counts'][kind]} {name}" for kind, (name, _) in KINDS.items())
    line = ("would drop " if result["dry_run"] else "dropped ") + line
    if received:
        line += f"; the bodies were received {received['from'][:10]} to {received['to'][:10]}"
    if result["kept_for_jobs"]:
        line += f"; {result['kept_for_jobs']} older bodies kept for the jobs that still need them"
    return line + "; " + database_said(result)


def database_said(result: dict[str, Any]) -> str:
    size = result["database"]
    line = f"database {size['bytes'] / 1_000_000:,.1f} MB"
    if "bytes_before" in size and size["bytes_before"] > size["bytes"]:
        line += f" ({(size['bytes_before'] - size['bytes']) / 1_000_000:,.1f} MB given back)"
    if size["free_bytes"]:
        line += f", {size['free_bytes'] / 1_000_000:,.1f} MB free"
    if size["free_bytes"] and size["auto_vacuum"] != 2:
        line += " (reused by later writes; `synctool prune --vacuum` gives it back)"
    return line
