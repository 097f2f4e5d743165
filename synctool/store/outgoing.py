"""Rows that wait to be sent (the outbox's mail, the chat notices): ``synctool drain`` sends what is due, each row
once however many drains run beside it; a failed send waits and is tried again, a number of times in all, then
the row is given up with its error kept for doctor and the overview.

A table of them has ``sent_at``, ``send_after``, ``attempts``, ``created_at`` and ``last_error`` columns; what a
row holds and how it is sent are its owner's (``Outgoing.send``'s ``attempt``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from synctool.store.engine import Connection, Row
from synctool.store.times import iso, utcnow
from synctool.store.transactions import atomic


@dataclass(frozen=True)
class Outgoing:
    """A table of rows to send: ``key`` names its key column, ``order`` the column due rows are sent in, ``what``
    how the log names a row. Sending a row claims it for ``lease`` (a second drain skips it) and counts an
    attempt; a failed one is tried again ``retry_after`` later, ``max_attempts`` times in all."""

    table: str
    key: str
    order: str
    what: str
    log: logging.Logger
    max_attempts: int = 5
    retry_after: timedelta = timedelta(minutes=1)
    lease: timedelta = timedelta(minutes=2)
    #: a row sent after a failed attempt forgets that attempt's error (else the error stays for doctor)
    clear_error_when_sent: bool = False

    def due(self, conn: Connection, now: datetime, limit: int) -> list[Row]:
        """The rows not sent whose time has come and that have attempts left, oldest first."""
        return conn.execute(
            f"SELECT * FROM {self.table} WHERE sent_at IS NULL AND send_after <= ? AND attempts < ?"
            f" ORDER BY {self.order} LIMIT ?",
            (iso(now), self.max_attempts, limit),
        ).fetchall()

    def send(
        self,
        conn: Connection,
        rows: Sequence[Row],
        now: datetime,
        attempt: Callable[[Row], str | None],
        given_up: Callable[[Row], str | None],
    ) -> dict[str, int]:
        """Send each row this drain claims: dropped when ``given_up`` says why, else ``attempt`` sends it (None:
        sent; else why not, kept and said in the log). Never raises for a send that failed (drain goes on)."""
        counts = {"sent": 0, "failed": 0, "dropped": 0}
        for row in rows:
            if not self._claim(conn, row, now):
                continue
            why = given_up(row)
            if why is not None:
                self._end(conn, row[self.key], error=why)
                counts["dropped"] += 1
                continue
            error = attempt(row)
            if error is None:
                self._end(conn, row[self.key])
                counts["sent"] += 1
                continue
            self.log.warning("%s %s not sent: %s", self.what, row[self.key], error)
            with atomic(conn):
                conn.execute(
                    f"UPDATE {self.table} SET last_error = ?, send_after = ? WHERE {self.key} = ?",
                    (error, iso(utcnow() + self.retry_after), row[self.key]),
                )
            counts["failed"] += 1
        return counts

    def _claim(self, conn: Connection, row: Row, now: datetime) -> bool:
        """Hold the row for this drain (a drain running beside it skips it), counting the attempt. One conditional
        UPDATE, on the ``send_after`` the drain read: the first drain's moves it, so a second's matches nothing,
        SQLite's one writer or PostgreSQL's row lock (the second waits, then reads the row as committed)."""
        with atomic(conn):
            return bool(
                conn.execute(
                    f"UPDATE {self.table} SET send_after = ?, attempts = attempts + 1"
                    f" WHERE {self.key} = ? AND sent_at IS NULL AND send_after = ?",
                    (iso(now + self.lease), row[self.key], row["send_after"]),
                ).rowcount
            )

    def _end(self, conn: Connection, key: object, *, error: str | None = None) -> None:
        """Sent; or, with ``error``, given up for good (no attempts left: the row stays, its error for doctor)."""
        with atomic(conn):
            if error is not None:
                conn.execute(
                    f"UPDATE {self.table} SET last_error = ?, attempts = ? WHERE {self.key} = ?",
                    (error, self.max_attempts, key),
                )
            elif self.clear_error_when_sent:
                conn.execute(f"UPDATE {self.table} SET sent_at = ?, last_error = NULL WHERE {self.key} = ?", (iso(), key))
            else:
                conn.execute(f"UPDATE {self.table} SET sent_at = ? WHERE {self.key} = ?", (iso(), key))

    def problems(self, conn: Connection, *, late_after: timedelta | None = None) -> dict[str, Any]:
        """What doctor and the overview say of the table: rows given up in the last day, rows waiting (with
        ``late_after``, also those waiting longer than that), and the newest error of the last day."""
        now = utcnow()
        since = iso(now - timedelta(days=1))
        row = conn.execute(
            "SELECT sum(CASE WHEN attempts >= ? AND created_at >= ? THEN 1 ELSE 0 END) AS failed,"
            " sum(CASE WHEN attempts < ? AND created_at <= ? THEN 1 ELSE 0 END) AS late,"
            f" sum(CASE WHEN attempts < ? THEN 1 ELSE 0 END) AS waiting FROM {self.table} WHERE sent_at IS NULL",
            (self.max_attempts, since, self.max_attempts, iso(now - (late_after or timedelta())), self.max_attempts),
        ).fetchone()
        error = conn.execute(
            f"SELECT last_error FROM {self.table} WHERE last_error IS NOT NULL AND created_at >= ?"
            f" ORDER BY {self.order} DESC LIMIT 1",
            (since,),
        ).fetchone()
        found: dict[str, Any] = {"failed": row["failed"] or 0}
        if late_after is not None:
            found["late"] = row["late"] or 0
        return found | {"waiting": row["waiting"] or 0, "last_error": error["last_error"] if error else None}
