"""Givebutter's recurring plans, recorded as every platform's are (``synctool.platform.plans``, the core's ``plans``
and ``plan_events``, source ``donations``): what Givebutter's words and times mean (``record_of``: a ``Plan`` as the
contract's ``PlanRecord``), a charge noted on its plan (``record_charge``) and a plan's charges (``charges``, the
``plan_charges`` hook). The plan job (``plan_job.py``) and the poll's comparison (``plan_changes.py``) call the core
with these. The Plan's fields and what is confirmed of them: tests/data/givebutter_plans/README.md.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from synctool.platform import Person, PlanRecord, Unit, parse_iso, store
from synctool.platform import plans as core
from synctool.platforms.givebutter.webhook import Plan, external_id, plan_moment

if TYPE_CHECKING:
    from synctool.platform import Connection, PlanCharge

#: the role Givebutter's plans are recorded under
SOURCE = "donations"

#: Givebutter's ``status`` words -> synctool's. ``active`` is confirmed by four sources; the others come from one
#: production decoder only (MissionBit): UNCONFIRMED ``paused``, ``cancelled`` (two l), ``ended``, ``past_due``,
#: ``past_due_failed`` (README "status"). ``canceled`` (one l, as the event and ``canceled_at`` spell it) is read too.
PLATFORM_STATUS = {
    "active": "active",
    "paused": "paused",
    "past_due": "failed",
    "past_due_failed": "failed",
    "cancelled": "canceled",
    "canceled": "canceled",
    "ended": "ended",
}


def moment(value: object) -> str | None:
    """A Givebutter time as synctool stores one (``store.iso``: UTC, microseconds, ``Z``: sorts as text in time order)."""
    parsed = parse_iso(plan_moment(value))
    return store.iso(parsed) if parsed is not None else None


def day(value: object) -> str | None:
    """``next_bill_date`` (``2023-12-24 00:00:00``: a date at midnight) as ``YYYY-MM-DD``."""
    given = str(value or "").removeprefix("UTC ").strip()
    return given[:10] if len(given) >= 10 else None


def record_of(found: Plan) -> PlanRecord:
    """The plan in the contract's terms: its status word mapped (an unknown one keeps the record's), its start (else its
    creation), its end (``canceled_at``), its next charge's day, and its ``updated_at`` (UNCONFIRMED field: GB-API only)."""
    return PlanRecord(
        id=found.id,
        person=Person(first_name=found.first_name, last_name=found.last_name, email=found.email, phone=found.phone),
        amount=found.amount,
        frequency=found.frequency,
        status=PLATFORM_STATUS.get((found.status or "").strip().lower()),
        platform_status=found.status,
        started_at=moment(found.start_at) or moment(found.created_at),
        ended_at=moment(found.canceled_at),
        next_charge=day(found.next_bill_date),
        updated_at=moment(found.updated_at),
        contact_id=found.contact_id,
    )


def record_charge(
    work: Unit, plan_id: str, transaction_id: str, amount: Decimal | None, currency: str | None, at: str | None
) -> bool:
    """A charge of the plan (a succeeded transaction with its ``plan_id``), noted once (``plans.record_charge``)."""
    return core.record_charge(work, SOURCE, plan_id, transaction_id, amount, currency, moment(at) or at,
                              external_id=external_id(transaction_id), entity_type="transaction")  # fmt: skip


def charges(conn: Connection, plan_id: str) -> list[PlanCharge]:
    """The plan's charges, oldest first, with the CRM gift each became (the ``plan_charges`` hook)."""
    return core.charges(conn, SOURCE, plan_id)
