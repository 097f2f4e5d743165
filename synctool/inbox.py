"""Inbound webhooks: verify, parse, and store each delivery with its job in one committed transaction.

``accept()`` is the pure part (signature on the raw bytes, then parsing into an ``Inbound``), shared by
the receiver and ``synctool inject``. ``store_inbound()`` writes the delivery and its job in one
transaction; ``DeliveryWriter`` does the same for the receiver, batching concurrent deliveries into one
commit (group commit) so that durability does not cost one fsync per request. Nothing here calls out.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from collections.abc import Mapping
from pathlib import Path
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
    if verify:
        adapter.verify_webhook(body, headers, query, secrets, now=now)
    event_id, event_type, job = adapter.parse_webhook(body)
    kept = {k.lower(): v for k, v in headers.items() if k.lower() in adapter.KEPT_HEADERS}
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


def _prepare(inbound: Inbound, max_attempts: int) -> Prepared:
    """The two rows of a delivery, ready to insert (the job's delivery_id is appended at insert time)."""
    now = store.iso()
    job = inbound.job
    finished = now if job.status != "queued" else None
    delivery = (inbound.source, inbound.event_id, inbound.event_type, now, json.dumps(inbound.headers),
                inbound.body, int(inbound.verified), inbound.note)
    job_row = (store.new_id(), inbound.source, job.target, job.entity_type, job.entity_id, job.external_id,
               job.status, max_attempts, now, job.message, job.email, job.name, job.amount, now, now, finished)
    return delivery, job_row


def _write(conn: sqlite3.Connection, prepared: list[Prepared]) -> list[str | None]:
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
        return _write(conn, [_prepare(inbound, max_attempts)])[0]
    except sqlite3.Error as exc:
        raise StoreUnavailable(f"could not store the delivery: {exc}") from None


class DeliveryWriter:
    """Group commit for the receiver: deliveries that arrive together share one durable commit.

    ``await writer.store(inbound)`` returns the job id (or None for a duplicate) only after the
    transaction holding it has committed with ``synchronous=FULL``; if that fails, every delivery in the
    batch gets StoreUnavailable and none is acknowledged. The rows are prepared on the event loop; one
    helper thread inserts and commits them (SQLite releases the GIL while it works), so the loop keeps
    parsing and verifying the next deliveries, which form the next batch. One batch is in flight at a time.
    """

    def __init__(self, db_path: str | Path, *, max_attempts: int = 3):
        self._db_path = db_path
        self._conn: sqlite3.Connection | None = None
        self._max_attempts = max_attempts
        self._pending: list[tuple[Prepared, asyncio.Future]] = []
        self._in_flight = False
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="synctool-writer")

    async def store(self, inbound: Inbound) -> str | None:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._pending.append((_prepare(inbound, self._max_attempts), future))
        if not self._in_flight:
            self._in_flight = True
            loop.call_soon(self._flush, loop)
        return await future

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _write_batch(self, prepared: list[Prepared]) -> list[str | None]:
        if self._conn is None:
            self._conn = store.connect(self._db_path)
        return _write(self._conn, prepared)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            self._in_flight = False
            return
        done = self._thread.submit(self._write_batch, [prepared for prepared, _ in batch])
        done.add_done_callback(lambda f: loop.call_soon_threadsafe(self._written, loop, batch, f))

    def _written(self, loop: asyncio.AbstractEventLoop, batch: list, done) -> None:
        exc = done.exception()
        if exc is not None:
            error = exc if isinstance(exc, StoreUnavailable) else StoreUnavailable(f"could not store the delivery: {exc}")
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
        else:
            for (_, future), result in zip(batch, done.result()):
                if not future.done():  # a client that went away still had its delivery committed
                    future.set_result(result)
        self._flush(loop)
