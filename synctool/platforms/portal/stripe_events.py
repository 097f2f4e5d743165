"""A Stripe event becomes the portal payment's new state (spec: portal-sync.md), in the spec's order: (signature
and de-duplication happened at the receiver) payment state, membership and enrollment outcomes, then jobs. The
portal's ids travel in Stripe ``metadata``: ``portal_payment_id`` (required), ``portal_user_id``,
``portal_membership_id``, ``portal_enrollment_id``, ``portal_payment_type``. A local step (target ``portal``)."""

from __future__ import annotations

from typing import Any

from synctool.platform import Event, Job, Outcome, PaymentEvent, PermanentError, PortalObject, Skip, payload
from synctool.platforms.portal import records as portal_records
from synctool.platforms.portal.pushes import flags, jobs_for


def stripe_event_of(event: Event) -> PaymentEvent:
    """The Stripe event behind a job: the one its delivery was parsed into."""
    if not isinstance(event.data, PaymentEvent):
        raise PermanentError("the job has no Stripe event (its delivery is gone)")
    return event.data


def stripe_event(event: Event, job: Job) -> Outcome:
    stripe = stripe_event_of(event)
    kind = stripe.type
    obj = payload(PortalObject, stripe.data.object, f"the {kind} object")
    meta = obj.metadata
    session = kind.startswith("checkout.session.")
    if session and kind != "checkout.session.async_payment_failed" and obj.payment_status != "paid":
        raise Skip(
            f"checkout session {obj.id} is {obj.payment_status}, not paid; nothing changes yet"
            " (a delayed payment settles with checkout.session.async_payment_succeeded)"
        )
    if kind == "payment_intent.succeeded" and obj.status not in (None, "succeeded"):
        raise Skip(f"payment intent {obj.id} is {obj.status}")
    payment_id = meta.get("portal_payment_id")
    if not payment_id:
        if kind == "payment_intent.succeeded":
            raise Skip(
                f"payment intent {obj.id} carries no metadata.portal_payment_id: a payment intent has "
                "the portal's ids only when the portal's Checkout Session sets payment_intent_data.metadata "
                "(the session's own events carry them); otherwise it is not a portal payment"
            )
        raise Skip(f"{kind} {obj.id} carries no metadata.portal_payment_id: not a portal payment")
    if kind == "checkout.session.async_payment_failed":
        return payment_failed(job, payment_id, obj)
    intent = obj.payment_intent if session else obj.id
    cents = obj.amount_total if session else (obj.amount_received if obj.amount_received is not None else obj.amount)
    with job.unit.gather():
        before = portal_records.find(job.conn, "payment", payment_id)
        if before is None:  # the portal's push has not arrived yet: build the payment from the metadata
            record = payment_from_metadata(payment_id, meta, cents)
        else:
            record = {k: v for k, v in before.items() if k in portal_records.record_models()["payment"].model_fields}
        record.update(status="succeeded", payment_intent_id=intent or record.get("payment_intent_id"))
        if obj.currency:  # the money's currency as the processor took it (crm.currency holds another)
            record["currency"] = obj.currency
        payment = portal_records.upsert(job.conn, "payment", record)
        queued = jobs_for(job.conn, "payment", payment, before, kind)
        outcomes = []
        membership_id = meta.get("portal_membership_id") or payment.get("membership_id")
        membership = portal_records.find(job.conn, "membership", membership_id)
        if membership is not None and membership["status"] != "active":
            updated = portal_records.upsert(job.conn, "membership", {**membership, "status": "active"})
            outcomes.append(f"membership {membership_id} active")
            if not flags(job.conn)["sync_on_payment"]:  # otherwise the payment sync triggers it
                queued += jobs_for(job.conn, "membership", updated, membership, kind)
        enrollment_id = meta.get("portal_enrollment_id") or payment.get("enrollment_id")
        enrollment = portal_records.find(job.conn, "enrollment", enrollment_id)
        if enrollment is not None and enrollment["status"] not in ("paid", "active"):
            updated = portal_records.upsert(job.conn, "enrollment", {**enrollment, "status": "paid"})
            outcomes.append(f"enrollment {enrollment_id} paid")
            queued += jobs_for(job.conn, "enrollment", updated, enrollment, kind)
    return Outcome(
        "succeeded",
        f"payment {payment_id} succeeded" + "".join(f"; {o}" for o in outcomes) + f"; queued {len(queued)} CRM job(s)",
    )


def payment_from_metadata(payment_id: str, meta: dict[str, str], cents: int | None) -> dict[str, Any]:
    """A payment whose own push has not arrived, built from the processor's metadata."""
    if not meta.get("portal_user_id"):
        raise PermanentError(f"payment {payment_id} is unknown and the event has no metadata.portal_user_id")
    return {
        "id": payment_id,
        "user_id": meta["portal_user_id"],
        "type": meta.get("portal_payment_type", "donation"),
        "amount_cents": int(cents or 0),
        "gateway": "stripe",
        "membership_id": meta.get("portal_membership_id"),
        "enrollment_id": meta.get("portal_enrollment_id"),
    }


def payment_failed(job: Job, payment_id: str, session: PortalObject) -> Outcome:
    """A delayed payment that did not settle: the portal payment is marked failed; no gift, no membership."""
    with job.unit.gather():
        before = portal_records.find(job.conn, "payment", payment_id)
        if before is None:
            record = payment_from_metadata(payment_id, session.metadata, session.amount_total)
        elif before["status"] == "succeeded":
            raise PermanentError(
                f"payment {payment_id} already succeeded, but Stripe reports its delayed payment "
                f"failed (session {session.id}): check the CRM gift and the payment in Stripe"
            )
        else:
            record = {k: v for k, v in before.items() if k in portal_records.record_models()["payment"].model_fields}
        record.update(status="failed", payment_intent_id=session.payment_intent or record.get("payment_intent_id"))
        portal_records.upsert(job.conn, "payment", record)
    return Outcome("succeeded", f"payment {payment_id} failed (delayed payment did not settle); no gift")
