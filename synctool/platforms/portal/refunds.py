"""Stripe ``charge.refunded`` -> the CRM gifts of the portal payment it refunds (the policy and the
ledger: ``crm/refunds.py``).

The charge's ``metadata.portal_payment_id``, else its ``payment_intent``, leads to the portal payment.
``amount_refunded`` is the charge's running total, so each event applies what that total adds to the
refunds already applied (a replay adds nothing). A cart payment made one gift per product group; its
refund is spread over them in proportion to their amounts, and flagged for a person when that split is
not exact to the cent.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from synctool.platform import (
    Charge,
    Event,
    Job,
    Outcome,
    PermanentError,
    Skip,
    Wait,
    cents_to_dollars,
    gifts,
    payload,
    refunds,
)
from synctool.platforms.portal import PAYMENTS
from synctool.platforms.portal import records as portal_records
from synctool.platforms.portal.payments import gift_groups
from synctool.platforms.portal.stripe_events import stripe_event_of


def portal_payment(job: Job, charge: Charge) -> dict:
    """The portal payment ``charge`` paid for."""
    payment_id = charge.metadata.get("portal_payment_id")
    if not payment_id and charge.payment_intent:
        row = job.conn.execute("SELECT id FROM portal_payments WHERE payment_intent_id = ?", (charge.payment_intent,)).fetchone()
        payment_id = row["id"] if row else None
    found = portal_records.find(job.conn, "payment", payment_id)
    if found is None and charge.metadata.get("portal_payment_id"):
        # a portal payment by its metadata, whose own record has not arrived yet
        if refunds.still_patient(job.refund_job()):
            raise Wait(
                f"charge {charge.id} refunds portal payment {payment_id}, which synctool has not received yet; "
                f"waiting up to {job.config.refunds.wait_for_gift_s:.0f} s for it",
                retry_after=job.config.refunds.recheck_s,
            )
    if found is None:
        raise Skip(
            f"charge {charge.id} is not a known portal payment (metadata.portal_payment_id "
            f"{payment_id or 'absent'}, payment intent {charge.payment_intent or '-'})"
        )
    return found


def shares(job: Job, payment: dict, charge: Charge) -> list[tuple[str, Decimal]]:
    """(gift external id, dollars refunded so far) per gift of the payment: the charge's refunded total
    spread over the gifts in proportion, exactly, or a PermanentError."""
    groups = gift_groups(job.conn, payment)
    if len(groups) == 1:
        return [(payment["id"], cents_to_dollars(charge.amount_refunded))]
    total = sum(cents for _, cents in groups)
    if charge.amount and total != charge.amount:
        raise PermanentError(
            f"needs attention: charge {charge.id} was {cents_to_dollars(charge.amount)}, but cart payment "
            f"{payment['id']} adds up to {cents_to_dollars(total)}; its refund of "
            f"{cents_to_dollars(charge.amount_refunded)} is not split; adjust its gifts in the CRM by hand"
        )
    uneven = [key for key, cents in groups if (charge.amount_refunded * cents) % total]
    if uneven:
        raise PermanentError(
            f"needs attention: the refund of {cents_to_dollars(charge.amount_refunded)} on cart payment "
            f"{payment['id']} ({', '.join(f'{k} {cents_to_dollars(c)}' for k, c in groups)}) cannot be split "
            "over its gifts exactly to the cent; adjust them in the CRM by hand, then `synctool syncs resolve` this record"
        )
    return [(f"{payment['id']}-{key}", cents_to_dollars(charge.amount_refunded * cents // total)) for key, cents in groups]


def charge_refund(event: Event, job: Job) -> Outcome:
    charge = payload(Charge, stripe_event_of(event).data.object, "the refunded charge")
    payment = portal_payment(job, charge)
    latest = charge.latest_refund()
    refund_id = latest.id if latest and latest.id else f"{charge.id} (refunded total {cents_to_dollars(charge.amount_refunded)})"
    moment = latest.created if latest and latest.created else None
    when = datetime.fromtimestamp(moment, UTC).isoformat() if moment else None
    on = gifts.gift_date(when, job.config.timezone)
    done, messages = [], []
    for ext, refunded in shares(job, payment, charge):
        new = refunded - refunds.refunded_so_far(job.conn, ext)
        if new <= 0:
            continue
        refund = refunds.Refund(
            PAYMENTS,
            "Stripe",
            refund_id,
            ext,
            new,
            on,
            key=f"{PAYMENTS}:{charge.id}:{charge.amount_refunded}:{ext}",
            gift_job_external_id=payment["id"],
            currency=charge.currency,
        )
        try:
            messages.append(refunds.apply(job.refund_job(), refund))
        except Skip as skipped:  # this gift's share needs nothing; the others may
            messages.append(str(skipped))
            continue
        done.append(gifts.recorded(job.conn, ext))
    if not done:
        raise Skip(
            "; ".join(messages)
            or f"charge {charge.id}: its refunded total {cents_to_dollars(charge.amount_refunded)} is already applied"
        )
    first = next((d["crm_id"] for d in done if d is not None), None)
    return Outcome("succeeded", "; ".join(messages), crm_gift_id=first, amount=f"-{cents_to_dollars(charge.amount_refunded)}")
