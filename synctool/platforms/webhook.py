"""What every webhook adapter shares: the event a verified body becomes (and the job it asks for), the
secrets signatures are checked with, the shape of an adapter, and two small parsing helpers. A leaf: it imports nothing of synctool's
but the error types, so the adapters and ``inbox`` can all stand on it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from synctool.errors import InvalidInput

if TYPE_CHECKING:
    from synctool.runtime import Runtime

#: a platform's JSON object as it sent it, before a model parses it (a body, or an item its API lists): its keys
#: are text, its values whatever JSON holds
JsonObject = dict[str, Any]


@dataclass
class JobSpec:
    """What a delivery asks drain to do. ``status='skipped'`` records it in the sync log only."""

    entity_type: str
    entity_id: str
    target: str = "crm"
    external_id: str | None = None
    email: str | None = None
    name: str | None = None
    amount: str | None = None
    status: str = "queued"
    message: str | None = None


@dataclass(frozen=True)
class Event:
    """One platform event, parsed once from its verified body by its platform's adapter: the receiver
    stores it under ``id`` (the provider's event id, the dedup key), and the job's handler receives it.

    ``data`` is what the platform sent, as its adapter parsed it (a model, or the resource as a dict that
    the handler validates for its entity type). A job that no delivery brought (a poll, a backfill, a job
    another job queued) gets an event with an empty ``id``, no ``data`` and the job's ``payload``."""

    id: str
    type: str
    job: JobSpec
    data: Any = None
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Missed:
    """A delivery the platform reports it failed to make, read back from its own record (``Platform.missed``):
    the body it sent (or would have sent), to replay through the receiver's path. Its origin is the platform's
    API, read with synctool's key; a delivery's signature is not part of that record."""

    event_id: str
    event_type: str
    at: str
    body: bytes
    #: the platform's words for how the delivery failed
    why: str = ""


@dataclass
class WebhookSecrets:
    """The secrets and settings the receiver checks signatures with, read once at start-up
    (``synctool.platforms.webhook_secrets``): by name (``DONATIONS_WEBHOOK_SECRET``, ...; each platform lists its
    own), plus Square's notification URL."""

    values: dict[str, str | None] = field(default_factory=dict)
    #: what else a platform's signatures are checked with (``Webhook.settings``: Square's notification URL)
    settings: dict[str, str | None] = field(default_factory=dict)
    tolerance_s: int = 300
    #: the run-time the receiver was built with, for a signature that names a document to fetch (PayPal's
    #: certificate, through the role's transport) or a platform API that checks it; None where nothing may be
    #: fetched (``inject``, ``check_platform``)
    runtime: Runtime | None = None

    def get(self, name: str) -> str | None:
        return self.values.get(name) or self.settings.get(name) or None


def parse_json_object(body: bytes) -> JsonObject:
    try:
        data = json.loads(body)
    except RecursionError:
        raise InvalidInput("body is nested too deeply", "a platform's payload is a few levels deep") from None
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("body is not valid JSON", "the platform must send the JSON payload unmodified") from None
    if not isinstance(data, dict):
        raise InvalidInput("body is not a JSON object", f"got a JSON {type(data).__name__}")
    return data


def text(value: object, limit: int = 500) -> str | None:
    """A payload value as a short string, or None."""
    if value is None or value == "":
        return None
    return str(value)[:limit]


class Adapter(Protocol):
    """A platform's webhook module (``platforms/givebutter/webhook.py``, ...): the headers worth keeping, the
    signature check on the raw bytes, and the one parse of a body into its ``Event``."""

    @property
    def KEPT_HEADERS(self) -> tuple[str, ...]: ...

    def verify_webhook(
        self,
        body: bytes,
        headers: Mapping[str, str],
        query: Mapping[str, str],
        secrets: WebhookSecrets,
        *,
        now: float | None = None,
    ) -> None: ...

    def parse_webhook(self, body: bytes) -> Event: ...
