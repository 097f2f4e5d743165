"""The CRM pacer: at most N requests in any window and a minimum gap between requests, held across
every process that shares the database.

Each request reserves its send time in the ``crm_requests`` ledger inside one ``BEGIN IMMEDIATE``
transaction (so drain, poll and operator commands running at once see each other's reservations), then
sleeps until that time. The slot is the earliest moment that is at least ``min_interval`` after the
last reservation and leaves fewer than ``limit`` reservations in the window ending at it; a small
margin absorbs the jitter between sending and the CRM's clock.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from synctool import store


@dataclass
class Limits:
    requests: int = 300
    window_s: float = 300.0
    min_interval_s: float = 1.1

    @property
    def margin_s(self) -> float:
        return min(self.window_s * 0.01, 1.0)


class Pacer:
    def __init__(self, db_path: str | Path, limits: Limits, *, clock=time.time, sleep=time.sleep):
        self.db_path = db_path
        self.limits = limits
        self._clock = clock
        self._sleep = sleep
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = store.connect(self.db_path, migrate=False)
        return conn

    def reserve(self, owner: str = "") -> float:
        """Reserve the next slot and return its time (seconds since the epoch)."""
        lim = self.limits
        conn = self._conn()
        with store.transaction(conn):
            now = self._clock()
            last = conn.execute("SELECT max(at) FROM crm_requests").fetchone()[0]
            slot = now if last is None else max(now, last + lim.min_interval_s)
            while True:
                recent = [r[0] for r in conn.execute(
                    "SELECT at FROM crm_requests WHERE at > ? ORDER BY at", (slot - lim.window_s - lim.margin_s,))]
                if len(recent) < lim.requests:
                    break
                # wait until the oldest reservation that would break the cap has left the window
                slot = max(slot, recent[len(recent) - lim.requests] + lim.window_s + lim.margin_s)
            conn.execute("INSERT INTO crm_requests (at, owner) VALUES (?, ?)", (slot, owner))
            conn.execute("DELETE FROM crm_requests WHERE at < ?", (now - 2 * lim.window_s - 60,))
        return slot

    def acquire(self, owner: str = "") -> float:
        """Wait for a slot; returns the seconds waited."""
        slot = self.reserve(owner)
        wait = slot - self._clock()
        if wait > 0:
            self._sleep(wait)
        return max(wait, 0.0)

    def budget(self) -> dict:
        """Requests used in the current window, those reserved ahead, and when the next one may go."""
        lim = self.limits
        conn = self._conn()
        now = self._clock()
        used = conn.execute("SELECT count(*) FROM crm_requests WHERE at > ? AND at <= ?",
                            (now - lim.window_s, now)).fetchone()[0]
        ahead = conn.execute("SELECT count(*) FROM crm_requests WHERE at > ?", (now,)).fetchone()[0]
        last = conn.execute("SELECT max(at) FROM crm_requests").fetchone()[0]
        nxt = now if last is None else max(now, last + lim.min_interval_s)
        recent = [r[0] for r in conn.execute("SELECT at FROM crm_requests WHERE at > ? ORDER BY at",
                                             (nxt - lim.window_s - lim.margin_s,))]
        if len(recent) >= lim.requests:
            nxt = max(nxt, recent[len(recent) - lim.requests] + lim.window_s + lim.margin_s)
        return {"limit": lim.requests, "window_s": lim.window_s, "min_interval_ms": lim.min_interval_s * 1000,
                "used_in_window": used, "reserved_ahead": ahead, "remaining": max(lim.requests - used - ahead, 0),
                "next_slot_in_s": round(max(nxt - now, 0.0), 3)}

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
