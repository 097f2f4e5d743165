"""What the payments platform's events carry, as the portal reads them: the one shape the payments adapter
(Stripe's ``webhook.py``) parses a delivery into and the portal's rules act on, so that neither platform
imports the other. Stripe's names: an event ``{id: evt_..., type, data: {object}}``; a Checkout Session or a
PaymentIntent (``PortalObject``); a Charge with its refunds.
"""

from __future__ import annotations

from typing import Optional

from synctool.platforms.webhook import JsonObject
from synctool.validation import Lenient, Payload


class PaymentEventData(Payload):
    object: JsonObject = {}


class PaymentEvent(Payload):
    """``{id: evt_..., type, created, data: {object}}``; ``data.object`` is read as the type's model."""

    id: str
    type: str = ""
    data: PaymentEventData = PaymentEventData()


class CustomerDetails(Payload):
    email: Lenient[Optional[str]] = None
    name: Lenient[Optional[str]] = None


class PortalObject(Payload):
    """What synctool reads of a Checkout Session or a PaymentIntent: its ids, money, state and the
    portal's ids in ``metadata``."""

    id: Optional[str] = None
    metadata: dict[str, str] = {}
    #: a Checkout Session's
    payment_status: Optional[str] = None
    payment_intent: Optional[str] = None
    amount_total: Optional[int] = None
    #: lower-case ISO 4217 (``usd``): the money's currency (``crm.currency``: another than the organisation's is held)
    currency: Optional[str] = None
    #: who paid, as Stripe knows them (the job's label; the portal user in ``metadata`` is the donor)
    customer_email: Lenient[Optional[str]] = None
    customer_details: Lenient[Optional[CustomerDetails]] = None
    #: a PaymentIntent's
    status: Optional[str] = None
    amount: Optional[int] = None
    amount_received: Optional[int] = None
    receipt_email: Lenient[Optional[str]] = None


class ChargeRefund(Payload):
    id: Optional[str] = None
    amount: Optional[int] = None
    status: Optional[str] = None
    created: Lenient[Optional[int]] = None


class ChargeRefunds(Payload):
    data: list[ChargeRefund] = []


class Charge(Payload):
    """``charge.refunded``'s ``data.object``: a Charge. ``amount_refunded`` is the running total in cents;
    ``refunds`` is listed only on older API versions (it is not expanded by default since 2022-11-15)."""

    id: str
    amount: int = 0
    amount_refunded: int = 0
    #: lower-case ISO 4217 (``usd``)
    currency: Optional[str] = None
    refunded: bool = False
    payment_intent: Optional[str] = None
    metadata: dict[str, str] = {}
    created: Lenient[Optional[int]] = None
    refunds: Optional[ChargeRefunds] = None

    def latest_refund(self) -> ChargeRefund | None:
        listed = [r for r in (self.refunds.data if self.refunds else []) if r.status in (None, "succeeded")]
        return max(listed, key=lambda r: r.created or 0) if listed else None
