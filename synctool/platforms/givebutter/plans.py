"""Recurring plans (issue 53, "Monthly donors"), synctool's record of them: each Givebutter plan as ``plans`` and
``plan_events`` (``plans_schema.py``) hold it.

- A plan event (a ``plan.*`` webhook, or a poll or backfill that finds a plan changed) is applied once (``record``:
  ``plan_events`` by its event id), and never undoes a newer one (``seen_at``).
- Each charge (a transaction with ``plan_id``) is noted by the gift handler (``record_charge``), its gift made exactly
  as before (coded recurring); ``charges`` lists them with the CRM gift each became (``plans show``).

What is done with the record: the plan job (``plan_job.py``: the donor in the group, a failure followed up; a plan
known only from its charges read once), and the poll's and backfill's comparison (``plan_changes.py``).
The Plan's fields and what is confirmed of them: tests/data/givebutter_plans/README.md.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict

from synctool.platform import Unit, gifts, log, parse_iso, store
from synctool.platforms.givebutter.webhook import Plan, external_id, plan_moment

if TYPE_CHECKING:
    from synctool.platform import Connection, Row

#: synctool's plan statuses
STATUSES = ("active", "paused", "failed", "canceled", "ended")
#: the statuses of a plan that still gives: its donor stays in the group (a failed charge is retried by Givebutter)
GIVING = ("active", "failed")

#: Givebutter's ``status`` words -> synctool's. ``active`` is confirmed by four sources; the others come from one
#: production decoder only (MissionBit): UNCONFIRMED ``paused``, ``cancelled`` (two l), ``ended``, ``past_due``,
#: ``past_due_failed`` (README "status"). ``canceled`` (one l, as the event and ``canceled_at`` spell it) is read too.
PLATFORM_STATUS = {
    "active": "active",
    "paused": "paused",
    "past_due": "failed",
    "past_due_failed": "failed",
    "cancelled": "canceled",
    "canceled": "canceled",
    "ended": "ended",
}
#: what an event says of the plan's status (``plan.updated`` keeps the body's)
EVENT_STATUS = {"failed": "failed", "canceled": "canceled", "paused": "paused", "resumed": "active", "created": "active"}


class PlanCharge(TypedDict):
    """A charge of a plan, and the CRM gift it became (``plans show``)."""

    transaction_id: str
    amount: str | None
    currency: str | None
    at: str
    external_id: str
    crm_gift_id: str | None
    #: the gift's state: the ledger's (done, pending, unconfirmed, deleted), else its job's (queued, failed, ...)
    status: str


def status_of(kind: str | None, platform_status: str | None, previous: str | None = None) -> str:
    """synctool's status from an event kind (``failed``, ``created``...) and Givebutter's ``status`` word: the event
    decides but for ``updated`` (and a polled plan, ``kind`` None), where the word does; an unknown word keeps the
    previous status (else ``active``)."""
    if kind in EVENT_STATUS:
        return EVENT_STATUS[kind]
    word = (platform_status or "").strip().lower()
    return PLATFORM_STATUS.get(word) or previous or "active"


def polled_kind(previous: str | None, status: str) -> str:
    """The event a polled change stands for (its webhook was lost): a new plan ``created``; a plan now failed, paused
    or canceled is that event (followed up as one); a paused or failed one active again ``resumed``; else ``updated``."""
    if previous is None:
        return "created"
    if status == previous:
        return "updated"
    if status in ("failed", "paused", "canceled"):
        return status
    if status == "active" and previous in ("paused", "failed"):
        return "resumed"
    return "updated"


def moment(value: object) -> str | None:
    """A time as synctool stores one (``store.iso``: UTC, microseconds, ``Z``: sorts as text in time order)."""
    parsed = parse_iso(plan_moment(value))
    return store.iso(parsed) if parsed is not None else None


def day(value: object) -> str | None:
    """``next_bill_date`` (``2023-12-24 00:00:00``: a date at midnight) as ``YYYY-MM-DD``."""
    given = str(value or "").removeprefix("UTC ").strip()
    return given[:10] if len(given) >= 10 else None


def money(value: Decimal | None) -> str | None:
    """An amount as the record keeps it (two decimals, text)."""
    return None if value is None else f"{value:.2f}"


def get(conn: Connection, plan_id: str) -> Row | None:
    """The plan's row, or None when synctool has not recorded it."""
    return conn.execute("SELECT * FROM plans WHERE plan_id = ?", (plan_id,)).fetchone()


def event_of(conn: Connection, event_id: str) -> Row | None:
    """A plan event applied (its ``plan_events`` row), or None."""
    return conn.execute("SELECT * FROM plan_events WHERE id = ?", (event_id,)).fetchone()


def local_day(timezone: str | None) -> str:
    """Today where the organisation is (``timezone:``)."""
    return gifts.gift_date(None, timezone)


#: what is kept to say in the next report: the newest entries, bounded (with no group mapped no report clears it)
SAID_MAX = 500


def _add(said: str | None, more: str) -> str:
    text = f"{said}; {more}" if said else more
    return text if len(text) <= SAID_MAX else "...; " + text[-(SAID_MAX - 5) :].split("; ", 1)[-1]


# -- the record --------------------------------------------------------------------------------------------------


def record(
    conn: Connection, found: Plan, *, event_id: str, kind: str | None, at: str, origin: str, timezone: str | None = None
) -> tuple[Row, str, bool]:
    """Apply one plan event to the record, once (``plan_events`` by ``event_id``); returns the plan's row, the event's
    kind (``kind`` None: derived from the status change, for a polled plan) and whether it was applied now (False: an
    earlier run of the job applied it). An event older than the last applied (``seen_at``) fills what the record lacks
    and changes nothing else. Inside the caller's transaction (the job's unit)."""
    with store.atomic(conn):
        applied = event_of(conn, event_id)
        if applied is not None:
            return _recorded(conn, found.id), str(applied["kind"]), False
        before = get(conn, found.id)
        previous = before["status"] if before is not None else None
        status = status_of(kind, found.status, previous)
        kind = kind or polled_kind(previous, status)
        now = store.iso()
        started = moment(found.start_at) or moment(found.created_at)
        ended = moment(found.canceled_at) or (at if status in ("canceled", "ended") else None)
        fields: dict[str, Any] = {
            "email": found.email,
            "first_name": found.first_name,
            "last_name": found.last_name,
            "phone": found.phone,
            "contact_id": found.contact_id,
            "amount": money(found.amount),
            "frequency": (found.frequency or "").lower() or None,
            "platform_status": found.status,
            "started_at": started,
            "next_charge": day(found.next_bill_date),
        }
        if before is None:
            row = {k: v for k, v in fields.items()}
            row.update(plan_id=found.id, status=status, ended_at=ended, updated_at=now, seen_at=at)
            row.update(_last_charge(conn, found.id))
            if kind == "failed":
                row.update(failures=1, last_failure_at=at)
            conn.execute(f"INSERT INTO plans ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        elif before["seen_at"] is None or at >= before["seen_at"]:
            changes = {k: v for k, v in fields.items() if v is not None}
            changes.update(status=status, updated_at=now, seen_at=at)
            changes["ended_at"] = ended if status in ("canceled", "ended") else None
            changed = [
                f"{what} {before[what] or '-'} -> {changes[what]}"
                for what in ("amount", "frequency")
                if before[what] is not None and changes.get(what) is not None and changes[what] != before[what]
            ]
            if changed:
                changes["changed"] = _add(before["changed"], ", ".join(changed))
            if kind == "resumed" or (status == "active" and previous in ("paused", "failed") and kind != "created"):
                changes["news"] = _add(before["news"], f"resumed {local_day(timezone)}")
            if kind == "failed":
                changes.update(failures=int(before["failures"] or 0) + 1, last_failure_at=at)
            update(conn, found.id, changes)
        else:  # an older event: what the record lacks, nothing it holds
            lacking = {k: v for k, v in fields.items() if v is not None and before[k] is None}
            if kind == "failed":
                lacking.update(failures=int(before["failures"] or 0) + 1)
            if lacking:
                update(conn, found.id, {**lacking, "updated_at": now})
        detail = {"status": status, "platform_status": found.status, "amount": money(found.amount),
                  "frequency": found.frequency, "origin": origin}  # fmt: skip
        conn.execute(
            "INSERT INTO plan_events (id, plan_id, kind, at, detail) VALUES (?, ?, ?, ?, ?)",
            (event_id, found.id, kind, at, json.dumps(detail)),
        )
        return _recorded(conn, found.id), kind, True


def _recorded(conn: Connection, plan_id: str) -> Row:
    found = get(conn, plan_id)
    if found is None:  # the plan's row and its events are written together
        raise LookupError(f"plan {plan_id} is not recorded")
    return found


def update(conn: Connection, plan_id: str, changes: dict[str, Any]) -> None:
    names = ", ".join(f"{k} = ?" for k in changes)
    conn.execute(f"UPDATE plans SET {names} WHERE plan_id = ?", (*changes.values(), plan_id))


def _last_charge(conn: Connection, plan_id: str) -> dict[str, Any]:
    """A plan recorded after its charges (the first charge precedes ``plan.created`` by seconds): its last one."""
    found = conn.execute(
        "SELECT at, detail FROM plan_events WHERE plan_id = ? AND kind = 'charged' ORDER BY at DESC LIMIT 1", (plan_id,)
    ).fetchone()
    if found is None:
        return {}
    detail = json.loads(found["detail"] or "{}")
    out = {"last_charge_at": found["at"], "last_charge_amount": detail.get("amount"),
           "last_charge_transaction": detail.get("transaction_id")}  # fmt: skip
    if detail.get("currency"):
        out["currency"] = detail["currency"]
    return out


def record_charge(
    work: Unit, plan_id: str, transaction_id: str, amount: Decimal | None, currency: str | None, at: str | None
) -> bool:
    """A charge of the plan (a succeeded transaction with its ``plan_id``), noted once: its last charge, failures
    reset, and news for the donor's next contact report when the plan had failed or was paused (a failed plan charged
    again is active: Givebutter's retry took). No CRM request. Inside the job's unit (``gather``); False when
    already noted."""
    when = moment(at) or store.iso()
    paid = money(amount)
    with work.gather() as conn:
        event_id = f"charge:{transaction_id}"
        if event_of(conn, event_id) is not None:
            return False
        detail = {"transaction_id": str(transaction_id), "amount": paid, "currency": currency}
        conn.execute(
            "INSERT INTO plan_events (id, plan_id, kind, at, detail) VALUES (?, ?, 'charged', ?, ?)",
            (event_id, plan_id, when, json.dumps(detail)),
        )
        row = get(conn, plan_id)
        if row is None:  # its plan comes later (its webhook, or the poll): it takes its last charge from here
            return True
        changes: dict[str, Any] = {"updated_at": store.iso()}
        if currency:
            changes["currency"] = str(currency).upper()
        if row["last_charge_at"] is None or when >= row["last_charge_at"]:
            changes.update(last_charge_at=when, last_charge_amount=paid, last_charge_transaction=str(transaction_id))
            if row["last_failure_at"] is None or when >= row["last_failure_at"]:
                changes["failures"] = 0
            if row["status"] in ("failed", "paused"):
                changes["news"] = _add(row["news"], f"charged again {when[:10]}")
            if row["status"] == "failed" and (row["seen_at"] is None or when >= row["seen_at"]):
                changes["status"] = "active"
        update(conn, plan_id, changes)
    return True


def charges(conn: Connection, plan_id: str) -> list[PlanCharge]:
    """The plan's charges, oldest first, with the CRM gift each became (the gift ledger, else the gift's job)."""
    out: list[PlanCharge] = []
    for row in conn.execute(
        "SELECT at, detail FROM plan_events WHERE plan_id = ? AND kind = 'charged' ORDER BY at, id", (plan_id,)
    ):
        detail = json.loads(row["detail"] or "{}")
        txn = str(detail.get("transaction_id") or "")
        ext = external_id(txn)
        ledger = gifts.recorded(conn, ext)
        newest = log.gift_job(conn, ext, entity_type="transaction")
        made = log.get(conn, newest["id"]) if newest is not None else None
        gift_id = (ledger["crm_id"] if ledger is not None else None) or (made["crm_gift_id"] if made is not None else None)
        status = ledger["state"] if ledger is not None else (made["status"] if made is not None else "no job")
        out.append(
            PlanCharge(
                transaction_id=txn,
                amount=detail.get("amount"),
                currency=detail.get("currency"),
                at=row["at"],
                external_id=ext,
                crm_gift_id=None if gift_id is None else str(gift_id),
                status=str(status),
            )
        )
    return out
