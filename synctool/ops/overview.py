"""The overview (`synctool overview`, ``GET /api/overview``, the staff page's first page): the last 24 hours
and 7 days as `synctool stats` counts them, the queue, when cron's commands last ran, the deliveries the
platforms reported failed (as the last `webhooks heal` read them), and what needs a person, among it the
campaigns whose gifts fell to the default coding for want of a mapping (``unmapped_campaigns``).

It reads the database only: opening the page costs no request to the CRM or a platform.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from synctool import platforms
from synctool.queue import log
from synctool.runtime import Runtime


def _last_runs(conn: sqlite3.Connection, rt: Runtime) -> list[dict[str, Any]]:
    from synctool.ops.health import cron_runs

    return [{**run, "age_s": None if run["age_s"] is None else round(run["age_s"])} for run in cron_runs(conn, rt).values()]


#: how far back the overview looks for gifts of campaigns with no mapping
UNMAPPED_DAYS = 30


def unmapped_campaigns(conn: sqlite3.Connection, rt: Runtime) -> list[dict[str, Any]]:
    """The campaigns of a platform coded by campaign type (``Platform.mappings.types``) that received gifts in
    the last ``UNMAPPED_DAYS`` days and have no campaign override, and whose type has no type default: their
    gifts fall to the default coding (``<role>:default``, then the config's). Each with its title and type as
    the platform's campaign cache knows them, its gifts and the last one's time."""
    from datetime import timedelta

    from synctool import mappings, settings, store

    since = store.iso(store.utcnow() - timedelta(days=UNMAPPED_DAYS))
    found = []
    for platform in platforms.in_use(rt.config):
        if not platform.mappings.types:
            continue
        rows = log.gifts_by_campaign(conn, platform.role, since)
        for row in rows:
            key = row["campaign_id"]
            if mappings.get(conn, "campaign_override", key) is not None:
                continue
            cached = settings.cache_get(conn, f"{platform.role}:campaigns", key)
            campaign = cached if isinstance(cached, dict) else {}
            kind = campaign.get("type")
            if kind and mappings.get(conn, "type_default", f"{platform.role}:{kind}") is not None:
                continue
            found.append({"source": platform.role, "campaign_id": key, "campaign": campaign.get("title") or campaign.get("code"),
                          "type": kind, "gifts": row["gifts"], "last_gift_at": row["last_gift_at"]})  # fmt: skip
    return found


def overview(conn: sqlite3.Connection, rt: Runtime) -> dict[str, Any]:
    from synctool.crm import currency, donor_changes, matching
    from synctool.ops.reconcile import differences
    from synctool.ops.syncs import StatsQuery, stats
    from synctool.ops.webhooks import last_heal

    day, week = stats(conn, StatsQuery(window="24h")), stats(conn, StatsQuery(window="7d"))
    backlog, oldest_due = log.backlog(conn, platforms.crm_bound())
    runs = _last_runs(conn, rt)
    heal = last_heal(conn) or {}
    failed_deliveries = [
        {"source": source, **counts, "at": heal.get("at")} for source, counts in sorted((heal.get("sources") or {}).items())
    ]
    reconcile = differences(conn)
    attention = []

    def say(what: str, count: int, text: str, page: str, command: str) -> None:
        attention.append({"what": what, "count": count, "text": text, "page": page, "command": command})

    def needs(what: str, count: int, page: str, command: str) -> None:
        if count:
            say(what, count, f"{count} {what}", page, command)

    needs("failed sync record(s) to retry or resolve", day["failed_unresolved"], "failed", "synctool syncs list --status failed")
    needs("reconcile difference(s) to fix or accept", reconcile["open"], "reconcile", "synctool reconcile last")
    needs("gift(s) held until someone says who the donor is", matching.pending_count(conn), "donors", "synctool donors matches")
    needs("gift(s), refund(s) or deposit(s) held in another currency until someone says what the bank credited",
          currency.pending_count(conn), "failed", "synctool syncs list --status review; synctool jobs release ID --amount ...")  # fmt: skip
    needs("donor change(s) to apply or dismiss", donor_changes.pending_count(conn), "donors", "synctool donors changes")
    refunds = week["refunds"]
    needs(
        "refund(s) flagged for a person (7 days)", refunds.get("flagged") or 0, "syncs", "synctool refunds list --state flagged"
    )
    needs("delivery(ies) the platforms failed and synctool never got", sum(d["failed"] - d["replayed"] for d in failed_deliveries),
          "overview", "synctool webhooks heal")  # fmt: skip
    from synctool.ops import year_end

    statements = year_end.season(conn, rt)
    if statements is not None:
        year = statements["year"]
        if statements["checked_at"] is None:
            what = f"the {year} statements go out in January and no year-end check has run"
            say(what, 1, what, "year-end", f"synctool year-end check {year}")
        else:
            needs(f"year-end blocker(s) in {year}", statements["blockers"] or 0, "year-end", f"synctool year-end check {year}")
    from synctool.platforms import tickets

    for waiting in tickets.waiting(conn):
        name = waiting["campaign"] or waiting["campaign_id"]
        say(f"ticket(s) of {name} wait for an event mapping", waiting["tickets"],
            f"{waiting['tickets']} ticket(s) of {name} wait for an event mapping", "events",
            f"synctool mappings events set {waiting['campaign_id']} --event N")  # fmt: skip
    unmapped = unmapped_campaigns(conn, rt)
    for campaign in unmapped:
        name = campaign["campaign"] or campaign["campaign_id"]
        what = f"gift(s) of {name} fell to the default coding: the campaign has no mapping"
        say(what, campaign["gifts"], f"{campaign['gifts']} {what}", "mappings",
            f"synctool mappings overrides set {campaign['campaign_id']} --fund-id N")  # fmt: skip
    from synctool.ops import outbox

    mail = outbox.problems(conn)
    needs("sign-in e-mail(s) that could not be sent in the last day", mail["failed"], "overview", "synctool doctor")
    for run in runs:
        if run["stale"]:
            ran = f"last ran {run['age_s']} s ago" if run["at"] else "never ran"
            what = f"cron's {run['command']} {ran}"
            say(what, 1, what, "overview", "install crontab.example (synctool doctor says more)")
    return {
        "day": day,
        "week": week,
        "queue": {"queued": backlog, "oldest_due": oldest_due, "oldest_queued_age_s": day["oldest_queued_age_s"]},
        "last_runs": runs,
        "failed_deliveries": failed_deliveries,
        "attention": attention,
        "in_use": [p.role for p in platforms.in_use(rt.config)],
        "year_end": statements,
        "unmapped_campaigns": unmapped,
    }
