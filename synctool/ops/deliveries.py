"""Operations on stored deliveries: list, show, and inject (spec: inject-webhook)."""

from __future__ import annotations

import json
import logging
from typing import Any, Union

from pydantic import Field

from synctool import store
from synctool.errors import InvalidInput, NotFound, one_of
from synctool.ops.inbox import WebhookSecrets, accept, store_inbound
from synctool.platforms import sources
from synctool.queue import log
from synctool.runtime import Runtime
from synctool.timeutil import parse_moment
from synctool.validation import Body

logger = logging.getLogger("synctool")


def list_deliveries(
    conn: store.Connection, *, source: str | None = None, since: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    one_of(source or None, sources(), "source")
    if not 1 <= limit <= 1000:
        raise InvalidInput("limit must be between 1 and 1000")
    where = store.Where()
    if source:
        where.add("d.source = ?", source)
    if since:
        where.add("d.received_at >= ?", store.iso(parse_moment(since)))
    rows = conn.execute(
        f"SELECT d.id, d.source, d.event_id, d.event_type, d.received_at, d.verified, length(d.body) AS size"
        f" FROM deliveries d {where} ORDER BY d.id DESC LIMIT ?",
        (*where.params, limit),
    ).fetchall()
    made = log.for_delivery(conn, [row["id"] for row in rows])
    listed = []
    for row in rows:  # a delivery made one job (a few: one line each, as before)
        for job in made.get(row["id"]) or [{"id": None, "status": None}]:
            listed.append(dict(row) | {"verified": bool(row["verified"]), "job_id": job["id"], "job_status": job["status"]})
    return listed


def show_delivery(conn: store.Connection, delivery_id: int) -> dict[str, Any]:
    """One delivery as stored. One whose raw body retention dropped (``synctool prune``) has an empty ``body``
    and ``headers``, its ``body_pruned_at``, and ``body_dropped`` saying so (None while the body is kept)."""
    row = conn.execute("SELECT * FROM deliveries WHERE id = ?", (delivery_id,)).fetchone()
    if row is None:
        raise NotFound(f"no delivery with id {delivery_id}")
    result = dict(row)
    result["headers"] = json.loads(row["headers"])
    result["verified"] = bool(row["verified"])
    result["body"] = bytes(row["body"]).decode("utf-8", errors="replace")
    result["body_dropped"] = log.body_dropped(delivery_id, row["body_pruned_at"]) if row["body_pruned_at"] else None
    result["jobs"] = log.for_delivery(conn, [delivery_id]).get(delivery_id, [])
    return result


class InjectBody(Body):
    """Spec: POST /api/inject-webhook: the payload as JSON, or the raw body as a string (a form-encoded platform's)."""

    source: str = Field(min_length=1)
    payload: Union[dict[str, Any], list[Any], str]

    def raw(self) -> bytes:
        return self.payload.encode() if isinstance(self.payload, str) else json.dumps(self.payload).encode()


def inject(conn: store.Connection, rt: Runtime, role: str, body: bytes) -> dict[str, Any]:
    """Store a payload through the receiver's path, without a signature check, and log that."""
    from synctool import platforms

    platforms.chosen(rt.config, role, lambda p: p.webhook)  # a platform not in use takes no delivery
    inbound = accept(role, body, {}, {}, WebhookSecrets(), verify=False, claims=platforms.claimants(rt.config, role))
    job_id = store_inbound(conn, inbound, rt.config.queue.max_attempts)
    logger.warning("injected a %s %s delivery (event %s) without a signature check", role, inbound.event_type, inbound.event_id)
    if job_id is None:
        return {"status": "duplicate", "event_id": inbound.event_id}
    return {"status": "accepted", "job_id": job_id, "event_id": inbound.event_id, "event_type": inbound.event_type}
