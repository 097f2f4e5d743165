"""Inbound webhooks: verify, parse, and store each delivery with its job in one committed transaction.

``accept()`` is the pure part (the role's adapter checks the signature on the raw bytes, then parses into
an ``Inbound``), shared by the receiver and ``synctool inject``. ``store_inbound()`` writes the delivery
and, through ``jobs.enqueue``, its job in one transaction. Nothing here calls out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from synctool import platforms, store
from synctool.errors import ConfigError, InvalidInput, StoreUnavailable
from synctool.platforms import adapter
from synctool.platforms.contract import ClaimHook
from synctool.platforms.webhook import Event, JobSpec, WebhookSecrets
from synctool.queue import jobs

__all__ = ["Inbound", "JobSpec", "WebhookSecrets", "accept", "store_inbound"]


@dataclass
class Inbound:
    role: str  # the platform's role (the deliveries table's column ``source``)
    event_id: str
    event_type: str
    body: bytes
    job: JobSpec
    headers: dict[str, str] = field(default_factory=dict)
    verified: bool = True
    note: str | None = None
    #: the role whose job it is, when another platform in use claimed the delivery (``Platform.claims``); None:
    #: the endpoint's own
    source: str | None = None


def accept(
    role: str,
    body: bytes,
    headers: Mapping[str, str],
    query: Mapping[str, str],
    secrets: WebhookSecrets,
    *,
    verify: bool = True,
    now: float | None = None,
    note: str | None = None,
    claims: Sequence[tuple[str, ClaimHook]] = (),
) -> Inbound:
    """Verify (unless ``verify`` is False, for inject) and parse one delivery. Raises InvalidInput. ``claims``
    (``platforms.claimants``): the platforms in use that take a share of ``role``'s deliveries, asked in turn after
    the parse; the first that claims it has its job (the delivery stays ``role``'s, deduplicated on its event id)."""
    platform = adapter(role)
    lowered = {k.lower(): v for k, v in headers.items()}
    secret = platforms.webhooks()[role].secret
    if verify and secret and not secrets.get(secret):  # one policy for every platform: never accepted unverified
        raise ConfigError(secret, "keyring/environment", "not set; these deliveries cannot be verified, so they are refused")
    if verify:
        platform.verify_webhook(body, lowered, query, secrets, now=now)
    try:
        event = platform.parse_webhook(body)
    except RecursionError:  # JSON nested thousands deep: the parser's (or a model's) recursion limit
        raise InvalidInput("body is nested too deeply", "a platform's payload is a few levels deep") from None
    kept = {k: v for k, v in lowered.items() if k in platform.KEPT_HEADERS}
    source = None
    for claimer, claim in claims:
        taken = claim(event)
        if taken is not None:
            source, event = claimer, Event(event.id, taken.type or event.type, taken.job, taken.data)
            break
    return Inbound(
        role,
        event.id,
        event.type,
        body,
        event.job,
        headers=kept,
        verified=verify,
        note=note or (None if verify else "injected by an operator; no signature was checked"),
        source=source,
    )


_INSERT_DELIVERY = (
    "INSERT INTO deliveries (source, event_id, event_type, received_at, headers, body, verified, note)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, event_id) DO NOTHING RETURNING id"
)


def received(conn: store.Connection, role: str, event_id: str) -> bool:
    """Whether the receiver stored this provider event (the dedup key of ``store_inbound``)."""
    return conn.execute("SELECT 1 FROM deliveries WHERE source = ? AND event_id = ?", (role, event_id)).fetchone() is not None


def store_inbound(conn: store.Connection, inbound: Inbound, max_attempts: int = 3) -> str | None:
    """Store one delivery and its job in one committed transaction (``synchronous=FULL``: on disk when this
    returns). Returns the job id, or None for a duplicate delivery."""
    job = inbound.job
    try:
        with store.atomic(conn):
            row = conn.execute(
                _INSERT_DELIVERY,
                (
                    inbound.role,
                    inbound.event_id,
                    inbound.event_type,
                    store.iso(),
                    json.dumps(inbound.headers),
                    inbound.body,
                    int(inbound.verified),
                    inbound.note,
                ),
            ).fetchone()
            if row is None:
                return None
            return jobs.enqueue(
                conn,
                source=inbound.source or inbound.role,  # the jobs column ``source`` holds the role
                target=job.target,
                entity_type=job.entity_type,
                entity_id=job.entity_id,
                external_id=job.external_id,
                status=job.status,
                message=job.message,
                email=job.email,
                name=job.name,
                amount=job.amount,
                max_attempts=max_attempts,
                delivery_id=row[0],
            )
    except store.Error as exc:
        raise StoreUnavailable(f"could not store the delivery: {exc}") from None
