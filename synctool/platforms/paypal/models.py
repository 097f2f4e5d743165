"""PayPal's payloads as synctool reads them: strict where money is decided (ids, amounts, currencies), lenient
elsewhere. Field names are PayPal's own (``github:paypal/paypal-rest-api-specifications``: ``capture-2`` and
``refund`` of ``payments_payment_v2.json``, ``transaction_detail`` of ``reporting_transactions_v1.json``,
``order`` of ``checkout_orders_v2.json``, ``subscription`` of ``billing_subscriptions_v1.json``; the subset is
``tests/specs/paypal.json``).

A donation reaches the handler as one ``Donation``, whatever brought it: a capture's webhook with its order's
payer (``PAYMENT.CAPTURE.COMPLETED``), a subscription's sale with its subscriber (``PAYMENT.SALE.COMPLETED``),
or a row of the Transaction Search API (the poll, reconcile, backfill)."""

from __future__ import annotations

from decimal import Decimal
from typing import Optional

from pydantic import Field

from synctool.platform import Lenient, Moment, Payload, PostalAddress

ROLE = "paypal"
PLATFORM_NAME = "PayPal"


def external_id(transaction_id: str) -> str:
    """The CRM gift external id of a PayPal payment (a capture's or a sale's id, which Transaction Search lists as
    ``transaction_id``): ``paypal_<id>`` (``Platform.external_id_prefixes``)."""
    return f"paypal_{transaction_id}"


class Money(Payload):
    """PayPal's ``money``: ``{currency_code, value}`` (a decimal string). Both strict."""

    currency_code: str = Field(min_length=3, max_length=3)
    value: Decimal


class Name(Payload):
    given_name: Lenient[Optional[str]] = None
    surname: Lenient[Optional[str]] = None


class Address(PostalAddress):
    """PayPal's ``address_portable``: ``address_line_1``, ``admin_area_2`` (the city), ``admin_area_1`` (the
    state), ``postal_code``, ``country_code``."""

    model_config = PostalAddress.named(
        line_1="address_line_1", line_2="address_line_2", city="admin_area_2", state="admin_area_1", country="country_code"
    )


class Payer(Payload):
    """The donor as an order's ``payer`` (or a subscription's ``subscriber``) names them: the e-mail keys the
    person (strict)."""

    email_address: str = Field(min_length=3, max_length=254)
    name: Lenient[Optional[Name]] = None
    address: Lenient[Optional[Address]] = None
    phone: Lenient[Optional[str]] = None


class Donation(Payload):
    """One payment received, in PayPal's words (``_donation`` in ``rules.py`` builds it from what came)."""

    #: the capture's (or the sale's) id: ``transaction_id`` in Transaction Search
    id: str = Field(min_length=1, max_length=64)
    amount: Money
    payer: Payer
    #: ``seller_receivable_breakdown.paypal_fee`` / ``net_amount`` (a sale's ``transaction_fee``; Transaction
    #: Search's ``fee_amount``, negative there)
    fee: Lenient[Optional[Decimal]] = None
    net: Lenient[Optional[Decimal]] = None
    #: the integration's own key (``custom_id``; a sale's ``custom``; Transaction Search's ``custom_field``)
    custom_id: Lenient[Optional[str]] = None
    invoice_id: Lenient[Optional[str]] = None
    #: what was given for: the order's first item's name, else its purchase unit's description (Transaction
    #: Search: ``cart_info.item_details[0].item_name``)
    item: Lenient[Optional[str]] = None
    #: the subscription a sale belongs to (``billing_agreement_id``) and its plan
    subscription_id: Lenient[Optional[str]] = None
    plan_id: Lenient[Optional[str]] = None
    #: a subscription's payment (``T0002`` in Transaction Search, which names no subscription id): coded recurring
    recurring: Lenient[bool] = False
    #: how it was paid: the order's ``payment_source`` key (``paypal``, ``card``, ``venmo``): ``paypal:<source>``
    source: Lenient[str] = "paypal"
    create_time: Lenient[Optional[Moment]] = None
    order_id: Lenient[Optional[str]] = None


class Captured(Payload):
    """What a payment's webhook must carry before its payer is looked up: its id and its money."""

    id: str = Field(min_length=1, max_length=64)
    amount: Money


class RefundData(Payload):
    """A refund, reversal or lost dispute of one payment, as its job carries it."""

    id: str = Field(min_length=1, max_length=128)
    #: the payment it takes money back from (a capture's or sale's id)
    payment_id: str = Field(min_length=1, max_length=64)
    amount: Money
    create_time: Lenient[Optional[Moment]] = None
    #: ``refund`` (PAYMENT.CAPTURE.REFUNDED), ``reversal`` (PAYMENT.CAPTURE.REVERSED), ``dispute`` (lost)
    kind: Lenient[str] = "refund"
