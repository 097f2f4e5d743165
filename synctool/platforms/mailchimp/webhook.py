"""Mailchimp, the mailing platform: audience webhooks (API client: ``client.py``).

Audience webhooks are form-encoded with PHP-style bracketed keys (``data[merges][FNAME]``) and carry no
signature; the URL's ``secret`` query parameter is compared in constant time with
``MAILING_WEBHOOK_SECRET`` when that is configured. Mailchimp sends no event id, so the dedup key is
derived from type, fired_at, list id and e-mail.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from typing import Any, Optional
from urllib.parse import parse_qsl

from synctool.platform import Event, InvalidInput, InvalidSignature, JobSpec, Lenient, Payload, WebhookSecrets, parse, text

KEPT_HEADERS = ("content-type", "user-agent")
SYNCED_TYPES = ("unsubscribe", "cleaned")
KNOWN_TYPES = SYNCED_TYPES + ("subscribe", "profile", "upemail", "campaign")
_KEY = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")


class Merges(Payload):
    FNAME: Lenient[Optional[str]] = None
    LNAME: Lenient[Optional[str]] = None


class EventData(Payload):
    list_id: Optional[str] = None
    email: Optional[str] = None
    reason: Lenient[Optional[str]] = None
    action: Lenient[Optional[str]] = None
    merges: Lenient[Merges] = Merges()


class AudienceEvent(Payload):
    """An audience webhook, decoded from its form fields (``type``, ``fired_at``, ``data[...]``)."""

    type: str = ""
    fired_at: Optional[str] = None
    data: EventData = EventData()

    @property
    def name(self) -> str | None:
        return " ".join(p for p in (self.data.merges.FNAME, self.data.merges.LNAME) if p) or None


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    given = query.get("secret", "")
    if not given:
        raise InvalidSignature("missing secret query parameter", "register the webhook URL with ?secret=<MAILING_WEBHOOK_SECRET>")
    if not hmac.compare_digest(given.encode(), (secrets.get("MAILING_WEBHOOK_SECRET") or "").encode()):
        raise InvalidSignature("secret query parameter does not match MAILING_WEBHOOK_SECRET")


def parse_form(body: bytes) -> dict[str, Any]:
    """Decode ``a[b][c]=v`` pairs into nested dicts."""
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
    except (UnicodeDecodeError, ValueError):
        raise InvalidInput("body is not form-encoded", "Mailchimp posts application/x-www-form-urlencoded fields") from None
    result: dict[str, Any] = {}
    for key, value in pairs:
        match = _KEY.match(key)
        if not match:
            raise InvalidInput("body is not form-encoded", f"malformed field name {key[:60]!r}")
        path = [match.group(1)] + re.findall(r"\[([^\[\]]*)\]", match.group(2))
        node = result
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[path[-1]] = value
    return result


def dedup_key(event: AudienceEvent) -> str:
    return ":".join([event.type, event.fired_at or "", event.data.list_id or "", (event.data.email or "").strip().lower()])


def parse_webhook(body: bytes) -> Event:
    event = parse(AudienceEvent, parse_form(body), where="Mailchimp webhook")
    event_type = text(event.type)
    if not event_type:
        raise InvalidInput("missing type", "a Mailchimp webhook has type, fired_at and data[...] fields")
    email, name = text(event.data.email), event.name
    if event_type in SYNCED_TYPES:
        if not email:
            raise InvalidInput("missing data[email]", f"a {event_type} webhook names the address")
        job = JobSpec(event_type, email.strip().lower(), email=email, name=name)
    else:
        why = "not synced to the CRM" if event_type in KNOWN_TYPES else "unknown Mailchimp event"
        job = JobSpec("event", email or event_type, email=email, name=name, status="skipped", message=f"{event_type}: {why}")
    return Event(dedup_key(event), event_type, job, event)
