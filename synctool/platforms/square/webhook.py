"""Square, the POS platform: webhook verification and parsing (API client: ``client.py``).

Signature: ``x-square-hmacsha256-signature`` = base64(HMAC-SHA256(key, notification_url + raw body)),
where the URL is exactly the one registered with Square (``POS_WEBHOOK_NOTIFICATION_URL``). Webhooks are
summaries; drain fetches the full order. Sales rung up on the POS app announce themselves only with
``payment.*`` events, whose payment carries the ``order_id``. ``refund.created`` / ``refund.updated``
carry a payment's refund; it is applied to the order's gift once its ``status`` is ``COMPLETED``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Optional

from synctool.platform import (
    ConfigError,
    Event,
    InvalidInput,
    InvalidSignature,
    JobSpec,
    JsonObject,
    Lenient,
    Moment,
    Payload,
    PostalAddress,
    Text,
    WebhookSecrets,
    cents_to_dollars,
    parse,
    parse_json_object,
    text,
)

SIGNATURE_HEADER = "x-square-hmacsha256-signature"
KEPT_HEADERS = (
    SIGNATURE_HEADER,
    "content-type",
    "user-agent",
    "square-environment",
    "square-initial-delivery-timestamp",
    "square-retry-number",
    "square-retry-reason",
)


class Money(Payload):
    """Square money: an integer in the currency's smallest unit (cents)."""

    amount: Optional[int] = None
    currency: Optional[str] = None


class NotificationData(Payload):
    id: Optional[Text] = None
    object: Lenient[JsonObject] = {}


class Notification(Payload):
    """A webhook: ``{merchant_id, type, event_id, created_at, data: {type, id, object}}``."""

    event_id: Text
    type: str = ""
    data: NotificationData = NotificationData()


class OrderSummary(Payload):
    order_id: Optional[Text] = None


class PaymentSummary(Payload):
    order_id: Optional[Text] = None
    total_money: Optional[Money] = None
    amount_money: Optional[Money] = None


class PaymentRefund(Payload):
    """``refund.created`` / ``refund.updated``'s ``data.object.refund``: a refund of one payment."""

    id: Text
    status: Optional[str] = None
    amount_money: Optional[Money] = None
    payment_id: Optional[Text] = None
    order_id: Optional[Text] = None
    location_id: Lenient[Optional[str]] = None
    created_at: Lenient[Optional[Moment]] = None
    updated_at: Lenient[Optional[Moment]] = None
    reason: Lenient[Optional[str]] = None
    #: a refund made without its payment (an unlinked return: its return order names no source order)
    unlinked: Optional[bool] = None


class Tender(Payload):
    type: Lenient[Optional[str]] = None
    customer_id: Optional[str] = None


class LineItem(Payload):
    name: Lenient[Optional[str]] = None
    quantity: Lenient[Optional[Text]] = None


class OrderReturn(Payload):
    """One of a return order's ``returns``: what it gives back of the sale ``source_order_id``."""

    source_order_id: Optional[Text] = None


class Order(Payload):
    """The full order (``GET /v2/orders/{id}``). Square records every refund as a *return order*, whose
    ``returns[].source_order_id`` names the sale (reference: givebutter-square.md B7)."""

    id: Text
    location_id: Optional[str] = None
    state: Optional[str] = None
    created_at: Lenient[Optional[Moment]] = None
    customer_id: Optional[str] = None
    total_money: Optional[Money] = None
    tenders: list[Tender] = []
    line_items: Lenient[list[LineItem]] = []
    returns: list[OrderReturn] = []

    def sale_ids(self) -> set[str]:
        """The sales this order gives money back for (none for a sale)."""
        return {str(r.source_order_id) for r in self.returns if r.source_order_id}


class CustomerAddress(PostalAddress):
    model_config = PostalAddress.named(
        line_1="address_line_1", line_2="address_line_2", city="locality", state="administrative_district_level_1"
    )


class CustomerPreferences(Payload):
    email_unsubscribed: Lenient[Optional[bool]] = None


class Customer(Payload):
    preferences: Lenient[Optional[CustomerPreferences]] = None
    given_name: Lenient[Optional[str]] = None
    family_name: Lenient[Optional[str]] = None
    email_address: Optional[str] = None
    phone_number: Lenient[Optional[str]] = None
    company_name: Lenient[Optional[str]] = None
    address: Lenient[Optional[CustomerAddress]] = None


def external_id(order_id: str) -> str:
    return f"pos_order_{order_id}"


def signature(key: str, notification_url: str, body: bytes) -> str:
    digest = hmac.new(key.encode("utf-8"), notification_url.encode("utf-8") + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def is_valid_signature(body: bytes, header: str, key: str, notification_url: str) -> bool:
    if not body or not header:
        return False
    return hmac.compare_digest(signature(key, notification_url, body).encode(), header.encode())


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    if not secrets.get("POS_WEBHOOK_SIGNATURE_KEY"):
        raise ConfigError("POS_WEBHOOK_SIGNATURE_KEY", "keyring/environment", "not set; Square deliveries cannot be verified")
    notification_url = secrets.get("POS_WEBHOOK_NOTIFICATION_URL")
    if not notification_url:
        raise ConfigError(
            "POS_WEBHOOK_NOTIFICATION_URL",
            "config pos.notification_url / environment",
            "not set; it must be the exact URL registered with Square",
        )
    given = headers.get(SIGNATURE_HEADER) or ""
    if not given:
        raise InvalidSignature(f"missing {SIGNATURE_HEADER} header")
    if not is_valid_signature(body, given, secrets.get("POS_WEBHOOK_SIGNATURE_KEY") or "", notification_url):
        raise InvalidSignature(
            "Square signature does not verify",
            "check POS_WEBHOOK_SIGNATURE_KEY and that POS_WEBHOOK_NOTIFICATION_URL is byte for byte "
            "the URL registered with Square",
        )


def parse_webhook(body: bytes) -> Event:
    envelope = parse_json_object(body)
    if not text(envelope.get("event_id")):
        raise InvalidInput("missing event_id", "a Square notification is {merchant_id, type, event_id, created_at, data}")
    note = parse(Notification, envelope, where="Square notification")
    event_id, event_type, data = note.event_id, note.type, note.data

    if event_type in ("order.created", "order.updated"):
        summary = parse(
            OrderSummary,
            data.object.get("order_created") or data.object.get("order_updated"),
            where="Square notification's data.object",
        )
        order_id = data.id or summary.order_id
        if not order_id:
            raise InvalidInput("missing order id", "data.id carries the order id")
        job = JobSpec("order", order_id, external_id=external_id(order_id))
    elif event_type in ("payment.created", "payment.updated"):
        payment = parse(PaymentSummary, data.object.get("payment"), where="Square notification's data.object.payment")
        money = payment.total_money or payment.amount_money
        if payment.order_id:
            job = JobSpec("order", payment.order_id, external_id=external_id(payment.order_id))
        else:
            job = JobSpec(
                "payment",
                data.id or event_id,
                status="skipped",
                message=f"{event_type}: the payment has no order_id, so there is no order to sync",
            )
        if money is not None and money.amount is not None:
            job.amount = str(cents_to_dollars(money.amount))
    elif event_type in ("refund.created", "refund.updated"):
        refund = parse(PaymentRefund, data.object.get("refund"), where="Square notification's data.object.refund")
        money = refund.amount_money or Money()
        amount = None if money.amount is None else f"-{cents_to_dollars(money.amount)}"
        if refund.status != "COMPLETED":
            job = JobSpec(
                "order_refund",
                refund.id,
                amount=amount,
                status="skipped",
                message=f"{event_type}: refund {refund.id} is {refund.status or 'in no state'}; it is applied once COMPLETED",
            )
        else:
            job = JobSpec(
                "order_refund",
                refund.id,
                external_id=external_id(refund.order_id) if refund.order_id else None,
                amount=amount,
            )
    else:
        job = JobSpec(
            "event", data.id or event_id, status="skipped", message=f"{event_type or 'untyped event'}: not synced to the CRM"
        )
    return Event(event_id, event_type, job, note)
