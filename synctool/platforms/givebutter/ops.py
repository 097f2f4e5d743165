"""Donation platform operations (spec: /api/donations/campaigns[/refresh]; the recurring plans' backfill)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool.platform import Runtime, settings, using
from synctool.platforms.givebutter.rules import CAMPAIGNS

if TYPE_CHECKING:
    from synctool.platform import Connection, Row


def campaigns(conn: Connection, rt: Runtime, *, refresh: bool = False, client=None) -> list[dict[str, Any]]:
    if refresh:
        with using(rt, "donations", client) as gb:
            found = gb.campaigns()
        settings.cache_replace(conn, CAMPAIGNS, {str(c["id"]): c for c in found})
    return [
        {k: c.get(k) for k in ("id", "code", "title", "type", "status", "goal", "raised")}
        for c in settings.cache_list(conn, CAMPAIGNS)
    ]


def campaign_names(conn: Connection, rt: Runtime) -> dict[str, str]:
    """The ``Mappings.campaigns`` hook: each cached campaign's title (else its code) by id, as the Mappings page lists
    them (``synctool donations campaigns --refresh`` reads them again)."""
    return {
        str(c["id"]): str(c.get("title") or c.get("code") or c["id"])
        for c in settings.cache_list(conn, CAMPAIGNS)
        if isinstance(c, dict) and c.get("id") is not None
    }


def refetch(conn: Connection, rt: Runtime, rows: list[Row]) -> tuple[int, list[str]]:
    """``retry-all --fresh``: each failed transaction job gets the transaction as Givebutter holds it now."""
    import json

    from synctool.platform import SynctoolError, jobs

    refreshed, errors = 0, []
    with using(rt, "donations") as donations:
        for row in rows:
            if row["entity_type"] != "transaction":
                continue
            try:
                txn = donations.transaction(row["entity_id"])
            except SynctoolError as exc:
                errors.append(f"{row['entity_id']}: {exc}")
                continue
            payload = {**(json.loads(row["payload"]) if row["payload"] else {}), "transaction": txn, "fresh": True}
            jobs.set_payload(conn, row["id"], payload)
            refreshed += 1
    return refreshed, errors


def backfill_plans(conn: Connection, rt: Runtime, *, client=None) -> dict[str, Any]:
    """``synctool backfill``'s plans: every recurring plan Givebutter holds (``GET /v1/plans``, every page), a plan job
    for each that synctool's record lacks or that changed (``plan_changes.queue_changed``). Reads the platform only."""
    from synctool.platforms.givebutter import plan_changes

    with using(rt, "donations", client) as donations:
        seen, queued = plan_changes.queue_changed(
            conn, donations.plans(per_page=100), origin="backfill", max_attempts=rt.config.queue.max_attempts
        )
        spent = donations.api.requests_sent
    return {"plans_seen": seen, "plans_queued": queued, "requests": spent}
