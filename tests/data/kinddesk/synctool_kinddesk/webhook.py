"""KindDesk's webhook: ``X-Kind-Signature`` is HMAC-SHA256 of the raw body with the signing secret."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from synctool.errors import ConfigError, InvalidInput, InvalidSignature
from synctool.platforms.webhook import Event, JobSpec, WebhookSecrets, parse_json_object

KEPT_HEADERS: tuple[str, ...] = ("content-type",)


def sign(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    secret = secrets.get("KIND_WEBHOOK_SECRET")
    if not secret:
        raise ConfigError("KIND_WEBHOOK_SECRET", "keyring/environment", "not set")
    if not hmac.compare_digest(sign(secret, body), headers.get("x-kind-signature", "")):
        raise InvalidSignature("invalid signature", "X-Kind-Signature is HMAC-SHA256 of the body")


def parse_webhook(body: bytes) -> Event:
    event = parse_json_object(body)
    gift = event.get("gift")
    if not isinstance(gift, dict) or not gift.get("id"):
        raise InvalidInput("no gift in the body", "KindDesk sends {id, gift: {id, amount, email, ...}}")
    job = JobSpec("kind_gift", str(gift["id"]), external_id=f"kind_{gift['id']}", email=gift.get("email"))
    return Event(str(event.get("id")), "gift.created", job, gift)
