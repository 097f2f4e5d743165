"""A portal push (or a line of ``synctool portal import``) becomes a stored record and the CRM jobs its new
state calls for (spec: portal-sync.md): a payment that became ``succeeded``, a membership that became ``active`` or
an enrollment that became paid/active queues its CRM job, as the sync flags allow. A local step (target
``portal``, no outside calls)."""

from __future__ import annotations

from typing import Any

from synctool.platform import Event, InvalidInput, Job, Outcome, PermanentError, jobs, settings
from synctool.platforms.portal import records as portal_records

FLAGS = "portal_flags"
DEFAULT_FLAGS = {"auto_sync": True, "sync_on_payment": True, "sync_on_membership": True}
#: states a Stripe event sets, which a later push of a "pending" record does not take back
SETTLED = ("succeeded", "active", "paid", "failed")


def flags(conn) -> dict[str, bool]:
    return {**DEFAULT_FLAGS, **(settings.get(conn, FLAGS) or {})}


def queue(conn, entity_type: str, entity_id: str, *, force: bool = False, origin: str = "portal") -> str:
    """A CRM job for a portal record; an identical job still waiting in the queue is reused."""
    external = f"{entity_id}" if entity_type == "payment" else None
    return jobs.enqueue_unless_waiting(
        conn,
        source="portal",
        target="crm",
        entity_type=entity_type,
        entity_id=entity_id,
        external_id=external,
        force=force,
        payload={"origin": origin},
    )


def jobs_for(conn, kind: str, record: dict[str, Any], before: dict[str, Any] | None, origin: str) -> list[str]:
    """The CRM jobs a record's new state calls for, within the caller's transaction."""
    f = flags(conn)
    if not f["auto_sync"]:
        return []
    changed = before is None or before.get("status") != record.get("status")
    queued = []
    if kind == "payment" and record["status"] == "succeeded" and changed and f["sync_on_payment"]:
        queued.append(queue(conn, "payment", record["id"], origin=origin))
    elif kind == "membership" and record["status"] == "active" and changed and f["sync_on_membership"]:
        queued.append(queue(conn, "membership", record["id"], origin=origin))
    elif kind == "enrollment" and record["status"] in ("paid", "active") and changed:
        queued.append(queue(conn, "enrollment", record["id"], origin=origin))
    elif kind == "user" and (
        before is None
        or any(before.get(k) != record.get(k) for k in ("email", "first_name", "last_name", "phone", "billing_address_1"))
    ):
        queued.append(queue(conn, "user", record["id"], origin=origin))
    elif kind == "family_link" and not record.get("crm_relationship_id"):
        queued.append(queue(conn, "relationship", record["id"], origin=origin))
    return queued


def apply_record(conn, kind: str, data: Any, origin: str) -> tuple[dict[str, Any], list[str]]:
    """Store one portal record, however it arrived (a push or ``portal import``), and queue the CRM jobs
    its new state calls for; within the caller's transaction. Returns the stored record and the job ids."""
    checked = portal_records.validate(kind, data)  # every field's type, before any of it reaches SQL
    before = portal_records.find(conn, kind, checked.id)
    if before is not None and data.get("status", "pending") == "pending" and before.get("status") in SETTLED:
        # the processor's event already settled it; a record carrying the older state does not undo that
        data = {**data, "status": before["status"]}
    if kind == "payment" and before is not None and before.get("currency") and not data.get("currency"):
        data = {**data, "currency": before["currency"]}  # the processor named it; a push that does not keeps it
    record = portal_records.upsert(conn, kind, data)
    return record, jobs_for(conn, kind, record, before, origin)


def push(event: Event, job: Job) -> Outcome:
    body = event.data or {}
    kind = str(body.get("type") or "").split(".", 1)[0]
    try:
        with job.unit.gather():
            record, queued = apply_record(job.conn, kind, body.get("data"), "portal push")
    except InvalidInput as exc:
        raise PermanentError(f"{exc}: {exc.detail}" if exc.detail else str(exc)) from None
    return Outcome("succeeded", f"{kind} {record['id']} stored" + (f"; queued {len(queued)} CRM job(s)" if queued else ""))
