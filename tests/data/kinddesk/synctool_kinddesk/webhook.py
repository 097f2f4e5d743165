"""KindDesk's webhook: ``X-Kind-Signature`` is HMAC-SHA256 of the raw body with the signing secret. Its events:
``gift.created`` (``{id, type, gift: {...}}``), ``gift.refunded`` (``{id, type, refund: {...}}``) and a monthly
donor's ``subscription.created|updated|payment_failed|cancelled`` (``{id, type, subscription: {...}}``)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from synctool.platform import ConfigError, Event, InvalidInput, InvalidSignature, JobSpec, WebhookSecrets, parse_json_object
from synctool_kinddesk.models import external_id

#: the headers kept with a delivery (never one that carries a secret)
KEPT_HEADERS: tuple[str, ...] = ("content-type",)
SECRET = "KIND_WEBHOOK_SECRET"


def sign(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    secret = secrets.get(SECRET)
    if not secret:
        raise ConfigError(SECRET, "keyring/environment", "not set")
    if not hmac.compare_digest(sign(secret, body), headers.get("x-kind-signature", "")):
        raise InvalidSignature("invalid signature", "X-Kind-Signature is HMAC-SHA256 of the body")


def parse_webhook(body: bytes) -> Event:
    event = parse_json_object(body)
    if not event.get("id"):
        raise InvalidInput("the event has no id", "KindDesk sends {id, type, gift | refund}")
    if event.get("type") == "gift.refunded":
        refund = event.get("refund")
        if not isinstance(refund, dict) or not refund.get("id") or not refund.get("gift_id"):
            raise InvalidInput("no refund in the body", "KindDesk sends {id, type: gift.refunded, refund: {id, gift_id, ...}}")
        # a refund job's entity type ends in "refund": it does not count as the job that makes its gift
        job = JobSpec("refund", str(refund["id"]), external_id=external_id(refund["gift_id"]), amount=f"-{refund.get('amount')}")
        return Event(str(event["id"]), "gift.refunded", job, refund)
    if str(event.get("type") or "").startswith("subscription."):
        sub = event.get("subscription")
        if not isinstance(sub, dict) or not sub.get("id"):
            raise InvalidInput("no subscription in the body", "KindDesk sends {id, type, subscription: {id, ...}}")
        job = JobSpec("plan", str(sub["id"]), email=sub.get("email"), amount=str(sub.get("amount")))
        return Event(str(event["id"]), str(event["type"]), job, sub)
    gift = event.get("gift")
    if not isinstance(gift, dict) or not gift.get("id"):
        raise InvalidInput("no gift in the body", "KindDesk sends {id, type: gift.created, gift: {id, amount, email, ...}}")
    job = JobSpec("gift", str(gift["id"]), external_id=external_id(gift["id"]), email=gift.get("email"),
                  amount=str(gift.get("amount")))  # fmt: skip
    return Event(str(event["id"]), "gift.created", job, gift)
