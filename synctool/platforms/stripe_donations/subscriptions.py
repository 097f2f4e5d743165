"""A Stripe subscription in synctool's words (``PlanRecord``): its donor from its customer, one charge's amount and
frequency from its first item's price, its status as synctool's. Used by the plan job (``plans.py``) and by a
charge's gift job for a plan synctool never recorded (``rules.py``)."""

from __future__ import annotations

from datetime import UTC, datetime

from synctool.platform import Person, PlanRecord, SynctoolError, payload
from synctool.platforms.stripe_donations.client import DonationsClient
from synctool.platforms.stripe_donations.models import PLAN_STATUS, Subscription, major

#: Stripe's interval -> the plan's frequency in synctool's words
FREQUENCY = {"day": "daily", "week": "weekly", "month": "monthly", "year": "yearly"}


def _iso(unix: int | None) -> str | None:
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="seconds") if unix else None


def person_of(client: DonationsClient, customer: str | None) -> Person:
    """The subscription's donor, from its customer (none: an empty person, matched by its charges' gifts)."""
    if not customer:
        return Person()
    found = client.customer(customer)
    name = str(found.get("name") or "").strip()
    first, _, last = name.rpartition(" ")
    return Person(first or None, last or None, found.get("email") or None, phone=found.get("phone") or None)


def record_of(sub: Subscription, person: Person, *, failed: bool = False) -> PlanRecord:
    """The subscription as a ``PlanRecord``: its first item's price is one charge's amount and frequency."""
    price = sub.items.data[0].price if sub.items.data else None
    amount = currency = frequency = None
    if price is not None and price.unit_amount is not None and price.currency:
        amount, currency = major(price.unit_amount, price.currency), price.currency.upper()
    if price is not None and price.recurring is not None and price.recurring.interval:
        count = price.recurring.interval_count or 1
        word = FREQUENCY.get(price.recurring.interval, price.recurring.interval)
        frequency = word if count == 1 else f"every {count} {price.recurring.interval}s"
    status = PLAN_STATUS.get(sub.status)
    if failed and status not in ("canceled", "ended"):
        status = "failed"
    giving = status in ("active", "failed")
    return PlanRecord(
        id=sub.id,
        person=person,
        amount=amount,
        currency=currency,
        frequency=frequency,
        status=status,
        platform_status=sub.status,
        started_at=_iso(sub.start_date or sub.created),
        ended_at=_iso(sub.ended_at or sub.canceled_at),
        next_charge=str(_iso(sub.current_period_end))[:10] if giving and sub.current_period_end else None,
        contact_id=sub.customer,
    )


def read_plan(client: DonationsClient, sub_id: str) -> PlanRecord | str:
    """A plan synctool has not recorded, read once for ``plans.known_from_charge``: the record, or why not."""
    try:
        sub = payload(Subscription, client.subscription(sub_id), "the Stripe subscription")
        return record_of(sub, person_of(client, sub.customer))
    except SynctoolError as exc:
        return f"subscription {sub_id} not read: {exc}"
