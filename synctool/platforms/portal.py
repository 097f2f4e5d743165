"""The member portal: signed pushes of its records to ``/webhooks/portal``.

``Synctool-Signature: t=<unix>,v1=<hex>``, v1 = HMAC-SHA256(``PORTAL_WEBHOOK_SECRET``, ``"<t>." + raw body``),
300 s tolerance (the same scheme as Stripe). Body: ``{id, type, data}`` with ``id`` unique per push.
"""

from __future__ import annotations

from collections.abc import Mapping

from synctool.errors import ConfigError, InvalidInput, InvalidSignature
from synctool.inbox import JobSpec, WebhookSecrets, parse_json_object, text
from synctool.platforms.stripe import verify_timestamped_hmac

SIGNATURE_HEADER = "synctool-signature"
KEPT_HEADERS = (SIGNATURE_HEADER, "content-type", "user-agent")


def verify_webhook(body: bytes, headers: Mapping[str, str], query: Mapping[str, str],
                   secrets: WebhookSecrets, *, now: float | None = None) -> None:
    if not secrets.portal:
        raise ConfigError("PORTAL_WEBHOOK_SECRET", "keyring/environment", "not set; portal pushes cannot be verified")
    header = headers.get(SIGNATURE_HEADER) or headers.get("Synctool-Signature") or ""
    if not header:
        raise InvalidSignature("missing Synctool-Signature header")
    verify_timestamped_hmac(body, header, secrets.portal, secrets.tolerance_s, now)


def parse_webhook(body: bytes) -> tuple[str, str, JobSpec]:
    push = parse_json_object(body)
    event_id = text(push.get("id"))
    if not event_id:
        raise InvalidInput("missing id", "a portal push is {id, type, data}")
    event_type = text(push.get("type"))
    if not event_type:
        raise InvalidInput("missing type", "a portal push is {id, type, data}")
    data = push.get("data") if isinstance(push.get("data"), dict) else {}
    job = JobSpec("portal_push", event_id, target="portal", email=text(data.get("email")))
    return event_id, event_type, job
