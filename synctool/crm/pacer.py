"""The CRM pacer: at most N requests in any window and a minimum gap between requests, held across
every process that shares the database.

Each request reserves its send time in the ``crm_requests`` ledger inside one ``BEGIN IMMEDIATE``
transaction (so drain, poll and operator commands running at once see each other's reservations), then
sleeps until that time. On PostgreSQL, whose transactions lock rows and not the database, the reservation is
alone with the ledger by ``store.exclusive`` (an advisory lock on the account's ledger, every machine's
reservations one after another), and reads the clock once it is. Where there is no gap to keep (``min_interval``
0: pacing off, or a limit by the window alone) and the window is far from full, a reservation is not alone:
it takes its slot now beside the others (``store.exclusive(..., shared=True)``) when the reservations it sees in
the window, plus every transaction that could be reserving at that moment unseen (``store.writers_beside``: each
other connection the server takes), plus itself, stay within ``requests``; otherwise, and now and then to
prune the ledger, it reserves alone as above (which waits for the shared ones to end, so it sees them all). On
SQLite, one writer at a time, every reservation is made alone, as it always was. The slot is the earliest
moment that is at least ``min_interval`` (plus the send jitter) after the last reservation and leaves fewer than
``requests`` reservations in the window ending at it; a small margin absorbs the jitter between sending and the CRM's clock. ``requests`` is
synctool's share of the account's limit (``crm.share_requests``): LGL counts every integration on the
account against the same 300 requests.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from synctool import store

#: a reservation made beside the others leaves the ledger's old rows: one in this many is made alone, and prunes them
PRUNE_EVERY = 100


@dataclass
class Limits:
    #: the requests synctool may use in any window (its share of the account's limit)
    requests: int = 270
    window_s: float = 300.0
    min_interval_s: float = 1.1
    #: the CRM's limit for the whole account (shown, not enforced: other integrations use the rest)
    account_limit: int | None = None
    #: added to the minimum interval between reservations: processes wake from their sleep and send with a
    #: few milliseconds of jitter, and the gap that counts is the one the CRM sees (bench/crm.py measures it)
    send_margin_s: float = 0.02

    @property
    def margin_s(self) -> float:
        """Kept past the window's end: the first request of the window may have reached the CRM late by
        up to the send margin, and the CRM's clock counts from its arrival."""
        return min(self.window_s * 0.01, 1.0) + self.send_margin_s

    @property
    def spacing_s(self) -> float:
        """The gap kept between two reserved send times."""
        return self.min_interval_s + self.send_margin_s if self.min_interval_s > 0 else 0.0


class Pacer:
    def __init__(self, db_path: str | Path, limits: Limits, *, clock=time.time, sleep=time.sleep, connect=None):
        self.db_path = db_path
        #: opens its connection (``Runtime.open_database``: an organisation's schema, the password); else ``db_path``
        self._connect = connect
        self.limits = limits
        self._clock = clock
        self._sleep = sleep
        self._local = threading.local()
        self._reserved = 0  # reservations made: every PRUNE_EVERY-th is made alone (it prunes the ledger)

    def _conn(self) -> store.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect() if self._connect else store.connect(self.db_path, migrate=False)
        return conn

    def _next_slot(self, conn: store.Connection, now: float) -> float:
        """The earliest time at or after ``now`` that keeps the spacing after the last reservation and
        leaves fewer than ``requests`` reservations in the window ending at it."""
        lim = self.limits
        last = conn.execute("SELECT max(at) FROM crm_requests").fetchone()[0]
        slot = now if last is None else max(now, last + lim.spacing_s)
        while True:
            recent = [
                r[0]
                for r in conn.execute(
                    "SELECT at FROM crm_requests WHERE at > ? ORDER BY at", (slot - lim.window_s - lim.margin_s,)
                )
            ]
            if len(recent) < lim.requests:
                return slot
            # wait until the oldest reservation that would break the cap has left the window
            slot = max(slot, recent[len(recent) - lim.requests] + lim.window_s + lim.margin_s)

    def _beside_the_others(self, conn: store.Connection, owner: str) -> float | None:
        """A slot now without waiting on the other reservations (no gap to keep, the window far from full), or None
        when it must be reserved alone: the reservations this one sees in the window, every one it might not see
        (``store.writers_beside``) and itself never exceed ``requests``, in any window holding it."""
        lim = self.limits
        self._reserved += 1
        if lim.spacing_s > 0 or self._reserved % PRUNE_EVERY == 0:
            return None
        beside = store.writers_beside(conn)
        if not beside:  # SQLite: one writer, nothing to gain
            return None
        with store.atomic(conn):
            store.exclusive(conn, "crm_requests", shared=True)  # beside other such reservations, none made alone
            now = self._clock()
            seen = conn.execute("SELECT count(*) FROM crm_requests WHERE at > ?", (now - lim.window_s - lim.margin_s,))
            if seen.fetchone()[0] + beside + 1 > lim.requests:
                return None
            conn.execute("INSERT INTO crm_requests (at, owner) VALUES (?, ?)", (now, owner))
        return now

    def reserve(self, owner: str = "") -> float:
        """Reserve the next slot and return its time (seconds since the epoch)."""
        conn = self._conn()
        slot = self._beside_the_others(conn, owner)
        if slot is not None:
            return slot
        with store.atomic(conn):  # the pacer's own connection: a reservation every process sees at once, in no job's unit
            store.exclusive(conn, "crm_requests")  # PostgreSQL: one reservation at a time, every machine's
            now = self._clock()
            # a reservation is never legitimately more than a window ahead: one further out was made before this
            # machine's clock was set back (NTP, a fixed time zone), and would stall every request until then
            conn.execute("DELETE FROM crm_requests WHERE at > ?", (now + 2 * self.limits.window_s + 60,))
            slot = self._next_slot(conn, now)
            conn.execute("INSERT INTO crm_requests (at, owner) VALUES (?, ?)", (slot, owner))
            conn.execute("DELETE FROM crm_requests WHERE at < ?", (now - 2 * self.limits.window_s - 60,))
        return slot

    def acquire(self, owner: str = "") -> float:
        """Wait for a slot; returns the seconds waited."""
        slot = self.reserve(owner)
        wait = slot - self._clock()
        if wait > 0:
            self._sleep(wait)
        return max(wait, 0.0)

    def budget(self) -> dict:
        """synctool's share and the account's limit, requests used in the current window, those reserved
        ahead, and when the next one may go."""
        lim = self.limits
        conn = self._conn()
        now = self._clock()
        used = conn.execute("SELECT count(*) FROM crm_requests WHERE at > ? AND at <= ?", (now - lim.window_s, now)).fetchone()[0]
        ahead = conn.execute("SELECT count(*) FROM crm_requests WHERE at > ?", (now,)).fetchone()[0]
        return {
            "account_limit": lim.account_limit or lim.requests,
            "limit": lim.requests,
            "window_s": lim.window_s,
            "min_interval_ms": lim.min_interval_s * 1000,
            "used_in_window": used,
            "reserved_ahead": ahead,
            "remaining": max(lim.requests - used - ahead, 0),
            "next_slot_in_s": round(max(self._next_slot(conn, now) - now, 0.0), 3),
        }

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
