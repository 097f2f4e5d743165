"""Donorbox's recurring plans, recorded as every platform's are (``synctool.platform.plans``: the core's ``plans`` and
``plan_events``, source ``donorbox``): a Donorbox plan (``GET /api/v1/plans``, ``plan.created`` / ``plan.updated``)
read as the contract's ``PlanRecord``, the plan job, a charge (a recurring donation naming its plan) noted on its
plan, and the poll's and backfill's comparison of Donorbox's plans with the record.

Donorbox's README shows one status word, ``active``; the others below are *unconfirmed* (the words its dashboard
uses), and a word not known keeps the record's status. ``plan.updated`` does not say what changed: it is applied as a
polled state is (its kind derived from the status change: a plan now cancelled is a cancellation, followed up)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from synctool.platform import (
    Event,
    Job,
    Outcome,
    Person,
    PlanEvent,
    PlanRecord,
    Runtime,
    SynctoolError,
    payload,
    using,
)
from synctool.platform import plans as core
from synctool.platforms.donorbox.client import DonorboxClient
from synctool.platforms.donorbox.models import NAME, ROLE, Plan, external_id

if TYPE_CHECKING:
    from synctool.platform import Connection

#: Donorbox's plan ``status`` words -> synctool's (``active`` documented; the others *unconfirmed*)
PLATFORM_STATUS = {
    "active": "active",
    "paused": "paused",
    "failed": "failed",
    "past_due": "failed",
    "cancelled": "canceled",
    "canceled": "canceled",
    "completed": "ended",
    "ended": "ended",
}
#: Donorbox's plan ``type`` words -> a frequency in words
FREQUENCY = {"monthly": "monthly", "weekly": "weekly", "quarterly": "quarterly", "annually": "yearly", "yearly": "yearly"}


def record_of(found: Plan) -> PlanRecord:
    """The plan in the contract's terms: its donor, amount, frequency, status (an unknown word keeps the record's),
    its start and its next charge's day."""
    donor = found.donor
    return PlanRecord(
        id=found.id,
        person=Person(first_name=donor.first_name, last_name=donor.last_name, email=donor.email, phone=donor.phone),
        amount=found.amount,
        currency=found.currency,
        frequency=FREQUENCY.get(found.type.lower(), found.type.lower()[:40] or None),
        status=PLATFORM_STATUS.get(found.status.strip().lower()),
        platform_status=found.status[:40],
        started_at=core.moment(found.started_at),
        next_charge=core.day(found.next_donation_date),
    )


def plan(event: Event, job: Job) -> Outcome:
    """A plan job: a ``plan.*`` delivery's, the poll's or backfill's (the plan listed), reconcile --fix's (held)."""
    if event.payload.get("held"):
        return core.apply_held(job, ROLE, platform=NAME)
    data = event.payload.get("plan") or event.data
    if not data:  # queued with no plan: the plan as Donorbox lists it now
        data = _listed(job.client(ROLE, DonorboxClient), str(job.row["entity_id"]), None)
    found = payload(Plan, data, "the Donorbox plan")
    kind = "created" if event.type == "plan.created" else None  # plan.updated names no change: derived, as polled
    happened = PlanEvent(
        id=event.id or str(event.payload.get("event") or f"job:{job.id}"),
        kind=kind,
        origin="webhook" if event.type.startswith("plan.") else str(event.payload.get("origin") or "job"),
    )
    return core.apply(job, ROLE, record_of(found), happened, platform=NAME)


def _listed(client: DonorboxClient, plan_id: str, email: str | None) -> dict[str, Any] | None:
    """The plan as Donorbox lists it (its list has no id filter: the donor's plans, or every plan)."""
    return next((p for p in client.plans(email=email) if str(p.get("id")) == plan_id), None)


def note_charge(job: Job, plan_id: str, donation_id: str, amount: Decimal, currency: str | None, at: str | None) -> None:
    """A recurring donation naming its plan: the plan's charge, noted once (no CRM request)."""
    core.record_charge(job.unit, ROLE, plan_id, donation_id, amount, currency, core.moment(at) or at,
                       external_id=external_id(donation_id), entity_type="donation")  # fmt: skip


def known_from_charge(job: Job, plan_id: str, donation_id: str, constituent_id: str, email: str | None) -> str | None:
    """A charge of a plan synctool has not recorded: the plan read once (the donor's plans) and recorded."""

    def read() -> PlanRecord | str:
        try:
            found = _listed(job.client(ROLE, DonorboxClient), plan_id, email)
            if found is None:
                return f"recurring plan {plan_id} is not in Donorbox's list: read again at its next charge or by the poll"
            return record_of(payload(Plan, found, "the Donorbox plan"))
        except SynctoolError as exc:
            return f"recurring plan {plan_id} not read ({exc}): read again at its next charge or by the poll"

    return core.known_from_charge(job, ROLE, plan_id, donation_id, constituent_id, read)


def queue_changed(conn: Connection, listed: Iterable[dict[str, Any]], *, origin: str, max_attempts: int) -> tuple[int, int]:
    """A plan job for each listed plan that differs from the record and has none waiting; (plans seen, jobs queued)."""
    seen = 0

    def readable() -> Iterator[tuple[PlanRecord, dict[str, Any]]]:
        nonlocal seen
        for item in listed:
            seen += 1
            try:
                yield record_of(payload(Plan, item, "a Donorbox plan")), item
            except SynctoolError:
                continue  # a plan that does not read is left to its webhook's job, which says why

    def name(item: dict[str, Any]) -> str | None:
        donor = item.get("donor")
        return str(donor.get("name") or "")[:200] or None if isinstance(donor, dict) else None

    queued = core.queue_changed(conn, ROLE, readable(), origin=origin, max_attempts=max_attempts, name=name)
    return seen, queued


def backfill_plans(conn: Connection, rt: Runtime) -> dict[str, Any]:
    """``synctool backfill``'s plans: every plan Donorbox lists, a plan job for each the record lacks or that changed."""
    with using(rt, ROLE) as client:
        seen, queued = queue_changed(conn, client.plans(), origin="backfill", max_attempts=rt.config.queue.max_attempts)
        spent = client.api.requests_sent
    return {"plans_seen": seen, "plans_queued": queued, "requests": spent}
