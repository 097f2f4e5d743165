"""Mailchimp, the mailing platform: audience webhooks (API client: ``MailingClient``).

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

from synctool.errors import InvalidInput, InvalidSignature
from synctool.platforms.webhooks import JobSpec, WebhookSecrets, text
from synctool.validation import Payload, parse

KEPT_HEADERS = ("content-type", "user-agent")
SYNCED_TYPES = ("unsubscribe", "cleaned")
KNOWN_TYPES = SYNCED_TYPES + ("subscribe", "profile", "upemail", "campaign")
_KEY = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")


class Merges(Payload):
    FNAME: Optional[str] = None
    LNAME: Optional[str] = None


class EventData(Payload):
    list_id: Optional[str] = None
    email: Optional[str] = None
    reason: Optional[str] = None
    action: Optional[str] = None
    merges: Merges = Merges()


class AudienceEvent(Payload):
    """An audience webhook, decoded from its form fields (``type``, ``fired_at``, ``data[...]``)."""

    type: str = ""
    fired_at: Optional[str] = None
    data: EventData = EventData()

    @property
    def name(self) -> str | None:
        return " ".join(p for p in (self.data.merges.FNAME, self.data.merges.LNAME) if p) or None


def verify_webhook(body: bytes, headers: Mapping[str, str], query: Mapping[str, str],
                   secrets: WebhookSecrets, *, now: float | None = None) -> None:
    if not secrets.mailing:
        return
    given = query.get("secret", "")
    if not given:
        raise InvalidSignature("missing secret query parameter", "register the webhook URL with ?secret=<MAILING_WEBHOOK_SECRET>")
    if not hmac.compare_digest(given.encode(), secrets.mailing.encode()):
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


decode = parse_form


def dedup_key(event: AudienceEvent) -> str:
    return ":".join([event.type, event.fired_at or "", event.data.list_id or "", (event.data.email or "").strip().lower()])


def parse_webhook(body: bytes) -> tuple[str, str, JobSpec]:
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
        job = JobSpec("event", email or event_type, email=email, name=name, status="skipped",
                      message=f"{event_type}: {why}")
    return dedup_key(event), event_type, job


def subscriber_hash(email: str) -> str:
    """Mailchimp's member id: the MD5 hex digest of the lowercased address."""
    import hashlib

    return hashlib.md5(email.strip().lower().encode()).hexdigest()


def base_url_for(api_key: str) -> str:
    """``https://<dc>.api.mailchimp.com/3.0``, the data centre being the key's suffix after the last '-'."""
    _, sep, dc = api_key.rpartition("-")
    if not sep or not dc:
        from synctool.errors import ConfigError

        raise ConfigError("MAILING_API_KEY", "keyring/environment", "expected a key ending in -<data centre>, e.g. ...-us14")
    return f"https://{dc}.api.mailchimp.com/3.0"


def _error_text(body: Any) -> str:
    """Mailchimp errors are problem+json: ``{type, title, status, detail, instance}``."""
    return f"{body.get('title')}: {body.get('detail')}"


class MailingClient:
    """Mailchimp's Marketing API v3: account (root), ping, lists."""

    def __init__(self, base_url: str, api_key: str, **kwargs: Any):
        from synctool.platforms.http import ApiClient

        self.api = ApiClient(base_url, name="Mailchimp", error_text=_error_text, auth=("synctool", api_key), **kwargs)

    def close(self) -> None:
        self.api.close()

    def ping(self) -> dict[str, Any]:
        return self.api.request("GET", "/ping")

    def account(self) -> dict[str, Any]:
        return self.api.request("GET", "/", params={"exclude_fields": "_links"})

    def upsert_member(self, list_id: str, email: str, merge_fields: dict[str, str]) -> dict[str, Any]:
        """Add the address to the audience, or update it (``PUT`` is Mailchimp's upsert). A new member is
        ``subscribed``; an existing one keeps their status, so an unsubscribe is never undone."""
        return self.api.request("PUT", f"/lists/{list_id}/members/{subscriber_hash(email)}",
                                json={"email_address": email.strip(), "status_if_new": "subscribed",
                                      "merge_fields": merge_fields})

    def tag_member(self, list_id: str, email: str, tags: list[str]) -> None:
        self.api.request("POST", f"/lists/{list_id}/members/{subscriber_hash(email)}/tags",
                         json={"tags": [{"name": t, "status": "active"} for t in tags]})

    def lists(self) -> list[dict[str, Any]]:
        lists, offset = [], 0
        while True:
            body = self.api.request("GET", "/lists", params={"count": 1000, "offset": offset})
            lists.extend(body.get("lists") or [])
            offset += 1000
            if offset >= int(body.get("total_items") or 0):
                return lists
