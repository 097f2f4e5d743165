"""Monthly donors (issue 53): the recurring plans synctool knows, one function per operation, read by `synctool
plans`, the Plans page (``/admin/plans``) and ``/api/plans``.

The plans and their events are every platform's (the core's tables ``plans`` and ``plan_events``, kept by each
platform's plan job through ``synctool.platforms.plans``, each row with its platform's role as ``source``); a plan's
charges come from ``plans.charges`` (the jobs and the gift ledger), its follow-ups from the CRM's contact-report
ledger (``crm_contact_reports``) and its donor's group membership from ``crm_group_memberships``. A plan is named by
its ``ref``: the ``donations`` platform's by its id, another platform's ``<source>:<id>``. Nothing here asks the CRM or the
platform anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Literal, Optional, TypedDict

from pydantic import Field

from synctool import mappings, platforms, store
from synctool.errors import NotFound
from synctool.runtime import Runtime
from synctool.validation import Query

STATUSES = ("active", "paused", "failed", "canceled", "ended")
#: a plan's frequency -> how many of its charges fall in a month (a frequency not listed is shown aside)
PER_MONTH = {
    "monthly": Decimal(1),
    "month": Decimal(1),
    "quarterly": Decimal(1) / Decimal(3),
    "quarter": Decimal(1) / Decimal(3),
    "yearly": Decimal(1) / Decimal(12),
    "annually": Decimal(1) / Decimal(12),
    "annual": Decimal(1) / Decimal(12),
    "year": Decimal(1) / Decimal(12),
    "weekly": Decimal(52) / Decimal(12),
}
#: the platform role plans came from before plans were every platform's (the ``donations`` role's: its plans' bare ids)
ROLE = "donations"
CENT = Decimal("0.01")


class PlansQuery(Query):
    """GET /api/plans (`synctool plans list`)."""

    status: Optional[Literal["active", "paused", "failed", "canceled", "ended"]] = None
    limit: int = Field(500, ge=1, le=10_000)


def known(conn: store.Connection, table: str = "plans") -> bool:
    """Whether the donation platform's plan tables exist (its migration ran)."""
    return store.dialect.has_table(conn, table)


def donor(row: store.Row | Mapping[str, str | None]) -> str:
    """The donor's name as the plan gives it, else their e-mail."""
    name = " ".join(p for p in (row["first_name"], row["last_name"]) if p)
    return name or row["email"] or "(no name)"


def _day(value: str | None) -> str | None:
    return value[:10] if value else None


class PlanRow(TypedDict):
    """A recurring plan as the plans list shows it."""

    plan_id: str
    #: the role of the platform that holds it, and how it is named (``plans show REF``, the Plans page's link)
    source: str
    ref: str
    donor: str
    email: str | None
    constituent_id: str | None
    amount: str | None
    currency: str | None
    frequency: str | None
    status: str
    since: str | None
    last_charge: str | None
    next_charge: str | None
    failures: int | None


class PlanDetail(PlanRow):
    """One plan with its events, charges, follow-ups and its donor's group membership."""

    phone: str | None
    platform_status: str | None
    started_at: str | None
    ended_at: str | None
    last_charge_at: str | None
    last_charge_amount: str | None
    last_failure_at: str | None
    changed: object
    news: object
    updated_at: str | None
    events: list[dict[str, object]]
    charges: list[dict[str, object]]
    follow_ups: list[dict[str, object]]
    membership: dict[str, object] | None


class PlanList(TypedDict):
    items: list[PlanRow]
    counts: dict[str, int]
    status: str | None


class Figures(TypedDict):
    """What a board asks of the monthly donors."""

    currency: str
    monthly_donors: int
    active_plans: int
    per_month: str
    held: dict[str, str]
    unknown_frequency: int


def _ref(source: str, plan_id: str) -> str:
    from synctool.platforms import plans as core

    return core.ref(source, plan_id)


def _row(r: store.Row) -> PlanRow:
    return {
        "plan_id": r["plan_id"],
        "source": r["source"],
        "ref": _ref(r["source"], r["plan_id"]),
        "donor": donor(r),
        "email": r["email"],
        "constituent_id": r["constituent_id"],
        "amount": r["amount"],
        "currency": r["currency"],
        "frequency": r["frequency"],
        "status": r["status"],
        "since": _day(r["started_at"]),
        "last_charge": _day(r["last_charge_at"]),
        "next_charge": r["next_charge"],
        "failures": r["failures"],
    }


def list_plans(conn: store.Connection, query: PlansQuery | None = None) -> PlanList:
    """The plans, newest first, optionally of one status, with the counts by status."""
    query = query or PlansQuery()
    if not known(conn):
        return {"items": [], "counts": dict.fromkeys(STATUSES, 0), "status": query.status}
    where, args = ("WHERE status = ?", [query.status]) if query.status else ("", [])
    rows = conn.execute(
        f"SELECT * FROM plans {where} ORDER BY coalesce(started_at, updated_at) DESC, plan_id, source LIMIT ?",
        [*args, query.limit],
    ).fetchall()
    counts = dict.fromkeys(STATUSES, 0) | dict(conn.execute("SELECT status, count(*) FROM plans GROUP BY status").fetchall())
    return {"items": [_row(r) for r in rows], "counts": counts, "status": query.status}


def find(conn: store.Connection, plan_ref: str) -> store.Row | None:
    """The plan a person names: by its ``ref`` (its id for the ``donations`` role; ``<source>:<id>``), else by a bare id that one
    platform's plan alone has."""
    if not known(conn):
        return None
    source, _, plan_id = plan_ref.partition(":")
    if plan_id and source != ROLE:
        found = conn.execute("SELECT * FROM plans WHERE source = ? AND plan_id = ?", (source, plan_id)).fetchone()
        if found is not None:
            return found
    rows = conn.execute("SELECT * FROM plans WHERE plan_id = ? ORDER BY source LIMIT 2", (plan_ref,)).fetchall()
    bare = [r for r in rows if r["source"] == ROLE]
    return bare[0] if bare else (rows[0] if len(rows) == 1 else None)


def show_plan(conn: store.Connection, rt: Runtime, plan_id: str) -> PlanDetail:
    """One plan (``plan_id``: its ref): its record, its events, its charges and the CRM gifts they became, its
    follow-ups (contact reports) and its donor's group membership. NotFound for a plan synctool does not know."""
    found = find(conn, plan_id)
    if found is None:
        raise NotFound(f"no plan {plan_id}", "synctool plans list names the plans synctool knows")
    source, plan_id = str(found["source"]), str(found["plan_id"])
    events = conn.execute(
        "SELECT id, kind, at, detail, followup FROM plan_events WHERE source = ? AND plan_id = ? ORDER BY at, id",
        (source, plan_id),
    ).fetchall()
    return {
        **_row(found),
        "phone": found["phone"],
        "platform_status": found["platform_status"],
        "started_at": found["started_at"],
        "ended_at": found["ended_at"],
        "last_charge_at": found["last_charge_at"],
        "last_charge_amount": found["last_charge_amount"],
        "last_failure_at": found["last_failure_at"],
        "changed": found["changed"],
        "news": found["news"],
        "updated_at": found["updated_at"],
        "events": [dict(e) for e in events],
        "charges": charges(conn, rt, plan_id, source),
        "follow_ups": follow_ups(conn, _ref(source, plan_id)),
        "membership": membership(conn, found["constituent_id"]),
    }


def charges(conn: store.Connection, rt: Runtime, plan_id: str, source: str = ROLE) -> list[dict[str, object]]:
    """The plan's charges and the CRM gifts they became: as its platform reads them where it has a ``plan_charges``
    hook, else as its gift handler noted them (``plans.record_charge``)."""
    for platform in platforms.in_use(rt.config):
        if platform.role == source and platform.plan_charges is not None:
            return [dict(c) for c in platform.plan_charges(conn, plan_id)]
    from synctool.platforms import plans as core

    return [dict(c) for c in core.charges(conn, source, plan_id)]


def follow_ups(conn: store.Connection, plan_ref: str) -> list[dict[str, object]]:
    """The contact reports written (or waiting) for the plan's events (``plan_ref``: its ref)."""
    from synctool.crm import contact_reports

    return [{k: r[k] for k in r.keys() if k != "body"} for r in contact_reports.for_plan(conn, plan_ref)]


def membership(conn: store.Connection, constituent_id: str | None) -> dict[str, object] | None:
    """The donor's membership of the monthly donors' group, as synctool wrote it (None: none, or no group)."""
    from synctool.crm import group_memberships

    mapping = mappings.get(conn, "plans", "*")
    if not constituent_id or not mapping or not mapping.get("group_id"):
        return None
    row = group_memberships.recorded(conn, constituent_id, mapping["group_id"])
    return dict(row) if row else None


def _money(value: Decimal) -> str:
    return str(value.quantize(CENT))


def figures(conn: store.Connection, rt: Runtime) -> Figures:
    """What a board asks: monthly donors now (distinct donors, by constituent or else e-mail, with an active plan,
    whatever its frequency) and their giving per month (a quarterly plan's amount /3, a yearly one's /12) in the
    organisation's currency; plans in another currency are listed aside as held (never added to it), and so are
    plans of a frequency synctool cannot turn into a month."""
    home = rt.config.organisation.currency
    result: Figures = {"currency": home, "monthly_donors": 0, "active_plans": 0, "per_month": "0.00",
                              "held": {}, "unknown_frequency": 0}  # fmt: skip
    if not known(conn):
        return result
    rows = conn.execute("SELECT constituent_id, email, amount, currency, frequency FROM plans WHERE status = 'active'")
    donors: set[str] = set()
    per_month = {home: Decimal(0)}
    for r in rows:
        result["active_plans"] += 1
        donors.add(f"c:{r['constituent_id']}" if r["constituent_id"] else f"e:{(r['email'] or '').lower()}")
        share = PER_MONTH.get((r["frequency"] or "").strip().lower())
        try:
            amount = Decimal(r["amount"] or "0")
        except InvalidOperation:
            amount = None
        if share is None or amount is None:
            result["unknown_frequency"] += 1
            continue
        currency = (r["currency"] or home).upper()
        per_month[currency] = per_month.get(currency, Decimal(0)) + amount * share
    result["monthly_donors"] = len(donors)
    result["per_month"] = _money(per_month.pop(home))
    result["held"] = {c: _money(v) for c, v in sorted(per_month.items())}
    return result


def failed_recently(conn: store.Connection, days: int = 7) -> int:
    """How many plans failed in the last ``days`` days (the overview's line)."""
    if not known(conn, "plan_events"):
        return 0
    since = store.iso(store.utcnow() - timedelta(days=days))
    return int(
        conn.execute("SELECT count(DISTINCT plan_id) FROM plan_events WHERE kind = 'failed' AND at >= ?", (since,)).fetchone()[0]
    )


class PlanToFollow(TypedDict):
    """A plan that failed, was paused or canceled: the daily summary's line about it."""

    plan_id: str
    kind: str
    at: str
    message: str


def to_follow(conn: store.Connection, since: str, limit: int = 50) -> list[PlanToFollow]:
    """The plans that failed, were paused or canceled since ``since`` (the daily summary's lines): a line each
    event, newest first."""
    if not known(conn, "plan_events"):
        return []
    rows = conn.execute(
        "SELECT e.kind, e.at, e.detail, p.* FROM plan_events e JOIN plans p ON p.source = e.source AND p.plan_id = e.plan_id"
        " WHERE e.kind IN ('failed', 'paused', 'canceled') AND e.at >= ? ORDER BY e.at DESC LIMIT ?",
        (since, limit),
    ).fetchall()
    found: list[PlanToFollow] = []
    for r in rows:
        what = {"failed": "failed to charge", "paused": "paused", "canceled": "canceled"}[r["kind"]]
        gives = " ".join(str(p) for p in (r["amount"], r["frequency"]) if p)
        reach = f" <{r['email']}>" if r["email"] else ""
        message = f"recurring plan {_ref(r['source'], r['plan_id'])} {what}: {donor(r)}{reach}" + (f" ({gives})" if gives else "")
        message += f" on {r['at'][:10]}" + (f", {r['currency']}" if r["currency"] and r["currency"] != "USD" else "")
        if r["kind"] == "failed" and r["failures"]:
            message += f" ({r['failures']} failure(s) since the last charge)"
        found.append({"plan_id": _ref(r["source"], r["plan_id"]), "kind": r["kind"], "at": r["at"], "message": message})
    return found
