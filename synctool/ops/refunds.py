"""Refund operations: the refund ledger listed for a person, and the policy setting (``crm/refunds.py``
applies refunds; each platform reads its own)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal, Optional

from synctool import settings, store
from synctool.crm import refunds
from synctool.errors import InvalidInput
from synctool.runtime import Runtime
from synctool.timeutil import parse_moment
from synctool.validation import Body

STATES = ("applied", "waiting", "pending", "flagged", "skipped")


class PolicyBody(Body):
    """PATCH /api/settings/refund-policy."""

    policy: Literal["adjust", "delete", "flag"]


class RefundsQuery(Body):
    """GET /api/refunds."""

    since: str = "30d"
    state: Optional[Literal["applied", "waiting", "pending", "flagged", "skipped"]] = None
    source: Optional[str] = None
    limit: int = 200


def refund_policy(conn: store.Connection, rt: Runtime, body: PolicyBody | None = None) -> dict[str, Any]:
    """Show or set what a platform's refund does to its CRM gift."""
    if body is not None:
        refunds.set_policy(conn, body.policy)
    chosen = refunds.policy(conn, rt.config)
    where = "setting" if settings.get(conn, refunds.POLICY_SETTING) in refunds.POLICIES else f"config ({rt.config.source})"
    return {"policy": chosen, "from": where}


def list_refunds(conn: store.Connection, query: RefundsQuery | None = None) -> dict[str, Any]:
    """Each refund since ``query.since``, newest first: source, refund, gift, amount before and after, the
    policy applied, or why it waits, was flagged or was skipped."""
    query = query or RefundsQuery()
    if not 1 <= query.limit <= 1000:
        raise InvalidInput("limit must be between 1 and 1000")
    where = store.Where()
    where.add("created_at >= ?", store.iso(parse_moment(query.since)))
    if query.state:
        where.add("state = ?", query.state)
    if query.source:
        where.add("source = ?", query.source)
    items = [
        dict(r)
        for r in conn.execute(
            "SELECT created_at, source, refund_id, gift_external_id, crm_gift_id, amount, amount_before, amount_after,"
            f" policy, state, reason, job_id, refunded_on FROM refunds {where} ORDER BY created_at DESC LIMIT ?",
            (*where.params, query.limit),
        )
    ]
    return {"since": query.since, "items": items, "totals": totals(conn, where)}


def totals(conn: store.Connection, where: store.Where | None = None) -> dict[str, Any]:
    """Refunds per state, with the dollars applied."""
    where = where or store.Where()
    counts = {s: 0 for s in STATES}
    applied = Decimal("0.00")
    for row in conn.execute(f"SELECT state, amount FROM refunds {where}", where.params):
        counts[row["state"]] = counts.get(row["state"], 0) + 1
        if row["state"] == "applied":
            applied += Decimal(row["amount"])
    return {**counts, "amount_applied": f"{applied:.2f}"}


def since(conn: store.Connection, moment: str) -> dict[str, Any]:
    """Refund totals and the ones needing a person since ``moment`` (ISO): the stats and the daily summary."""
    where = store.Where()
    where.add("created_at >= ?", moment)
    attention = [
        dict(r)
        for r in conn.execute(
            "SELECT source, refund_id, gift_external_id, crm_gift_id, amount, state, reason, job_id FROM refunds"
            " WHERE created_at >= ? AND state IN ('flagged', 'waiting') ORDER BY created_at DESC LIMIT 20",
            (moment,),
        )
    ]
    return {**totals(conn, where), "attention": attention}
