"""The sync rules: a KindDesk gift becomes one CRM gift, coded by the mappings an admin set; a refund lowers
(or deletes, by the refund policy) the gift it refunds. Drain imports this module when it claims its first job
(``Platform.handlers``), which registers the two handlers."""

from __future__ import annotations

from typing import Any

from synctool.platform import Event, Job, Outcome, Person, Skip, gift_date, mappings, payload, refunds
from synctool_kinddesk.models import ROLE, Gift, RefundData, external_id


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
