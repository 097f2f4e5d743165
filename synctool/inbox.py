"""Inbound webhooks: verify, parse, and store each delivery with its job in one committed transaction.

``accept()`` is the pure part (signature on the raw bytes, then parsing into an ``Inbound``), shared by
the receiver and ``synctool inject``. ``store_inbound()`` writes the delivery and its job in one
transaction; ``group_commit.DeliveryWriter`` does the same for the receiver, batching concurrent
deliveries into one commit. Nothing here calls out.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Any

from synctool import store
from synctool.errors import InvalidInput, StoreUnavailable

SOURCES = ("donations", "pos", "mailing", "payments", "portal")


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


@dataclass
class Inbound:
    source: str
    event_id: str
    event_type: str
    body: bytes
    job: JobSpec
    headers: dict[str, str] = field(default_factory=dict)
    verified: bool = True
    note: str | None = None


@dataclass
class WebhookSecrets:
    """The secrets and settings the receiver checks signatures with, read once at start-up."""

    donations: str | None = None
    pos_key: str | None = None
    pos_url: str | None = None
    mailing: str | None = None
    payments: str | None = None
    portal: str | None = None
    tolerance_s: int = 300

    @classmethod
    def load(cls, config: Any) -> "WebhookSecrets":
        from synctool.secrets import get_secret

        return cls(
            donations=get_secret("DONATIONS_WEBHOOK_SECRET"),
            pos_key=get_secret("POS_WEBHOOK_SIGNATURE_KEY"),
            pos_url=config.webhooks.pos_notification_url,
            mailing=get_secret("MAILING_WEBHOOK_SECRET"),
            payments=get_secret("PAYMENTS_WEBHOOK_SECRET"),
            portal=get_secret("PORTAL_WEBHOOK_SECRET"),
            tolerance_s=config.webhooks.tolerance_s,
        )


def parse_json_object(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("body is not valid JSON", "the platform must send the JSON payload unmodified") from None
    if not isinstance(data, dict):
        raise InvalidInput("body is not a JSON object", f"got a JSON {type(data).__name__}")
    return data


def text(value: Any, limit: int = 500) -> str | None:
    """A payload value as a short string, or None."""
    if value is None or value == "":
        return None
    return str(value)[:limit]


def accept(
    source: str,
    body: bytes,
    headers: Mapping[str, str],
    query: Mapping[str, str],
    secrets: WebhookSecrets,
    *,
    verify: bool = True,
    now: float | None = None,
) -> Inbound:
    """Verify (unless ``verify`` is False, for inject) and parse one delivery. Raises InvalidInput."""
    from synctool.platforms import givebutter, mailchimp, portal, square, stripe

    adapters = {
        "donations": givebutter,
        "pos": square,
        "mailing": mailchimp,
        "payments": stripe,
        "portal": portal,
    }
    adapter = adapters.get(source)
    if adapter is None:
        raise InvalidInput(f"unknown source {source!r}", "one of: " + ", ".join(SOURCES))
    lowered = {k.lower(): v for k, v in headers.items()}
    if verify:
        adapter.verify_webhook(body, lowered, query, secrets, now=now)
    event_id, event_type, job = adapter.parse_webhook(body)
    kept = {k: v for k, v in lowered.items() if k in adapter.KEPT_HEADERS}
    return Inbound(source, event_id, event_type, body, job, headers=kept, verified=verify,
                   note=None if verify else "injected by an operator; no signature was checked")


_INSERT_DELIVERY = (
    "INSERT INTO deliveries (source, event_id, event_type, received_at, headers, body, verified, note)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, event_id) DO NOTHING RETURNING id")
_INSERT_JOB = (
    "INSERT INTO jobs (id, source, target, entity_type, entity_id, external_id, status, max_attempts, run_after,"
    " message, email, name, amount, created_at, updated_at, finished_at, delivery_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")

Prepared = tuple[tuple, tuple]


def prepare(inbound: Inbound, max_attempts: int) -> Prepared:
    """The two rows of a delivery, ready to insert (the job's delivery_id is appended at insert time)."""
    now = store.iso()
    job = inbound.job
    finished = now if job.status != "queued" else None
    delivery = (inbound.source, inbound.event_id, inbound.event_type, now, json.dumps(inbound.headers),
                inbound.body, int(inbound.verified), inbound.note)
    job_row = (store.new_id(), inbound.source, job.target, job.entity_type, job.entity_id, job.external_id,
               job.status, max_attempts, now, job.message, job.email, job.name, job.amount, now, now, finished)
    return delivery, job_row


def write(conn: sqlite3.Connection, prepared: list[Prepared]) -> list[str | None]:
    """Insert prepared deliveries and their jobs in one committed transaction; None marks a duplicate."""
    results: list[str | None] = []
    with store.transaction(conn):
        for delivery, job_row in prepared:
            row = conn.execute(_INSERT_DELIVERY, delivery).fetchone()
            if row is None:
                results.append(None)
                continue
            conn.execute(_INSERT_JOB, (*job_row, row[0]))
            results.append(job_row[0])
    return results


def store_inbound(conn: sqlite3.Connection, inbound: Inbound, max_attempts: int = 3) -> str | None:
    """Store one delivery and its job, committed. Returns the job id, or None for a duplicate."""
    try:
        return write(conn, [prepare(inbound, max_attempts)])[0]
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"could not store the delivery: {exc}") from None
