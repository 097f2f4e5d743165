"""The overview (`synctool overview`, ``GET /api/overview``, the staff page's first page): the last 24 hours
and 7 days as `synctool stats` counts them, the queue, when cron's commands last ran, the deliveries the
platforms reported failed (as the last `webhooks heal` read them), and what needs a person, among it the
campaigns whose gifts fell to the default coding for want of a mapping (``unmapped_campaigns``).

It reads the database only: opening the page costs no request to the CRM or a platform.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from synctool import platforms
from synctool.queue import log
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool import store
    from synctool.ops.year_end import Season


class LastRun(TypedDict):
    """When one of cron's commands last ran, its age in whole seconds, and whether that is too old."""

    command: str
    at: str | None
    age_s: int | None
    stale: bool


class UnmappedCampaign(TypedDict):
    """A campaign whose gifts fell to the default coding for want of a mapping."""

    source: str
    campaign_id: str
    campaign: str | None
    type: str | None
    gifts: int
    last_gift_at: str | None


def _last_runs(conn: store.Connection, rt: Runtime) -> list[LastRun]:
    from synctool.ops.health import cron_runs

    return [
        {**run, "age_s": None if run["age_s"] is None else round(run["age_s"])} for run in cron_runs(conn, rt.config).values()
    ]


#: how far back the overview looks for gifts of campaigns with no mapping
UNMAPPED_DAYS = 30


def unmapped_campaigns(conn: store.Connection, rt: Runtime) -> list[UnmappedCampaign]:
    """The campaigns of a platform coded by campaign type (``Platform.mappings.types``) that received gifts in
    the last ``UNMAPPED_DAYS`` days and have no campaign override, and whose type has no type default: their
    gifts fall to the default coding (``<role>:default``, then the config's). Each with its name (the platform's
    ``Mappings.campaigns``, else its campaign cache's title) and type, its gifts and the last one's time."""
    from datetime import timedelta

    from synctool import mappings, settings, store

    since = store.iso(store.utcnow() - timedelta(days=UNMAPPED_DAYS))
    found: list[UnmappedCampaign] = []
    for platform in platforms.in_use(rt.config):
        if not platform.mappings.types:
            continue
        rows = log.gifts_by_campaign(conn, platform.role, since)
        named = platform.mappings.campaigns(conn, rt) if rows and platform.mappings.campaigns is not None else {}
        for row in rows:
            key = row["campaign_id"]
            if mappings.get(conn, "campaign_override", key) is not None:
                continue
            cached = settings.cache_get(conn, f"{platform.role}:campaigns", key)
            campaign = cached if isinstance(cached, dict) else {}
            kind = campaign.get("type")
            if kind and mappings.get(conn, "type_default", f"{platform.role}:{kind}") is not None:
                continue
            found.append({"source": platform.role, "campaign_id": key, "campaign": named.get(str(key)) or campaign.get("title") or campaign.get("code"),
                          "type": kind, "gifts": row["gifts"], "last_gift_at": row["last_gift_at"]})  # fmt: skip
    return found


class Attention(TypedDict):
    """One thing that needs a person: what, how many, in words, the page it is about and the command."""

    what: str
    count: int
    text: str
    page: str
    command: str


class Queue(TypedDict):
    queued: int
    oldest_due: str | None
    oldest_queued_age_s: float | None


class Overview(TypedDict):
    """What the overview shows (``synctool overview``, ``GET /api/overview``, the staff page's first page)."""

    day: dict[str, Any]
    week: dict[str, Any]
    queue: Queue
    last_runs: list[LastRun]
    failed_deliveries: list[dict[str, object]]
    attention: list[Attention]
    in_use: list[str]
    year_end: Season | None
    unmapped_campaigns: list[UnmappedCampaign]
    plans_failed_7d: int


def overview(conn: store.Connection, rt: Runtime) -> Overview:
    from synctool.ops import plans, year_end
    from synctool.ops.syncs import StatsQuery, stats

    day, week = stats(conn, StatsQuery(window="24h")), stats(conn, StatsQuery(window="7d"))
    backlog, oldest_due = log.backlog(conn, platforms.crm_bound())
    runs = _last_runs(conn, rt)
    failed_deliveries = _failed_deliveries(conn)
    attention = _waiting_for_a_person(conn, day, week, failed_deliveries)
    statements = year_end.season(conn, rt)
    attention += _year_end_needs(statements)
    attention += _waiting_tickets(conn)
    unmapped = unmapped_campaigns(conn, rt)
    attention += _unmapped_needs(unmapped)
    plans_failed = plans.failed_recently(conn, 7)
    attention += _mail_and_cron_needs(conn, plans_failed, runs)
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
        "plans_failed_7d": plans_failed,
    }


def _attention(what: str, count: int, text: str, page: str, command: str) -> Attention:
    return {"what": what, "count": count, "text": text, "page": page, "command": command}


def _counted(what: str, count: int, page: str, command: str) -> list[Attention]:
    """A count that needs a person when it is not nought, said as ``<count> <what>``."""
    return [_attention(what, count, f"{count} {what}", page, command)] if count else []


def _failed_deliveries(conn: store.Connection) -> list[dict[str, object]]:
    """Per platform, the deliveries it reported failed and how many were replayed, as the last heal read them."""
    from synctool.ops.webhooks import last_heal

    heal = last_heal(conn) or {}
    return [{"source": source, **counts, "at": heal.get("at")} for source, counts in sorted((heal.get("sources") or {}).items())]


def _waiting_for_a_person(
    conn: store.Connection, day: dict[str, Any], week: dict[str, Any], failed_deliveries: list[dict[str, Any]]
) -> list[Attention]:
    """Failed records, reconcile differences, held gifts, donor changes, flagged refunds, lost deliveries."""
    from synctool.crm import currency, donor_changes, matching
    from synctool.ops.reconcile import differences

    reconcile = differences(conn)
    return [
        *_counted("failed sync record(s) to retry or resolve", day["failed_unresolved"], "failed", "synctool syncs list --status failed"),
        *_counted("reconcile difference(s) to fix or accept", reconcile["open"], "reconcile", "synctool reconcile last"),
        *_counted("gift(s) held until someone says who the donor is", matching.pending_count(conn), "donors", "synctool donors matches"),
        *_counted("gift(s), refund(s) or deposit(s) held in another currency until someone says what the bank credited",
                  currency.pending_count(conn), "failed", "synctool syncs list --status review; synctool jobs release ID --amount ..."),
        *_counted("donor change(s) to apply or dismiss", donor_changes.pending_count(conn), "donors", "synctool donors changes"),
        *_counted("refund(s) flagged for a person (7 days)", week["refunds"].get("flagged") or 0, "syncs",
                  "synctool refunds list --state flagged"),
        *_counted("delivery(ies) the platforms failed and synctool never got",
                  sum(d["failed"] - d["replayed"] for d in failed_deliveries), "overview", "synctool webhooks heal"),
    ]  # fmt: skip


def _year_end_needs(statements: Season | None) -> list[Attention]:
    """In the statements' season: the check not run yet, or the blockers it found."""
    if statements is None:
        return []
    year = statements["year"]
    if statements["checked_at"] is None:
        what = f"the {year} statements go out in January and no year-end check has run"
        return [_attention(what, 1, what, "year-end", f"synctool year-end check {year}")]
    return _counted(f"year-end blocker(s) in {year}", statements["blockers"] or 0, "year-end", f"synctool year-end check {year}")


def _waiting_tickets(conn: store.Connection) -> list[Attention]:
    """The event campaigns whose tickets wait for an event mapping."""
    from synctool.platforms import tickets

    found = []
    for waiting in tickets.waiting(conn):
        name = waiting["campaign"] or waiting["campaign_id"]
        found.append(_attention(f"ticket(s) of {name} wait for an event mapping", waiting["tickets"],
                           f"{waiting['tickets']} ticket(s) of {name} wait for an event mapping", "events",
                           f"synctool mappings events set {waiting['campaign_id']} --event N"))  # fmt: skip
    return found


def _unmapped_needs(unmapped: list[UnmappedCampaign]) -> list[Attention]:
    """The campaigns whose gifts fell to the default coding."""
    found = []
    for campaign in unmapped:
        name = campaign["campaign"] or campaign["campaign_id"]
        what = f"gift(s) of {name} fell to the default coding: the campaign has no mapping"
        found.append(_attention(what, campaign["gifts"], f"{campaign['gifts']} {what}", "mappings",
                           f"synctool mappings overrides set {campaign['campaign_id']} --fund-id N"))  # fmt: skip
    return found


def _mail_and_cron_needs(conn: store.Connection, plans_failed: int, runs: list[LastRun]) -> list[Attention]:
    """Failed plans, sign-in mail that could not be sent, and cron's commands that stopped running."""
    from synctool.ops import outbox

    found = _counted("plan(s) failed in the last 7 days", plans_failed, "plans", "synctool plans list --status failed")
    mail = outbox.problems(conn)
    found += _counted("sign-in e-mail(s) that could not be sent in the last day", mail["failed"], "overview", "synctool doctor")
    for run in runs:
        if run["stale"]:
            ran = f"last ran {run['age_s']} s ago" if run["at"] else "never ran"
            what = f"cron's {run['command']} {ran}"
            found.append(_attention(what, 1, what, "overview", "install crontab.example (synctool doctor says more)"))
    return found
