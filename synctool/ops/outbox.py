"""Mail that waits to be sent: a request never talks to the mail server.

"Send me a link" on the staff page and an invitation sent from its team page put a row here and answer at once,
the same way whoever asked, so neither the answer nor its time tells a stranger who is on the team, and a slow
or broken mail server never holds a request. ``synctool drain`` (cron's, or the drain unit's ``--watch``) sends
what is due. A sign-in row holds the user, never a link: the link is made as the mail leaves, so the database
holds no usable secret, and its 15 minutes start when it is sent.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from synctool import store
from synctool.errors import ConfigError, SynctoolError
from synctool.runtime import Runtime

logger = logging.getLogger("synctool.outbox")

SIGN_IN = "sign_in"
#: a failed send is tried again this much later, at most MAX_ATTEMPTS times in all
RETRY_AFTER = timedelta(minutes=1)
MAX_ATTEMPTS = 5
#: a sign-in mail not sent by then is dropped: whoever asked has given up or asked again
SIGN_IN_GIVE_UP = timedelta(minutes=15)
#: a row being sent is held this long, so a second drain does not send it too
SENDING_LEASE = timedelta(minutes=2)


def queue_sign_in(conn: sqlite3.Connection, user_id: int, email: str) -> int:
    """A sign-in link for ``user_id``, to be made and mailed by the next drain."""
    now = store.iso()
    with store.atomic(conn):
        cur = conn.execute(
            "INSERT INTO outbox (kind, user_id, recipients, created_at, send_after) VALUES (?, ?, ?, ?, ?)",
            (SIGN_IN, user_id, email, now, now),
        )
    return int(cur.lastrowid or 0)


#: how each kind of mail is sent: (connection, runtime, its outbox row) -> None, raising SynctoolError when it was not
Sender = Callable[[sqlite3.Connection, Runtime, sqlite3.Row], None]


def send_due(conn: sqlite3.Connection, rt: Runtime, senders: Mapping[str, Sender], *, limit: int = 50) -> dict[str, int]:
    """Send what is due through its kind's sender; a failure waits and is tried again, up to MAX_ATTEMPTS. Never
    raises for a mail problem (drain goes on): the failures are in ``problems`` for doctor and the overview."""
    now = store.utcnow()
    counts = {"sent": 0, "failed": 0, "dropped": 0}
    due = conn.execute(
        "SELECT * FROM outbox WHERE sent_at IS NULL AND send_after <= ? AND attempts < ? ORDER BY id LIMIT ?",
        (store.iso(now), MAX_ATTEMPTS, limit),
    ).fetchall()
    for row in due:
        with store.atomic(conn):  # claim it: a drain running beside this one skips it
            claimed = conn.execute(
                "UPDATE outbox SET send_after = ?, attempts = attempts + 1 WHERE id = ? AND sent_at IS NULL AND send_after = ?",
                (store.iso(now + SENDING_LEASE), row["id"], row["send_after"]),
            ).rowcount
        if not claimed:
            continue
        if row["kind"] == SIGN_IN and row["created_at"] < store.iso(now - SIGN_IN_GIVE_UP):
            _end(conn, row["id"], error="not sent within 15 minutes of the request; dropped")
            counts["dropped"] += 1
            continue
        try:
            if row["kind"] not in senders:
                raise ConfigError("outbox", "database", f"unknown kind of mail {row['kind']!r}")
            senders[row["kind"]](conn, rt, row)
        except SynctoolError as exc:
            detail = getattr(exc, "detail", "")
            error = str(exc) + (f" ({detail})" if detail else "")
            logger.warning("mail %s not sent: %s", row["id"], error)
            with store.atomic(conn):
                conn.execute(
                    "UPDATE outbox SET last_error = ?, send_after = ? WHERE id = ?",
                    (error, store.iso(store.utcnow() + RETRY_AFTER), row["id"]),
                )
            counts["failed"] += 1
            continue
        _end(conn, row["id"])
        counts["sent"] += 1
    return counts


def _end(conn: sqlite3.Connection, outbox_id: int, *, error: str | None = None) -> None:
    """Sent; or, with ``error``, given up for good (no attempts left, the row stays for doctor until pruned)."""
    with store.atomic(conn):
        if error is None:
            conn.execute("UPDATE outbox SET sent_at = ? WHERE id = ?", (store.iso(), outbox_id))
        else:
            conn.execute("UPDATE outbox SET last_error = ?, attempts = ? WHERE id = ?", (error, MAX_ATTEMPTS, outbox_id))


def problems(conn: sqlite3.Connection) -> dict[str, Any]:
    """What doctor and the overview say of the outbox: mail that failed for good in the last day, mail waiting
    longer than a drain should take, and the newest error (which names the mail server, never a recipient)."""
    now = store.utcnow()
    row = conn.execute(
        "SELECT"
        " sum(attempts >= ? AND created_at >= ?) AS failed,"
        " sum(attempts < ? AND created_at <= ?) AS late,"
        " sum(attempts < ?) AS waiting"
        " FROM outbox WHERE sent_at IS NULL",
        (MAX_ATTEMPTS, store.iso(now - timedelta(days=1)), MAX_ATTEMPTS, store.iso(now - timedelta(minutes=5)), MAX_ATTEMPTS),
    ).fetchone()
    error = conn.execute(
        "SELECT last_error FROM outbox WHERE last_error IS NOT NULL AND created_at >= ? ORDER BY id DESC LIMIT 1",
        (store.iso(now - timedelta(days=1)),),
    ).fetchone()
    return {
        "failed": row["failed"] or 0,
        "late": row["late"] or 0,
        "waiting": row["waiting"] or 0,
        "last_error": error["last_error"] if error else None,
    }
