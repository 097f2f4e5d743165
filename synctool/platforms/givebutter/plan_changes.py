"""The backup poll's and backfill's comparison of Givebutter's plans with synctool's record (``plans.py``): ``GET
/v1/plans`` has no filter, so every plan is read, and a plan job (``plan_job.py``) is queued for each whose status,
amount, frequency or next charge differ from the record (``queue_changed``). Reads of the platform only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from synctool.platform import SynctoolError, jobs, log, parse, store
from synctool.platforms.givebutter import plans
from synctool.platforms.givebutter.webhook import Plan, supporter_name

if TYPE_CHECKING:
    from synctool.platform import Connection


def poll_key(found: Plan) -> str:
    """The event id of a polled plan's state: the same state polled again queues nothing."""
    return (
        f"poll:{found.id}:{(found.status or '').lower()}:{plans.money(found.amount) or ''}:{(found.frequency or '').lower()}"
        f":{plans.day(found.next_bill_date) or ''}"
    )


def differs(conn: Connection, found: Plan) -> bool:
    """Whether the plan as listed says something the record does not: unknown, or its status, amount, frequency or
    next charge changed."""
    row = plans.get(conn, found.id)
    if row is None:
        return True
    return (
        plans.status_of(None, found.status, row["status"]) != row["status"]
        or (found.amount is not None and plans.money(found.amount) != row["amount"])
        or (bool(found.frequency) and (found.frequency or "").lower() != row["frequency"])
        or (bool(plans.day(found.next_bill_date)) and plans.day(found.next_bill_date) != row["next_charge"])
    )


def queue_changed(conn: Connection, listed: Iterable[dict[str, Any]], *, origin: str, max_attempts: int) -> tuple[int, int]:
    """A plan job for each listed plan that differs from the record and has none waiting (``poll:<plan>:<status>:
    <amount>:<frequency>:<next charge>`` as its event id, so a replay queues nothing); (plans seen, jobs queued)."""
    seen = queued = 0
    for item in listed:
        seen += 1
        try:
            found = parse(Plan, item, where="a Givebutter plan")
        except SynctoolError:
            continue
        if not differs(conn, found):
            continue
        key = poll_key(found)
        with store.atomic(conn):
            if plans.event_of(conn, key) is not None or log.has_entity_job(conn, "donations", "plan", found.id, unfinished=True):
                continue
            jobs.enqueue(
                conn,
                source="donations",
                entity_type="plan",
                entity_id=found.id,
                payload={"plan": item, "origin": origin, "event": key},
                email=found.email,
                name=supporter_name(item),
                amount=plans.money(found.amount),
                max_attempts=max_attempts,
            )
            queued += 1
    return seen, queued
