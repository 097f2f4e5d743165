"""The sync rules: a KindDesk gift becomes one CRM gift, coded by the mappings an admin set; a refund lowers
(or deletes, by the refund policy) the gift it refunds; a subscription is a recurring plan (``plans.apply``: the
monthly donors' group, a failure followed up). Drain imports this module when it claims its first job
(``Platform.handlers``), which registers the handlers."""

from __future__ import annotations

from typing import Any

from synctool.platform import (
    Event,
    Job,
    Outcome,
    Person,
    PlanEvent,
    PlanRecord,
    Skip,
    gift_date,
    mappings,
    payload,
    plans,
    refunds,
)
from synctool_kinddesk.models import ROLE, Gift, RefundData, Subscription, external_id


def coding(conn: Any, gift: Gift, default_fund_id: int | None) -> dict[str, Any]:
    """Fund, campaign, appeal, category and acknowledgement from the mappings: a monthly gift's type default
    (``kind:monthly``) first, then ``kind:default``, then the config's ``default_fund_id``; the payment and gift
    type from ``kind:<method>``."""
    layers = [mappings.get(conn, "type_default", f"{ROLE}:monthly")] if gift.recurring else []
    layers += [mappings.get(conn, "type_default", f"{ROLE}:default"), {"fund_id": default_fund_id}]
    return {**mappings.coding(*layers), **mappings.payment_coding(conn, f"{ROLE}:{gift.method.lower()}")}


def gift_body(job: Job, gift: Gift) -> dict[str, Any]:
    """The CRM gift ``job.make_gift`` writes (LGL's gift fields): keyed by its external id, dated on the
    organisation's calendar (the gift's own time zone, else KindDesk's account's, else ``timezone:``)."""
    section = job.config.section(ROLE)
    return {
        "external_id": external_id(gift.id),
        "received_amount": float(gift.amount),
        "received_date": gift_date(gift.created_at, gift.timezone, section.timezone, job.config.timezone),
        "note": f"KindDesk gift {gift.id}" + (f": {gift.note}" if gift.note else ""),
        **coding(job.conn, gift, section.default_fund_id),
    }


def kind_gift(event: Event, job: Job) -> Outcome:
    gift = payload(Gift, event.payload.get("gift") or event.data, "the KindDesk gift")
    if gift.amount <= 0:
        raise Skip(f"no money (KindDesk gift {gift.id} of {gift.amount})")
    person = Person(gift.first_name, gift.last_name, gift.email)
    if gift.subscription_id:  # a charge of a monthly donor's plan: noted on it, its gift made as any other
        plans.record_charge(job.unit, ROLE, gift.subscription_id, gift.id, gift.amount, gift.currency,
                            gift.created_at, external_id=external_id(gift.id),
                            entity_type="gift")  # fmt: skip
    constituent_id, gift_id, created = job.make_gift(person, gift_body(job, gift), currency=gift.currency)
    said = "gift created" if created else "gift already in the CRM"
    return Outcome(
        "succeeded", said + job.said(), crm_constituent_id=constituent_id, crm_gift_id=gift_id, amount=str(gift.amount)
    )


def read_refund(job: Job, data: RefundData) -> refunds.Refund:
    """The refund in ``crm.refunds``' terms: keyed by its own id (a replayed webhook changes nothing), dated on
    the day it was given where it was given."""
    section = job.config.section(ROLE)
    on = gift_date(data.created_at, data.timezone, section.timezone, job.config.timezone)
    return refunds.Refund(ROLE, "KindDesk", data.id, external_id(data.gift_id), data.amount, on, currency=data.currency)


def kind_refund(event: Event, job: Job) -> Outcome:
    data = payload(RefundData, event.payload.get("refund") or event.data, "the KindDesk refund")
    return refunds.run(job.refund_job(), read_refund(job, data))


#: KindDesk's subscription words -> synctool's plan statuses (another word keeps what synctool holds)
STATUS = {"active": "active", "past_due": "failed", "paused": "paused", "cancelled": "canceled"}
#: its events -> what happened to the plan
EVENT = {"subscription.created": "created", "subscription.updated": "updated",
         "subscription.payment_failed": "failed", "subscription.cancelled": "canceled"}  # fmt: skip


def kind_plan(event: Event, job: Job) -> Outcome:
    """A subscription event: the plan recorded, and the CRM side every platform's plans share."""
    if event.payload.get("held"):  # reconcile --plans --fix: the plan as synctool holds it
        return plans.apply_held(job, ROLE, platform="KindDesk")
    sub = payload(Subscription, event.payload.get("subscription") or event.data, "the KindDesk subscription")
    record = PlanRecord(
        id=sub.id,
        person=Person(sub.first_name, sub.last_name, sub.email),
        amount=sub.amount,
        currency=sub.currency,
        frequency={"month": "monthly", "quarter": "quarterly", "year": "yearly"}.get(sub.interval, sub.interval),
        status=STATUS.get((sub.status or "").lower()),
        platform_status=sub.status,
        started_at=sub.started_at,
        ended_at=sub.cancelled_at,
        next_charge=sub.next_payment_date,
        updated_at=sub.updated_at,
    )
    return plans.apply(job, ROLE, record, PlanEvent(event.id or f"job:{job.id}", EVENT.get(event.type)), platform="KindDesk")
