"""Stripe, the portal's payment processor: webhook verification and parsing.

``Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]``; v1 = HMAC-SHA256(secret, ``"<t>." + raw body``) in
hex. Any v1 may match (Stripe sends one per active secret while a secret is rolled); other schemes
(the test-mode ``v0``) are ignored; a timestamp older than the tolerance (300 s) is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from typing import Any, Optional

from synctool.errors import ConfigError, InvalidInput, InvalidSignature
from synctool.inbox import JobSpec, WebhookSecrets, parse_json_object, text
from synctool.validation import Payload, parse

KEPT_HEADERS = ("stripe-signature", "content-type", "user-agent")
#: a delayed payment method (ACH, bank debits) completes its session ``unpaid``; it settles later with
#: ``async_payment_succeeded`` or ``async_payment_failed``
SYNCED_EVENTS = ("checkout.session.completed", "checkout.session.async_payment_succeeded",
                 "checkout.session.async_payment_failed", "payment_intent.succeeded")


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


def parse_signature_header(header: str) -> tuple[int, list[str]]:
    """The timestamp and the v1 signatures of a ``t=...,v1=...`` header; InvalidSignature if malformed."""
    timestamp = None
    signatures = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise InvalidSignature("malformed signature header", "t must be unix seconds") from None
        elif key == "v1":
            signatures.append(value.strip())
    if timestamp is None or not signatures:
        raise InvalidSignature("malformed signature header", "expected t=<unix seconds>,v1=<hex>")
    return timestamp, signatures


def verify_timestamped_hmac(body: bytes, header: str, secret: str, tolerance_s: int, now: float | None) -> None:
    """The scheme shared by Stripe and the portal: HMAC-SHA256 over ``"<t>." + body``, hex, with a tolerance."""
    timestamp, signatures = parse_signature_header(header)
    expected = hmac.new(secret.encode("utf-8"), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected.encode(), sig.encode()) for sig in signatures):
        raise InvalidSignature("signature does not match the payload")
    now = time.time() if now is None else now
    if timestamp < now - tolerance_s:
        raise InvalidSignature("signature timestamp is outside the tolerance", f"older than {tolerance_s} s")


def sign(body: bytes, secret: str, timestamp: int | None = None) -> str:
    """A ``t=...,v1=...`` header for body (for the demo and tests)."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signed_delivery(body: bytes, headers: Mapping[str, str], header_name: str, secret: str | None,
                           secret_name: str, tolerance_s: int, now: float | None) -> None:
    """A delivery signed with the ``t=...,v1=...`` scheme in ``header_name`` (lower case), keyed by ``secret``."""
    if not secret:
        raise ConfigError(secret_name, "keyring/environment", "not set; these deliveries cannot be verified")
    header = headers.get(header_name) or ""
    if not header:
        raise InvalidSignature(f"missing {header_name} header")
    verify_timestamped_hmac(body, header, secret, tolerance_s, now)


def verify_webhook(body: bytes, headers: Mapping[str, str], query: Mapping[str, str],
                   secrets: WebhookSecrets, *, now: float | None = None) -> None:
    verify_signed_delivery(body, headers, "stripe-signature", secrets.payments, "PAYMENTS_WEBHOOK_SECRET",
                           secrets.tolerance_s, now)


def parse_webhook(body: bytes) -> tuple[str, str, JobSpec]:
    envelope = parse_json_object(body)
    if not text(envelope.get("id")):
        raise InvalidInput("missing event id", "a Stripe event has id evt_...")
    event = parse(Event, envelope, where="Stripe event")
    if event.type in SYNCED_EVENTS:
        obj = parse(PortalObject, event.data.object, where="Stripe event's data.object")
        details = obj.customer_details or CustomerDetails()
        job = JobSpec("stripe_event", event.id, target="portal",
                      email=text(details.email or obj.customer_email or obj.receipt_email), name=text(details.name))
    else:
        job = JobSpec("event", text(event.data.object.get("id")) or event.id, status="skipped",
                      message=f"{event.type or 'untyped event'}: not used by synctool")
    return event.id, event.type, job
