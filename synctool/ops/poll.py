"""`synctool poll`: each platform's backup poll (``Platform.poll``), for what its webhooks did not announce.

Each platform in use that polls is polled; one that fails (no credentials, an outage) is reported and the
others' polls run to the end (``ops/per_platform.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool import platforms
from synctool.ops.per_platform import by_source, each, words
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool import store


def poll(
    conn: store.Connection, rt: Runtime, *, source: str | None = None, fresh: bool = False, lookback: str | None = None
) -> dict[str, Any]:
    """Run the backup poll of each platform in use that has one (or of ``source``): one result per source
    with its ``status`` and ``error``, the totals queued and requests spent, and ``failed`` (role -> why)."""
    chosen = platforms.chosen(rt.config, source, lambda p: p.poll)

    def one(platform: platforms.Platform) -> dict[str, Any]:
        assert platform.poll is not None
        return dict(platform.poll(conn, rt, fresh=fresh, lookback=lookback))

    results, failed = each(chosen, one)
    return {
        "sources": by_source(chosen, results, failed),
        "seen": sum(r.get("seen", 0) for r in results.values()),
        "queued": sum(r.get("queued", 0) for r in results.values()),
        "requests": sum(r.get("requests", 0) for r in results.values()),
        "ok": not failed,
        "failed": words(failed),
    }
