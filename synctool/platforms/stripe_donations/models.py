"""A Stripe account's own payments as synctool reads them (Stripe API version 2020-08-27, the one
``tests/specs/stripe.json`` describes): strict where money is decided (ids, amounts in the currency's smallest unit,
the currency), lenient elsewhere (a bad name or address is left out and the gift goes on).

Which payments are donations: every succeeded charge the member portal did not make. The portal marks what it
makes with ``metadata.portal_payment_id``: its Checkout Sessions always (``platforms/portal/stripe_events.py``),
its PaymentIntents and Charges when its session sets ``payment_intent_data.metadata`` (Stripe copies a
PaymentIntent's metadata onto the charge it makes). A charge is the portal's when it or the Checkout Session that
made it carries ``portal_payment_id`` (the gift's job reads the session, so a portal session that left its
PaymentIntent unmarked is still known).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Optional

from pydantic import Field

from synctool.platform import Lenient, Payload, PostalAddress, Text

ROLE = "stripe-donations"
#: the CRM gift external ids this platform writes: ``stripe_<payment intent id>`` (or ``stripe_<charge id>`` for a
#: charge made without a PaymentIntent)
PREFIX = "stripe_"
#: the metadata key the member portal marks its own Checkout Sessions, PaymentIntents and Charges with
PORTAL_MARK = "portal_payment_id"
#: Stripe's zero-decimal currencies (https://docs.stripe.com/currencies#zero-decimal): amounts are whole units
ZERO_DECIMAL = frozenset("bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf".split())
#: the most a Stripe amount can be (99,999,999 of the smallest unit: https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts)
MAX_AMOUNT = 99_999_999

Currency = str  # three letters, checked by ``Field(pattern=...)`` where used
CURRENCY = Field(pattern=r"^[A-Za-z]{3}$")


def external_id(payment: str) -> str:
    """The CRM gift external id of a payment: its PaymentIntent's id, else its charge's."""
    return f"{PREFIX}{payment}"


def major(amount: int, currency: str) -> Decimal:
    """Stripe's smallest-unit amount in the currency's units (cents -> dollars; a yen is a yen)."""
    if currency.lower() in ZERO_DECIMAL:
        return Decimal(amount)
    return (Decimal(amount) / 100).quantize(Decimal("0.01"))


class Address(PostalAddress):
    model_config = PostalAddress.named(line_1="line1", line_2="line2")


class BillingDetails(Payload):
    name: Lenient[Optional[Text]] = None
    email: Lenient[Optional[str]] = None
    phone: Lenient[Optional[str]] = None
    address: Lenient[Optional[Address]] = None


class BalanceTransaction(Payload):
    """What the charge's money came to: its ``fee`` and ``net`` (smallest unit, in the balance's currency)."""

    id: str = Field(min_length=1)
    amount: int
    fee: int = 0
    net: int
    currency: Currency = CURRENCY
    type: Lenient[Optional[str]] = None
    #: the charge or refund it is for (an id, or the object when expanded)
    source: Lenient[Optional[str]] = None


class PaymentMethodDetails(Payload):
    #: ``card``, ``us_bank_account``, ``link``, ...: the payment mapping key ``stripe-donations:<type>``
    type: Lenient[Optional[str]] = None


class Refund(Payload):
    id: str = Field(min_length=1)
    amount: int = Field(ge=0)
    status: Lenient[Optional[str]] = None
    created: Lenient[Optional[int]] = None


class Refunds(Payload):
    data: list[Refund] = []


class Charge(Payload):
    """A Charge (``charge.succeeded``, ``charge.refunded``, ``GET /v1/charges``)."""

    id: str = Field(min_length=1)
    amount: int = Field(ge=0, le=MAX_AMOUNT)
    amount_refunded: int = Field(0, ge=0, le=MAX_AMOUNT)
    currency: Currency = CURRENCY
    status: str
    created: int
    payment_intent: Optional[str] = None
    #: the invoice it paid (a subscription's charge): its gift is coded recurring
    invoice: Optional[str] = None
    metadata: dict[str, str] = {}
    billing_details: Lenient[Optional[BillingDetails]] = None
    receipt_email: Lenient[Optional[str]] = None
    description: Lenient[Optional[Text]] = None
    customer: Lenient[Optional[str]] = None
    #: the balance transaction: an id, or the object when the request expanded it (fees and net)
    balance_transaction: Lenient[Optional[BalanceTransaction]] = None
    payment_method_details: Lenient[Optional[PaymentMethodDetails]] = None
    refunds: Lenient[Optional[Refunds]] = None
    disputed: Lenient[bool] = False

    @property
    def payment(self) -> str:
        return self.payment_intent or self.id

    @property
    def portal(self) -> bool:
        return bool(self.metadata.get(PORTAL_MARK))


class CustomerDetails(Payload):
    email: Lenient[Optional[str]] = None
    name: Lenient[Optional[Text]] = None
    phone: Lenient[Optional[str]] = None


class Session(Payload):
    """A Checkout Session (Payment Links make them too): what coded the payment."""

    id: str = Field(min_length=1)
    mode: Lenient[Optional[str]] = None
    payment_status: Lenient[Optional[str]] = None
    payment_intent: Optional[str] = None
    payment_link: Lenient[Optional[str]] = None
    subscription: Lenient[Optional[str]] = None
    metadata: dict[str, str] = {}
    customer_details: Lenient[Optional[CustomerDetails]] = None


class Price(Payload):
    id: Lenient[Optional[str]] = None
    product: Lenient[Optional[str]] = None


class LineItem(Payload):
    price: Lenient[Optional[Price]] = None
    #: the product's name as the line shows it
    description: Lenient[Optional[Text]] = None


class Invoice(Payload):
    """A subscription's invoice (``invoice.paid``, ``invoice.payment_failed``)."""

    id: str = Field(min_length=1)
    subscription: Optional[str] = None
    charge: Optional[str] = None
    payment_intent: Optional[str] = None
    amount_paid: int = Field(0, ge=0, le=MAX_AMOUNT)
    amount_due: int = Field(0, ge=0, le=MAX_AMOUNT)
    currency: Currency = CURRENCY
    billing_reason: Lenient[Optional[str]] = None
    customer_email: Lenient[Optional[str]] = None
    customer_name: Lenient[Optional[Text]] = None
    created: Lenient[Optional[int]] = None


class Dispute(Payload):
    """A dispute (``charge.dispute.closed``): ``lost`` takes its amount back, as a refund does."""

    id: str = Field(min_length=1)
    charge: str = Field(min_length=1)
    payment_intent: Optional[str] = None
    amount: int = Field(ge=0, le=MAX_AMOUNT)
    currency: Currency = CURRENCY
    status: str
    created: Lenient[Optional[int]] = None


class Recurring(Payload):
    interval: Lenient[Optional[str]] = None
    interval_count: Lenient[Optional[int]] = None


class PlanPrice(Payload):
    id: Lenient[Optional[str]] = None
    unit_amount: Optional[int] = Field(None, ge=0, le=MAX_AMOUNT)
    currency: Optional[str] = Field(None, pattern=r"^[A-Za-z]{3}$")
    recurring: Lenient[Optional[Recurring]] = None


class SubscriptionItem(Payload):
    price: Optional[PlanPrice] = None
    quantity: Lenient[Optional[int]] = None


class SubscriptionItems(Payload):
    data: list[SubscriptionItem] = []


class Subscription(Payload):
    """A subscription (``customer.subscription.*``): a recurring donor's plan."""

    id: str = Field(min_length=1)
    status: str
    customer: Lenient[Optional[str]] = None
    created: Lenient[Optional[int]] = None
    start_date: Lenient[Optional[int]] = None
    canceled_at: Lenient[Optional[int]] = None
    ended_at: Lenient[Optional[int]] = None
    current_period_end: Lenient[Optional[int]] = None
    items: SubscriptionItems = SubscriptionItems()
    metadata: dict[str, str] = {}


#: Stripe's subscription statuses -> synctool's plan statuses (https://docs.stripe.com/api/subscriptions/object#subscription_object-status)
PLAN_STATUS = {
    "active": "active",
    "trialing": "active",
    "past_due": "failed",
    "unpaid": "failed",
    "incomplete": "failed",
    "incomplete_expired": "canceled",
    "canceled": "canceled",
    "paused": "paused",
}
