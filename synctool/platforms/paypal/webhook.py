"""PayPal's webhooks: verified by their certificate-based signature (``certs.py``) or, when the operator chooses
``paypal.verification: api``, by PayPal's ``POST /v1/notifications/verify-webhook-signature``; parsed into one job
each (``parse_webhook``).

A delivery is ``{id, event_type, resource_type, resource, create_time, summary}``; the events synced:

- ``PAYMENT.CAPTURE.COMPLETED``: a payment captured (``resource``: a v2 capture): one gift (``capture`` job);
- ``PAYMENT.SALE.COMPLETED``: a subscription's payment (``resource``: a v1 sale with ``billing_agreement_id``): one
  gift coded recurring (``sale`` job);
- ``PAYMENT.CAPTURE.REFUNDED`` / ``PAYMENT.SALE.REFUNDED``: a refund (its capture named by the refund's ``up``
  link, a sale's by ``sale_id``); ``PAYMENT.CAPTURE.REVERSED`` (a reversal) and ``CUSTOMER.DISPUTE.RESOLVED`` with
  the dispute lost (``RESOLVED_BUYER_FAVOUR``) are refunds too, by the refund policy;
- ``BILLING.SUBSCRIPTION.*``: a subscription's life (``plan`` job: recorded as a recurring plan).

Every other event is stored and skipped, saying which."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from synctool.platform import (
    ConfigError,
    Event,
    InvalidInput,
    InvalidSignature,
    JobSpec,
    JsonObject,
    Runtime,
    WebhookSecrets,
    parse_json_object,
    text,
)
from synctool.platforms.paypal import certs
from synctool.platforms.paypal.models import ROLE, external_id

#: the headers kept with a delivery: PayPal's are public (its signature, the certificate's URL), none is a secret
KEPT_HEADERS: tuple[str, ...] = (
    "content-type",
    "paypal-transmission-id",
    "paypal-transmission-time",
    "paypal-transmission-sig",
    "paypal-cert-url",
    "paypal-auth-algo",
)
#: the id PayPal gave synctool's webhook (``webhooks register`` keeps it; or ``paypal.webhook_id``)
WEBHOOK_ID = "PAYPAL_WEBHOOK_ID"
PREFIXES = "PAYPAL_CERT_URL_PREFIXES"
VERIFICATION = "PAYPAL_VERIFICATION"

GIFT_EVENTS = ("PAYMENT.CAPTURE.COMPLETED", "PAYMENT.SALE.COMPLETED")
REFUND_EVENTS = ("PAYMENT.CAPTURE.REFUNDED", "PAYMENT.SALE.REFUNDED", "PAYMENT.CAPTURE.REVERSED", "CUSTOMER.DISPUTE.RESOLVED")
SUBSCRIPTION_EVENTS = (
    "BILLING.SUBSCRIPTION.CREATED",
    "BILLING.SUBSCRIPTION.ACTIVATED",
    "BILLING.SUBSCRIPTION.UPDATED",
    "BILLING.SUBSCRIPTION.RE-ACTIVATED",
    "BILLING.SUBSCRIPTION.SUSPENDED",
    "BILLING.SUBSCRIPTION.CANCELLED",
    "BILLING.SUBSCRIPTION.EXPIRED",
    "BILLING.SUBSCRIPTION.PAYMENT.FAILED",
)
#: a lost dispute: PayPal decided for the buyer (``dispute_outcome.outcome_code``, customer_disputes_v1.json)
LOST = "RESOLVED_BUYER_FAVOUR"


def settings(rt: Runtime) -> dict[str, str | None]:
    """What the receiver checks PayPal's signatures with besides the secrets (``Webhook.settings``, read once)."""
    section = rt.config.section(ROLE)
    prefixes = (*certs.PAYPAL_CERT_PREFIXES, *section.cert_url_prefixes)
    return {PREFIXES: " ".join(prefixes), VERIFICATION: section.verification, WEBHOOK_ID: section.webhook_id}


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    webhook_id = secrets.get(WEBHOOK_ID)
    if not webhook_id:
        raise ConfigError(WEBHOOK_ID, "keyring/environment or paypal.webhook_id", "not set; PayPal's signatures cover it")
    h = certs.headers_of(headers)
    moment = datetime.fromtimestamp(now, UTC) if now is not None else datetime.now(UTC)
    age = abs((moment - certs.transmitted_at(h)).total_seconds())
    if age > secrets.tolerance_s:
        raise InvalidSignature("PAYPAL-TRANSMISSION-TIME is too far from now", f"{int(age)} s; at most {secrets.tolerance_s} s")
    if h.algorithm != certs.ALGORITHM:
        raise InvalidSignature(f"PAYPAL-AUTH-ALGO {h.algorithm[:40]!r} is not {certs.ALGORITHM}")
    prefixes = tuple((secrets.get(PREFIXES) or " ".join(certs.PAYPAL_CERT_PREFIXES)).split())
    if not certs.allowed(h.cert_url, prefixes):
        # never fetched: a delivery may not send synctool to a host the operator did not name
        raise InvalidSignature("PAYPAL-CERT-URL is not one of PayPal's certificates", "refused without fetching it")
    rt = secrets.runtime
    if secrets.get(VERIFICATION) == "api":
        return _verify_by_api(rt, h, webhook_id, body)
    timeout = rt.config.platform_api.timeout_s if rt is not None else 10.0
    leaf = certs.check_chain(certs.chain(h.cert_url, rt, ROLE, timeout), moment)
    certs.verify_rsa(leaf, h.signature, certs.signed_string(h, webhook_id, body))


def _verify_by_api(rt: Runtime | None, h: certs.Headers, webhook_id: str, body: bytes) -> None:
    """PayPal's own check (``POST /v1/notifications/verify-webhook-signature``): one request per delivery."""
    if rt is None:
        raise ConfigError(VERIFICATION, "paypal.verification", "api: PayPal's verification API cannot be called here")
    from synctool.platform import SynctoolError, using

    event = parse_json_object(body)
    try:
        with using(rt, ROLE) as client:
            status = client.verify_signature(
                {
                    "auth_algo": h.algorithm,
                    "cert_url": h.cert_url,
                    "transmission_id": h.transmission_id,
                    "transmission_sig": h.signature,
                    "transmission_time": h.transmission_time,
                    "webhook_id": webhook_id,
                    "webhook_event": event,
                }  # fmt: skip
            )
    except SynctoolError as exc:
        raise ConfigError(VERIFICATION, "PayPal", f"its verification API did not answer: {exc}") from None
    if status != "SUCCESS":
        raise InvalidSignature("invalid signature", f"PayPal's verification API answered {str(status)[:20]}")


def _up(resource: JsonObject) -> str | None:
    """The capture a v2 refund (or reversal) belongs to: its ``up`` link's last segment (payments_payment_v2.json
    ``refund.links``; the refund body itself names no capture id)."""
    for link in resource.get("links") or []:
        if isinstance(link, dict) and link.get("rel") == "up" and isinstance(link.get("href"), str):
            return link["href"].rstrip("/").rsplit("/", 1)[-1] or None
    return None


def _obj(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _money(value: object) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def refund_data(event_type: str, resource: JsonObject) -> JsonObject | None:
    """A refund event's refund in one shape (``models.RefundData``), or None when it takes no money back (a
    dispute PayPal decided for the seller)."""
    if event_type == "CUSTOMER.DISPUTE.RESOLVED":
        outcome = _obj(resource.get("dispute_outcome"))
        if outcome.get("outcome_code") != LOST:
            return None
        disputed = resource.get("disputed_transactions") or [{}]
        first = disputed[0] if isinstance(disputed, list) and disputed and isinstance(disputed[0], dict) else {}
        amount = _money(outcome.get("amount_refunded")) or _money(resource.get("dispute_amount"))
        return {"id": text(resource.get("dispute_id")), "payment_id": text(first.get("seller_transaction_id")),
                "amount": amount, "create_time": resource.get("update_time") or resource.get("create_time"),
                "kind": "dispute"}  # fmt: skip
    if event_type == "PAYMENT.SALE.REFUNDED":
        amount = _obj(resource.get("amount"))
        money = {"currency_code": amount.get("currency"), "value": amount.get("total")}
        return {"id": text(resource.get("id")), "payment_id": text(resource.get("sale_id")), "amount": money,
                "create_time": resource.get("create_time"), "kind": "refund"}  # fmt: skip
    kind = "reversal" if event_type == "PAYMENT.CAPTURE.REVERSED" else "refund"
    return {"id": text(resource.get("id")), "payment_id": _up(resource), "amount": _money(resource.get("amount")),
            "create_time": resource.get("create_time"), "kind": kind}  # fmt: skip


def _amount(resource: JsonObject) -> str | None:
    amount = resource.get("amount")
    if isinstance(amount, dict):
        return text(amount.get("value") or amount.get("total"), 40)
    return None


def parse_webhook(body: bytes) -> Event:
    event = parse_json_object(body)
    event_id, kind = text(event.get("id"), 128), text(event.get("event_type"), 100)
    if not event_id or not kind:
        raise InvalidInput("the event has no id or event_type", "PayPal sends {id, event_type, resource, ...}")
    resource = event.get("resource")
    if not isinstance(resource, dict):
        raise InvalidInput("the event has no resource", f"a PayPal {kind} event carries its resource as an object")
    if kind in GIFT_EVENTS:
        payment_id = text(resource.get("id"), 64)
        if not payment_id:
            raise InvalidInput("the payment has no id", f"a PayPal {kind} event's resource has its id")
        entity = "capture" if kind == "PAYMENT.CAPTURE.COMPLETED" else "sale"
        job = JobSpec(entity, payment_id, external_id=external_id(payment_id), amount=_amount(resource))
        return Event(event_id, kind, job, resource)
    if kind in REFUND_EVENTS:
        data = refund_data(kind, resource)
        if data is None:
            job = JobSpec("dispute", text(resource.get("dispute_id"), 64) or event_id, status="skipped",
                          message="PayPal decided the dispute for the seller: no money taken back")  # fmt: skip
            return Event(event_id, kind, job, resource)
        if not data["id"] or not data["payment_id"]:
            raise InvalidInput("the refund names no payment", f"a PayPal {kind} event names the payment it takes back from")
        value = _obj(data.get("amount")).get("value")
        job = JobSpec("refund", str(data["id"]), external_id=external_id(str(data["payment_id"])), amount=f"-{value}")
        return Event(event_id, kind, job, data)
    if kind in SUBSCRIPTION_EVENTS:
        subscription_id = text(resource.get("id"), 64)
        if not subscription_id:
            raise InvalidInput("the subscription has no id", f"a PayPal {kind} event's resource has its id")
        email = (
            text((resource.get("subscriber") or {}).get("email_address"))
            if isinstance(resource.get("subscriber"), dict)
            else None
        )
        job = JobSpec("plan", subscription_id, email=email)
        return Event(event_id, kind, job, {"event_type": kind, "subscription": resource})
    job = JobSpec("event", event_id, status="skipped", message=f"PayPal {kind}: not an event synctool syncs")
    return Event(event_id, kind, job, None)


def dumps(event: JsonObject) -> bytes:
    return json.dumps(event).encode()
