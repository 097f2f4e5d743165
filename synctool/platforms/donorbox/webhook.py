"""Donorbox's custom webhooks, verified and parsed.

**Signature** (donorbox.zendesk.com/hc/en-us/articles/17982194843028-Verify-Donorbox-webhook-notifications): every
notification carries ``Donorbox-Signature: <timestamp>,<signature>``; the signature is the hex HMAC-SHA256, keyed
with the endpoint's *Signature Secret* (the custom webhook's details page in Donorbox), of the timestamp, a ``.``
and the raw body. The article asks the receiver to compare the timestamp with its clock as well; the copy read
(2026-12-08) breaks off before it says how close (*unconfirmed*), so synctool's own window (``webhooks.tolerance_s``,
300 s) is used, either side of now.

**Bodies** (donorbox.zendesk.com/hc/en-us/articles/4733681068820-Custom-Webhooks): "an array containing one JSON
object". In a version-1 endpoint the object is the donation itself, as ``GET /api/v1/donations`` lists it (its
``action``: ``new`` or ``update``) or the plan, as ``GET /api/v1/plans`` lists it; in a version-2 endpoint it is
``{event_name, donation | plan}`` (``donation.created``, ``donation.updated``, ``plan.created``, ``plan.updated``:
the names Donorbox's article lists; the envelope's key for the record is *unconfirmed*, read from a production
integration's handler). Both are taken; a bare object too.

Donorbox's bodies carry no event id: a delivery's id is its event, its record's id and a digest of its body, so a
repeat of the same body is a duplicate and a changed record (a refund) is a new delivery."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from synctool.platform import ConfigError, Event, InvalidInput, InvalidSignature, JobSpec, WebhookSecrets, text
from synctool.platforms.donorbox.models import external_id

#: the headers kept with a delivery (never one that carries a secret: the signature is not one)
KEPT_HEADERS: tuple[str, ...] = ("content-type", "user-agent")
SECRET = "DONORBOX_WEBHOOK_SECRET"
HEADER = "donorbox-signature"
#: the events a Donorbox endpoint can be sent (the Custom Webhooks article)
EVENTS = ("donation.created", "donation.updated", "plan.created", "plan.updated")
SHAPE = "Donorbox sends [{event_name, donation | plan}] (v2) or [the donation or plan] (v1)"


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """Donorbox's signature of ``body`` at ``timestamp``: hex HMAC-SHA256 of ``<timestamp>.<body>``."""
    return hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, at: float | None = None) -> str:
    """The ``Donorbox-Signature`` header Donorbox sends with ``body`` (the fake and the tests sign with it)."""
    stamp = str(int(time.time() if at is None else at))
    return f"{stamp},{signature(secret, stamp, body)}"


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    secret = secrets.get(SECRET)
    if not secret:
        raise ConfigError(SECRET, "keyring/environment", "not set: Donorbox's Signature Secret of this endpoint")
    stamp, _, given = (headers.get(HEADER) or "").partition(",")
    stamp, given = stamp.strip(), given.strip()
    if not stamp.isdigit() or not given or len(stamp) > 12:
        raise InvalidSignature("no Donorbox signature", "Donorbox-Signature is <timestamp>,<hex HMAC-SHA256>")
    age = (time.time() if now is None else now) - int(stamp)
    if abs(age) > secrets.tolerance_s:
        raise InvalidSignature("the Donorbox signature is too old", f"signed {int(age)} s ago; {secrets.tolerance_s} s allowed")
    if not hmac.compare_digest(signature(secret, stamp, body), given):
        raise InvalidSignature("invalid signature", "Donorbox-Signature is HMAC-SHA256 of <timestamp>.<body>")


def _one(body: bytes) -> dict[str, Any]:
    """The one object a delivery carries (Donorbox sends it in an array)."""
    try:
        data = json.loads(body)
    except RecursionError:
        raise InvalidInput("body is nested too deeply", SHAPE) from None
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("body is not valid JSON", SHAPE) from None
    if isinstance(data, list):
        if len(data) != 1:
            raise InvalidInput(f"the body holds {len(data)} records, not one", SHAPE)
        data = data[0]
    if not isinstance(data, dict):
        raise InvalidInput(f"the body is a JSON {type(data).__name__}, not a record", SHAPE)
    return data


def _read(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(event name, record) of the object: a v2 envelope, else a v1 donation or plan."""
    name = item.get("event_name")
    if name is not None:
        name = str(name)[:60]
        kind = name.partition(".")[0]
        record = item.get(kind) if kind in ("donation", "plan") else None
        if name in EVENTS and not isinstance(record, dict):
            raise InvalidInput(f"event {name!r} carries no {kind}", SHAPE)
        return name, record if isinstance(record, dict) else {}

    if "donation_date" in item or "amount_refunded" in item or "donation_type" in item:
        return ("donation.updated" if item.get("action") == "update" else "donation.created"), item
    if "next_donation_date" in item or "started_at" in item:
        return "plan.updated", item
    raise InvalidInput("the body is neither a Donorbox donation nor a plan", SHAPE)


def _id(record: dict[str, Any], what: str) -> str:
    found = record.get("id")
    if isinstance(found, bool) or not isinstance(found, (int, str)) or not str(found).strip() or len(str(found)) > 64:
        raise InvalidInput(f"the {what} has no id", SHAPE)
    return str(found).strip()


def parse_webhook(body: bytes) -> Event:
    name, record = _read(_one(body))
    digest = hashlib.sha256(body).hexdigest()[:20]
    if name not in EVENTS:  # an event Donorbox may add: recorded in the sync log, not synced
        job = JobSpec("event", name, status="skipped", message=f"{name}: not synced to the CRM")
        return Event(f"{name}:{digest}", name, job, None)
    if name.startswith("plan."):
        plan_id = _id(record, "plan")
        return Event(f"{name}:{plan_id}:{digest}", name, JobSpec("plan", plan_id, email=_email(record)), record)
    donation_id = _id(record, "donation")
    job = donation_job(record, donation_id)
    return Event(f"{name}:{donation_id}:{digest}", name, job, record)


def _email(record: dict[str, Any]) -> str | None:
    donor = record.get("donor")
    return text(donor.get("email"), 320) if isinstance(donor, dict) else None


def refunded_total(record: dict[str, Any]) -> str | None:
    """The donation's refunded total as Donorbox states it, when it is more than nothing (else None)."""
    value = record.get("amount_refunded")
    try:
        return str(value) if value is not None and float(value) > 0 else None
    except (TypeError, ValueError):
        return None


def donation_job(record: dict[str, Any], donation_id: str) -> JobSpec:
    """The job a donation's delivery asks for: its refund when Donorbox says some of it is refunded (its
    refunded total; the refund waits for the gift), else its gift."""
    total = refunded_total(record)
    if total is not None:
        # a refund job's entity type ends in "refund": it does not count as the job that makes its gift
        return JobSpec("refund", f"{donation_id}@{total}"[:80], external_id=external_id(donation_id), amount=f"-{total}")
    return JobSpec("donation", donation_id, external_id=external_id(donation_id), email=_email(record),
                   amount=text(record.get("amount"), 40))  # fmt: skip
