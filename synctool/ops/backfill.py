"""`synctool backfill`: bring in the money of the months before synctool was installed.

It pages the platform's history (``platforms/<p>/reconcile.py`` lists a period's money, as for
reconciliation) and queues each item that synctool has never seen, through the normal path: drain then
matches donors and writes gifts exactly as for a webhook, so nothing already synced is written twice.
Before queueing it says what it found and what drain will spend: a gift POST each, a constituent create for
each donor the CRM mirror does not know, and the run's mirror refresh, at synctool's share of the CRM
budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from synctool import platforms, store
from synctool.crm.mirror import normalize_email
from synctool.errors import InvalidInput
from synctool.ops.per_platform import each, requests_by_source, words
from synctool.ops.reconcile import period
from synctool.queue import jobs, log
from synctool.runtime import Runtime


def _known(conn: store.Connection, external_id: str) -> bool:
    """synctool has a job or a gift for it already."""
    return bool(
        log.gift_job(conn, external_id) is not None
        or conn.execute("SELECT 1 FROM crm_writes WHERE key = ? AND kind = 'gift'", (external_id,)).fetchone()
    )


def estimate(conn: store.Connection, rt: Runtime, items: list[Any]) -> dict[str, Any]:
    """What draining ``items`` will cost: CRM requests and time at synctool's share of the budget."""
    seen: set[str] = set()
    new_donors = 0
    for item in items:
        email = normalize_email(item.sync_job.get("email") or "")
        if not email:
            new_donors += 1  # no e-mail to look up (a POS customer is fetched by drain): count a create
            continue
        if email in seen:
            continue
        seen.add(email)
        if not conn.execute("SELECT 1 FROM crm_constituent_emails WHERE normalized = ? LIMIT 1", (email,)).fetchone():
            new_donors += 1
    requests = len(items) + new_donors + (1 if items else 0)
    crm = rt.config.crm
    per_second = min(crm.share_requests / crm.rate_limit_window_s, 1000.0 / max(crm.min_interval_ms, 1.0))
    return {"gifts": len(items), "new_donors": new_donors, "crm_requests": requests, "seconds": round(requests / per_second)}


def _tickets(conn: store.Connection, rt: Runtime, chosen: Any) -> dict[str, Any]:
    """The tickets of mapped event campaigns (``Platform.checkins``), kept so the backfilled orders' jobs write
    their invitations, guests and attendance through the same path as a webhook's."""
    from synctool import mappings
    from synctool.platforms import tickets

    mapped = [m["key"] for m in mappings.all_of(conn, tickets.EVENT)]
    if not mapped:
        return {}
    readers = [p for p in chosen if p.checkins is not None]
    return {p.role: p.checkins(conn, rt, mapped[0]) for p in readers if p.checkins is not None}


def backfill(
    conn: store.Connection,
    rt: Runtime,
    *,
    since: str,
    until: str | None = None,
    source: str | None = None,
    dry_run: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Find the period's money synctool has never seen and, unless ``dry_run``, queue it."""
    if not since:
        raise InvalidInput("--since is required", "the first day to bring in, e.g. 2026-01-01 or 180d")
    first, last = period(since, until)
    chosen = platforms.chosen(rt.config, source, lambda p: p.backfill and p.expected)
    listings, failed = each(chosen, lambda p: platforms.listing(p, conn, rt, first, last))
    platform_requests = {name: spent for name, (_, spent) in listings.items()}
    found = [item for listed, _ in listings.values() for item in listed]
    new = [item for item in found if not _known(conn, item.external_id)]
    cost = estimate(conn, rt, new)
    queued, read, plans = 0, {}, {}
    if not dry_run:
        for n, item in enumerate(new, 1):
            with store.atomic(conn):
                if not _known(conn, item.external_id):  # a webhook may have come in meanwhile
                    spec = {**item.sync_job, "payload": {**item.sync_job.get("payload", {}), "origin": "backfill"}}
                    jobs.enqueue(conn, max_attempts=rt.config.queue.max_attempts, **spec)
                    queued += 1
            if progress:
                progress(n, len(new))
        read = _tickets(conn, rt, chosen)
        plans = {p.role: p.plans(conn, rt) for p in chosen if p.plans is not None}
    return {
        "from": str(first),
        "to": str(last),
        "found": len(found),
        "already_synced": len(found) - len(new),
        "new": len(new),
        "estimate": cost,
        "queued": queued,
        "dry_run": dry_run,
        "platform_requests": platform_requests,
        "sources": requests_by_source(chosen, platform_requests, failed),
        "failed": words(failed),
        **({"tickets": read} if not dry_run and read else {}),
        **({"plans": plans} if not dry_run and plans else {}),
    }
