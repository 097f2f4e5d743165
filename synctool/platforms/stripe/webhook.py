"""Stripe, the portal's payment processor: webhook verification (``Stripe-Signature``, the ``t=,v1=``
scheme of ``platforms/signing.py``) and parsing. Checkout and payment intent events settle portal
payments; ``charge.refunded`` refunds them (``platforms/portal/refunds.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from synctool.errors import InvalidInput
from synctool.money import cents_to_dollars
from synctool.platforms import webhook
from synctool.platforms.signing import sign, verify_signed_delivery
from synctool.platforms.webhook import JobSpec, WebhookSecrets, parse_json_object, text
from synctool.validation import Payload, parse

KEPT_HEADERS = ("stripe-signature", "content-type", "user-agent")
__all__ = ["KEPT_HEADERS", "sign", "verify_webhook", "parse_webhook", "Event", "PortalObject", "Charge"]
#: a delayed payment method (ACH, bank debits) completes its session ``unpaid``; it settles later with
#: ``async_payment_succeeded`` or ``async_payment_failed``
SYNCED_EVENTS = (
    "checkout.session.completed",
    "checkout.session.async_payment_succeeded",
    "checkout.session.async_payment_failed",
    "payment_intent.succeeded",
)


class EventData(Payload):
    object: dict[str, Any] = {}


class Event(Payload):
    """``{id: evt_..., type, created, data: {object}}``; ``data.object`` is read as the type's model."""

    id: str
    type: str = ""
    data: EventData = EventData()


class CustomerDetails(Payload):
    email: Optional[str] = None
    name: Optional[str] = None


class PortalObject(Payload):
    """What synctool reads of a Checkout Session or a PaymentIntent: its ids, money, state and the
    portal's ids in ``metadata``."""

    id: Optional[str] = None
    metadata: dict[str, str] = {}
    #: a Checkout Session's
    payment_status: Optional[str] = None
    payment_intent: Optional[str] = None
    amount_total: Optional[int] = None
    customer_email: Optional[str] = None
    customer_details: Optional[CustomerDetails] = None
    #: a PaymentIntent's
    status: Optional[str] = None
    amount: Optional[int] = None
    amount_received: Optional[int] = None
    receipt_email: Optional[str] = None


class ChargeRefund(Payload):
    id: Optional[str] = None
    amount: Optional[int] = None
    status: Optional[str] = None
    created: Optional[int] = None


class ChargeRefunds(Payload):
    data: list[ChargeRefund] = []


class Charge(Payload):
    """``charge.refunded``'s ``data.object``: a Charge. ``amount_refunded`` is the running total in cents;
    ``refunds`` is listed only on older API versions (it is not expanded by default since 2022-11-15)."""

    id: str
    amount: int = 0
    amount_refunded: int = 0
    refunded: bool = False
    payment_intent: Optional[str] = None
    metadata: dict[str, str] = {}
    created: Optional[int] = None
    refunds: Optional[ChargeRefunds] = None

    def latest_refund(self) -> ChargeRefund | None:
        listed = [r for r in (self.refunds.data if self.refunds else []) if r.status in (None, "succeeded")]
        return max(listed, key=lambda r: r.created or 0) if listed else None


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


def parse_webhook(body: bytes) -> webhook.Event:
    envelope = parse_json_object(body)
    if not text(envelope.get("id")):
        raise InvalidInput("missing event id", "a Stripe event has id evt_...")
    event = parse(Event, envelope, where="Stripe event")
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
    return webhook.Event(event.id, event.type, job, event)
