"""The donations on Stripe's endpoint (``/webhooks/payments``, signed with ``PAYMENTS_WEBHOOK_SECRET``: the Stripe
account is one). Stripe's own adapter (``platforms/stripe``) verifies and parses every delivery; this platform's
``claim`` (``Platform.claims``) then takes the events of payments the member portal did not make, while
stripe-donations is in use. An organisation without it sees those events skipped, as before.

Claimed (each a job of role ``stripe-donations``; the delivery stays Stripe's, deduplicated on the event id):

- ``charge.succeeded``, ``checkout.session.completed`` / ``async_payment_succeeded`` (mode ``payment``) and
  ``invoice.paid``: the gift (``gift``), keyed by the payment (``stripe_<payment intent>``), so the three events of
  one payment make one gift;
- ``charge.refunded``: its refunds (``refund``, the charge's refunded total); ``charge.dispute.closed``: a lost
  dispute (``dispute_refund``);
- ``customer.subscription.created|updated|deleted`` and ``invoice.payment_failed``: the donor's plan (``plan``).

An object that carries ``metadata.portal_payment_id`` is the portal's and is left to it. Nothing is refused here:
the handler reads the object strictly, so a bad body ends as a failed job in the sync log, never a lost delivery.
"""

from __future__ import annotations

from typing import Any

from synctool.platform import Event, JobSpec, PaymentEvent, text
from synctool.platforms.stripe_donations.models import PORTAL_MARK, external_id, major

GIFT_EVENTS = ("charge.succeeded", "checkout.session.completed", "checkout.session.async_payment_succeeded", "invoice.paid")
REFUND_EVENTS = ("charge.refunded", "charge.dispute.closed")
PLAN_EVENTS = (
    "customer.subscription.created",
    "customer.subscription.updated",
    "customer.subscription.deleted",
    "invoice.payment_failed",
)
#: every event type this platform takes (``webhooks register`` adds them to Stripe's endpoint)
EVENTS = GIFT_EVENTS + REFUND_EVENTS + PLAN_EVENTS


def _money(obj: dict[str, Any], key: str) -> str | None:
    """The amount the sync log shows (the job reads it again, strictly)."""
    value, currency = obj.get(key), obj.get("currency")
    if not isinstance(value, int) or isinstance(value, bool) or not isinstance(currency, str):
        return None
    return str(major(value, currency))


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def subscription_of(invoice: dict[str, Any]) -> str | None:
    """An invoice's subscription: ``subscription`` (API 2020-08-27), or ``parent.subscription_details.subscription``
    (the versions since 2025-03-31)."""
    details = _dict(_dict(invoice.get("parent")).get("subscription_details"))
    return text(invoice.get("subscription")) or text(details.get("subscription"))


def job_of(kind: str, obj: dict[str, Any]) -> JobSpec | None:
    """The job an event of type ``kind`` about ``obj`` (its ``data.object``) asks for, or None (not a donation)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and meta.get(PORTAL_MARK):
        return None  # the portal's payment
    oid = text(obj.get("id")) or "?"
    if kind == "charge.succeeded":
        details = _dict(obj.get("billing_details"))
        email = text(details.get("email")) or text(obj.get("receipt_email"))
        ext = external_id(text(obj.get("payment_intent")) or oid)
        return JobSpec("gift", oid, external_id=ext, email=email, name=text(details.get("name")), amount=_money(obj, "amount"))
    if kind.startswith("checkout.session."):
        if obj.get("mode") != "payment":
            return None  # a subscription's first payment is its invoice's (invoice.paid)
        details = _dict(obj.get("customer_details"))
        pi = text(obj.get("payment_intent"))
        if pi is None:
            return JobSpec("gift", oid, status="skipped", message=f"checkout session {oid} names no payment intent")
        return JobSpec(
            "gift", oid, external_id=external_id(pi), email=text(details.get("email")), amount=_money(obj, "amount_total")
        )
    if kind == "invoice.paid":
        payment = text(obj.get("payment_intent")) or text(obj.get("charge"))
        if payment is None:  # nothing owed, or a newer API version's invoice (its payments listed apart)
            why = (
                "names no charge: its charge's own event (charge.succeeded) makes the gift"
                if obj.get("amount_paid")
                else "was paid without a charge (nothing owed)"
            )
            return JobSpec("gift", oid, status="skipped", message=f"invoice {oid} {why}")
        return JobSpec(
            "gift",
            oid,
            external_id=external_id(payment),
            email=text(obj.get("customer_email")),
            amount=_money(obj, "amount_paid"),
        )
    if kind == "charge.refunded":
        ext = external_id(text(obj.get("payment_intent")) or oid)
        amount = _money(obj, "amount_refunded")
        # one job per refunded total (the poll finds the same one by it)
        return JobSpec("refund", f"{oid}:{obj.get('amount_refunded')}", external_id=ext, amount=f"-{amount}" if amount else None)
    if kind == "charge.dispute.closed":
        if obj.get("status") != "lost":
            return JobSpec(
                "dispute_refund", oid, status="skipped", message=f"dispute {oid} closed {obj.get('status')}: the money stays"
            )
        ext = external_id(text(obj.get("payment_intent")) or text(obj.get("charge")) or oid)
        return JobSpec("dispute_refund", oid, external_id=ext, amount=f"-{_money(obj, 'amount')}")
    if kind.startswith("customer.subscription."):
        return JobSpec("plan", oid)
    if kind == "invoice.payment_failed":
        sub = subscription_of(obj)
        if sub is None:
            return None
        return JobSpec("plan", sub, email=text(obj.get("customer_email")))
    return None


def claim(event: Event) -> Event | None:
    """Stripe's delivery (``event.data``: the ``PaymentEvent`` its adapter parsed) as a donation's job, or None."""
    data = event.data
    if not isinstance(data, PaymentEvent) or data.type not in EVENTS:
        return None
    job = job_of(data.type, data.data.object)
    return None if job is None else Event(event.id, data.type, job, data)
