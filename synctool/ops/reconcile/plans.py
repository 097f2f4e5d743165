"""Reconcile knows plans (issue 53): every donor giving by a plan is in the monthly donors' CRM group, and every
donor whose plans all ended is out of it.

Part of every `synctool reconcile` run, from synctool's ledgers alone (the ``plans`` table and the memberships
synctool wrote, ``crm_group_memberships``): no CRM request. ``reconcile --plans`` also reads each plan donor's
memberships in the CRM (``GET /constituents/{id}/group_memberships``, one request a constituent), which finds a
membership a person ended or removed in the CRM. A donor gives while any of their plans is ``active`` or
``failed`` (the platform retries a failed charge); a ``paused``, ``canceled`` or ``ended`` plan does not.
``--fix`` queues a forced plan job for each difference: it takes the normal path (the plan job starts or ends the
membership, exactly once). A membership synctool wrote that ``--plans`` finds gone from the CRM is first recorded so
in the ledger (``group_memberships.not_in_crm``), so the plan job writes it again.
"""

from __future__ import annotations

from typing import Any, TypedDict

from synctool import mappings, store
from synctool.crm import group_memberships
from synctool.crm.client import CrmClient
from synctool.crm.group_memberships import OPEN, current_in
from synctool.ops.plans import ROLE, known
from synctool.platforms import plans as core
from synctool.queue import jobs
from synctool.runtime import Runtime

#: the statuses in which a plan's donor belongs in the group
GIVING = ("active", "failed")


class PlanDifference(TypedDict):
    """One donor whose group membership differs from their plans, and its fix."""

    status: str  # not_in_group | still_in_group | not_matched
    constituent_id: str | None
    plan_id: str
    donor: str
    reason: str
    fix: str


def _plans_by_donor(conn: store.Connection) -> tuple[dict[str, list[store.Row]], list[store.Row]]:
    """Plans by constituent; and the giving plans with no constituent yet."""
    by_donor: dict[str, list[store.Row]] = {}
    unmatched = []
    for row in conn.execute("SELECT * FROM plans ORDER BY coalesce(started_at, updated_at), plan_id, source"):
        if row["constituent_id"]:
            by_donor.setdefault(str(row["constituent_id"]), []).append(row)
        elif row["status"] in GIVING:
            unmatched.append(row)
    return by_donor, unmatched


def check(conn: store.Connection, rt: Runtime, *, crm: CrmClient | None = None) -> dict[str, Any]:
    """The plan donors' group differences (with ``crm``: also against the CRM's memberships, one read a donor)."""
    from synctool.ops.plans import donor

    mapping = mappings.get(conn, "plans", "*")
    result: dict[str, Any] = {"checked": False, "group_id": None, "items": [], "differences": 0, "crm_requests": 0,
                              "donors": 0, "why": None}  # fmt: skip
    if not known(conn):
        result["why"] = "no platform in use keeps plans"
        return result
    if not mapping or not mapping.get("group_id"):
        result["why"] = "no group mapped (synctool mappings plans set --group ID)"
        return result
    group = int(mapping["group_id"])
    result.update(checked=True, group_id=group)
    ledger = {
        str(r["constituent_id"]): r
        for r in conn.execute("SELECT * FROM crm_group_memberships WHERE group_id = ?", (group,)).fetchall()
    }
    by_donor, unmatched = _plans_by_donor(conn)
    items: list[PlanDifference] = []
    for plan in unmatched:
        items.append(PlanDifference(status="not_matched", constituent_id=None, plan_id=core.ref(plan["source"], plan["plan_id"]), donor=donor(plan),
                                    reason="the plan's donor is not matched to a constituent yet",
                                    fix="a plan job matches the donor and starts the membership"))  # fmt: skip
    for constituent_id, plans in sorted(by_donor.items()):
        giving = [p for p in plans if p["status"] in GIVING]
        row = ledger.get(constituent_id)
        in_ledger = row is not None and row["state"] in OPEN
        in_crm: bool | None = None
        if crm is not None:
            result["crm_requests"] += 1
            found = crm.list_group_memberships(constituent_id)
            in_crm = current_in(found, group) is not None
        plan = giving[0] if giving else plans[-1]
        if giving and (not in_ledger or in_crm is False):
            why = "synctool has not written the membership" if row is None else f"synctool's membership is {row['state']}"
            if in_ledger and in_crm is False:
                why = "synctool wrote the membership, the CRM has no current one (ended or removed there)"
            items.append(PlanDifference(status="not_in_group", constituent_id=constituent_id, plan_id=core.ref(plan["source"], plan["plan_id"]),
                                        donor=donor(plan), reason=f"{plan['status']} plan; {why}",
                                        fix="a forced plan job starts the membership"))  # fmt: skip
        elif not giving and (in_ledger or in_crm):
            state = f"synctool's membership is {row['state']}" if in_ledger and row is not None else "the CRM has a current one"
            items.append(PlanDifference(status="still_in_group", constituent_id=constituent_id, plan_id=core.ref(plan["source"], plan["plan_id"]),
                                        donor=donor(plan), reason=f"no plan gives ({plan['status']}); {state}",
                                        fix="a forced plan job ends the membership"))  # fmt: skip
    result.update(items=items, differences=len(items), donors=len(by_donor))
    return result


def run(
    conn: store.Connection, rt: Runtime, *, read_crm: bool = False, fix: bool = False, client: CrmClient | None = None
) -> dict[str, Any]:
    """The plans' part of a reconcile: ``check`` (with ``read_crm``, through ``client`` or one opened for the active
    environment), then with ``fix`` the jobs queued."""
    if read_crm and known(conn) and mappings.get(conn, "plans", "*"):
        from synctool.ops.reconcile.crm_side import crm_client

        with crm_client(conn, rt, client) as crm:
            found = check(conn, rt, crm=crm)
    else:
        found = check(conn, rt)
    found["fixed"] = fix_plans(conn, rt, found) if fix else []
    return found


def fix_plans(conn: store.Connection, rt: Runtime, found: dict[str, Any]) -> list[dict[str, Any]]:
    """``--fix``: a forced plan job for each difference (its plan as synctool holds it; drain runs the normal path).
    A donor not in the group whom the ledger still calls ``current`` can only be one the CRM read found without a
    current membership (ended or removed there by a person): that is recorded in the ledger with the job, so the
    plan job writes the membership again instead of finding it written. A plan of another role than ``donations`` is
    queued as ``{"held": True}``: its handler applies the plan as synctool holds it (``plans.held``)."""
    from synctool.ops.plans import find

    done = []
    for item in found["items"]:
        row = find(conn, item["plan_id"])
        if row is None:
            continue
        source = str(row["source"])
        body: dict[str, Any] | None = {
            "id": row["plan_id"], "first_name": row["first_name"], "last_name": row["last_name"], "email": row["email"],
            "phone": row["phone"], "amount": row["amount"], "frequency": row["frequency"],
            "status": row["platform_status"] or row["status"], "next_bill_date": row["next_charge"],
            "start_at": row["started_at"],
        }  # fmt: skip
        if source != ROLE:  # another platform's plan: its handler takes the record as synctool holds it (``plans.held``)
            body = None
        with store.atomic(conn):
            if item["status"] == "not_in_group" and item["constituent_id"]:
                group_memberships.not_in_crm(conn, item["constituent_id"], int(found["group_id"]))
            job_id = jobs.enqueue(
                conn, source=source, entity_type="plan", entity_id=row["plan_id"], force=True,
                payload={"plan": body, "origin": "reconcile --fix"} if body else {"held": True, "origin": "reconcile --fix"}, email=row["email"], amount=row["amount"],
                name=" ".join(p for p in (row["first_name"], row["last_name"]) if p) or None,
                max_attempts=rt.config.queue.max_attempts,
            )  # fmt: skip
        done.append({"plan_id": item["plan_id"], "constituent_id": item["constituent_id"], "status": item["status"],
                     "action": "queued", "job_id": job_id})  # fmt: skip
    return done
