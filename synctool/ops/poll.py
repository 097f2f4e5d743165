"""`synctool poll`: each platform's backup poll (``Platform.poll``), for what its webhooks did not announce."""

from __future__ import annotations

import sqlite3
from typing import Any

from synctool import platforms
from synctool.errors import one_of
from synctool.runtime import Runtime


def poll(
    conn: sqlite3.Connection, rt: Runtime, *, source: str | None = None, fresh: bool = False, lookback: str | None = None
) -> dict[str, Any]:
    """Run the backup poll of each platform that has one (or of ``source``): one result per source, and the
    totals queued and requests spent."""
    polling = {p.role: p.poll for p in platforms.registered() if p.poll}
    if source:
        one_of(source, tuple(polling), "source")
    results = {
        role: platforms.load(hook)(conn, rt, fresh=fresh, lookback=lookback)
        for role, hook in polling.items()
        if not source or role == source
    }
    return {
        "sources": results,
        "seen": sum(r.get("seen", 0) for r in results.values()),
        "queued": sum(r.get("queued", 0) for r in results.values()),
        "requests": sum(r.get("requests", 0) for r in results.values()),
    }
