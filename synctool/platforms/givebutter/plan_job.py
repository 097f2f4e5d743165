"""The plan job (``("donations", "plan")``, issue 53's "Monthly donors"): a Givebutter plan event read as the
contract's ``PlanRecord`` and ``PlanEvent`` (``plans.py``) and handed to ``synctool.platform.plans.apply``, which
records it and does the CRM side every platform's plans share (the donor found, the monthly-donors group, a contact
report and a chat notice for a failed, paused or canceled plan).

A plan known only from its charges (its ``plan.created`` lost, its start older than the poll's window) is read once by
the charge's gift job (``known_from_charge``: ``GET /v1/plans/{id}``) and recorded, and its donor joins the group by
the same path.
"""

from __future__ import annotations

from synctool.platform import Event, Job, Outcome, PlanEvent, PlanRecord, SynctoolError, payload
from synctool.platform import plans as core
from synctool.platforms.givebutter.client import DonationsClient
from synctool.platforms.givebutter.plans import SOURCE, record_of
from synctool.platforms.givebutter.webhook import PLAN_EVENTS, Plan

#: how the contact reports and chat lines name the platform
PLATFORM = "Givebutter"


def plan(event: Event, job: Job) -> Outcome:
    """A plan event (a ``plan.*`` webhook; a poll's, backfill's or reconcile's job)."""
    data = event.payload.get("plan") or event.data
    if not data:  # a job queued with no plan (reconcile --fix): the plan as Givebutter holds it now
        data = job.client("donations", DonationsClient).plan(job.row["entity_id"])
    found = payload(Plan, data, "the Givebutter plan")
    from_webhook = event.type in PLAN_EVENTS
    happened = PlanEvent(
        id=event.id or str(event.payload.get("event") or f"job:{job.id}"),
        kind=event.type.removeprefix("plan.") if from_webhook else None,
        origin="webhook" if from_webhook else str(event.payload.get("origin") or "job"),
    )
    return core.apply(job, SOURCE, record_of(found), happened, platform=PLATFORM)


def known_from_charge(job: Job, plan_id: str, transaction_id: str, constituent_id: str) -> str | None:
    """A charge (its gift made, to ``constituent_id``) of a plan synctool has not recorded: read once and recorded
    (``plans.known_from_charge``)."""
    return core.known_from_charge(job, SOURCE, plan_id, transaction_id, constituent_id, lambda: _read(job, plan_id))


def _read(job: Job, plan_id: str) -> PlanRecord | str:
    """The plan as Givebutter holds it, or why not, in words."""
    try:
        return record_of(payload(Plan, job.client("donations", DonationsClient).plan(plan_id), "the Givebutter plan"))
    except SynctoolError as exc:
        return f"recurring plan {plan_id} not read ({exc}): read again at its next charge or by the poll"
