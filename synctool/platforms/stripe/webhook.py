"""Stripe, the portal's payment processor: webhook verification (``Stripe-Signature``, the ``t=,v1=``
scheme of ``platforms/signing.py``) and parsing. Checkout and payment intent events settle portal
payments; ``charge.refunded`` refunds them (``platforms/portal/refunds.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from synctool.platform import (
    Charge,
    CustomerDetails,
    Event,
    InvalidInput,
    JobSpec,
    PaymentEvent,
    PortalObject,
    WebhookSecrets,
    cents_to_dollars,
    parse,
    parse_json_object,
    sign,
    text,
    verify_signed_delivery,
)

KEPT_HEADERS = ("stripe-signature", "content-type", "user-agent")
__all__ = ["KEPT_HEADERS", "sign", "verify_webhook", "parse_webhook", "PaymentEvent", "PortalObject", "Charge"]
#: a delayed payment method (ACH, bank debits) completes its session ``unpaid``; it settles later with
#: ``async_payment_succeeded`` or ``async_payment_failed``
SYNCED_EVENTS = (
    "checkout.session.completed",
    "checkout.session.async_payment_succeeded",
    "checkout.session.async_payment_failed",
    "payment_intent.succeeded",
)


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    verify_signed_delivery(
        body,
        headers,
        "stripe-signature",
        secrets.get("PAYMENTS_WEBHOOK_SECRET"),
        "PAYMENTS_WEBHOOK_SECRET",
        secrets.tolerance_s,
        now,
    )


def parse_webhook(body: bytes) -> Event:
    envelope = parse_json_object(body)
    if not text(envelope.get("id")):
        raise InvalidInput("missing event id", "a Stripe event has id evt_...")
    event = parse(PaymentEvent, envelope, where="Stripe event")
    if event.type in SYNCED_EVENTS:
        obj = parse(PortalObject, event.data.object, where="Stripe event's data.object")
        details = obj.customer_details or CustomerDetails()
        job = JobSpec(
            "stripe_event",
            event.id,
            target="portal",
            email=text(details.email or obj.customer_email or obj.receipt_email),
            name=text(details.name),
        )
    elif event.type == "charge.refunded":
        charge = parse(Charge, event.data.object, where="Stripe event's data.object")
        job = JobSpec(
            "charge_refund",
            charge.id,
            external_id=charge.metadata.get("portal_payment_id"),
            amount=f"-{cents_to_dollars(charge.amount_refunded)}",
        )
    else:
        job = JobSpec(
            "event",
            text(event.data.object.get("id")) or event.id,
            status="skipped",
            message=f"{event.type or 'untyped event'}: not used by synctool",
        )
    return Event(event.id, event.type, job, event)
