"""Recurring plans (issue 53, "Monthly donors"): each Givebutter plan recorded, its donor kept in the CRM group the
organisation maps while they give monthly, and a failed, paused or canceled plan followed up in the CRM.

- ``plans`` / ``plan_events`` (``plans_schema.py``) are synctool's record: a plan event (a ``plan.*`` webhook, or a
  poll or backfill that finds a plan changed) is applied once (``plan_events`` by its event id), and never undoes a
  newer one (``seen_at``); each charge (a transaction with ``plan_id``) is noted by the gift handler
  (``record_charge``), its gift made exactly as before (coded recurring).
- The plan job (``("donations", "plan")``): record, find the constituent (kept once known: a donor who changes
  e-mail stays with it), then, with the ``plans`` mapping: the donor is a current member of the group while one of
  their plans gives (``active`` or ``failed``: Givebutter retries a failed charge) and their membership ends when
  none does (``synctool.crm.group_memberships``); a failed, paused or canceled event writes one contact report
  (``synctool.crm.contact_reports.write_once``, keyed by the event) saying what the donor's plan is and what came
  since the last one (resumed, charged again; a changed amount when ``plans_report_changes`` is on); and a chat
  notice (``synctool.notices``, once per event, when a chat webhook is set).
- The backup poll and backfill read every plan (``GET /v1/plans`` has no filter) and queue a job for each whose
  status, amount, frequency or next charge differ from the record (``queue_changed``): reads of the platform only.

The Plan's fields and what is confirmed of them: tests/data/givebutter_plans/README.md.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, TypedDict

from synctool import mappings, notices, settings, store
from synctool.crm import constituents, contact_reports, gifts, group_memberships
from synctool.crm.constituents import Person
from synctool.errors import SynctoolError
from synctool.platforms.context import Job
from synctool.platforms.givebutter.client import DonationsClient
from synctool.platforms.givebutter.webhook import PLAN_EVENTS, Plan, external_id, plan_moment, supporter_name
from synctool.platforms.webhook import Event
from synctool.queue import jobs, log
from synctool.queue.handlers import handler
from synctool.queue.jobs import Outcome
from synctool.queue.unit import Unit
from synctool.timeutil import parse_iso
from synctool.validation import parse, payload

#: synctool's plan statuses
STATUSES = ("active", "paused", "failed", "canceled", "ended")
#: the statuses of a plan that still gives: its donor stays in the group (a failed charge is retried by Givebutter)
GIVING = ("active", "failed")
#: the event kinds a person follows up (a contact report, a chat line)
FOLLOWED_UP = ("failed", "paused", "canceled")
#: the mapping (kind, key): ``{"group_id", "contact_report_type_id", "team_member"}``
MAPPING = ("plans", "*")

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
#: in words, for the job's message and the daily summary
SAID = {
    "created": "created",
    "updated": "updated",
    "paused": "paused",
    "resumed": "resumed",
    "canceled": "canceled",
    "failed": "failed to charge",
}


class Charge(TypedDict):
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


def moment(value: Any) -> str | None:
    """A time as synctool stores one (``store.iso``: UTC, microseconds, ``Z``: sorts as text in time order)."""
    parsed = parse_iso(plan_moment(value))
    return store.iso(parsed) if parsed is not None else None


def _day(value: Any) -> str | None:
    """``next_bill_date`` (``2023-12-24 00:00:00``: a date at midnight) as ``YYYY-MM-DD``."""
    given = str(value or "").removeprefix("UTC ").strip()
    return given[:10] if len(given) >= 10 else None


def _money(value: Decimal | None) -> str | None:
    return None if value is None else f"{value:.2f}"


def get(conn: sqlite3.Connection, plan_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM plans WHERE plan_id = ?", (plan_id,)).fetchone()


def _event(conn: sqlite3.Connection, event_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM plan_events WHERE id = ?", (event_id,)).fetchone()


def _local_day(timezone: str | None) -> str:
    """Today where the organisation is (``timezone:``)."""
    return gifts.gift_date(None, timezone)


#: what is kept to say in the next report: the newest entries, bounded (with no group mapped no report clears it)
SAID_MAX = 500


def _add(said: str | None, more: str) -> str:
    text = f"{said}; {more}" if said else more
    return text if len(text) <= SAID_MAX else "...; " + text[-(SAID_MAX - 5) :].split("; ", 1)[-1]


# -- the record --------------------------------------------------------------------------------------------------


def record(
    conn: sqlite3.Connection, found: Plan, *, event_id: str, kind: str | None, at: str, origin: str, timezone: str | None = None
) -> tuple[sqlite3.Row, str, bool]:
    """Apply one plan event to the record, once (``plan_events`` by ``event_id``); returns the plan's row, the event's
    kind (``kind`` None: derived from the status change, for a polled plan) and whether it was applied now (False: an
    earlier run of the job applied it). An event older than the last applied (``seen_at``) fills what the record lacks
    and changes nothing else. Inside the caller's transaction (the job's unit)."""
    with store.atomic(conn):
        applied = _event(conn, event_id)
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
            "amount": _money(found.amount),
            "frequency": (found.frequency or "").lower() or None,
            "platform_status": found.status,
            "started_at": started,
            "next_charge": _day(found.next_bill_date),
        }
        if before is None:
            row = {k: v for k, v in fields.items()}
            row.update(plan_id=found.id, status=status, ended_at=ended, updated_at=now, seen_at=at)
            row.update(_last_charge(conn, found.id))
            if kind == "failed":
                row.update(failures=1, last_failure_at=at)
            store.database(conn).table("plans").insert(row, pk="plan_id")
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
                changes["news"] = _add(before["news"], f"resumed {_local_day(timezone)}")
            if kind == "failed":
                changes.update(failures=int(before["failures"] or 0) + 1, last_failure_at=at)
            _update(conn, found.id, changes)
        else:  # an older event: what the record lacks, nothing it holds
            lacking = {k: v for k, v in fields.items() if v is not None and before[k] is None}
            if kind == "failed":
                lacking.update(failures=int(before["failures"] or 0) + 1)
            if lacking:
                _update(conn, found.id, {**lacking, "updated_at": now})
        detail = {"status": status, "platform_status": found.status, "amount": _money(found.amount),
                  "frequency": found.frequency, "origin": origin}  # fmt: skip
        conn.execute(
            "INSERT INTO plan_events (id, plan_id, kind, at, detail) VALUES (?, ?, ?, ?, ?)",
            (event_id, found.id, kind, at, json.dumps(detail)),
        )
        return _recorded(conn, found.id), kind, True


def _recorded(conn: sqlite3.Connection, plan_id: str) -> sqlite3.Row:
    found = get(conn, plan_id)
    if found is None:  # the plan's row and its events are written together
        raise LookupError(f"plan {plan_id} is not recorded")
    return found


def _update(conn: sqlite3.Connection, plan_id: str, changes: dict[str, Any]) -> None:
    names = ", ".join(f"{k} = ?" for k in changes)
    conn.execute(f"UPDATE plans SET {names} WHERE plan_id = ?", (*changes.values(), plan_id))


def _last_charge(conn: sqlite3.Connection, plan_id: str) -> dict[str, Any]:
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


def record_charge(work: Unit, plan_id: str, transaction_id: str, amount: Any, currency: str | None, at: str | None) -> bool:
    """A charge of the plan (a succeeded transaction with its ``plan_id``), noted once: its last charge, failures
    reset, and news for the donor's next contact report when the plan had failed or was paused (a failed plan charged
    again is active: Givebutter's retry took). No CRM request. Inside the job's unit (``gather``); False when
    already noted."""
    when = moment(at) or store.iso()
    money = None if amount is None else f"{Decimal(str(amount)):.2f}"
    with work.gather() as conn:
        event_id = f"charge:{transaction_id}"
        if _event(conn, event_id) is not None:
            return False
        detail = {"transaction_id": str(transaction_id), "amount": money, "currency": currency}
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
            changes.update(last_charge_at=when, last_charge_amount=money, last_charge_transaction=str(transaction_id))
            if row["last_failure_at"] is None or when >= row["last_failure_at"]:
                changes["failures"] = 0
            if row["status"] in ("failed", "paused"):
                changes["news"] = _add(row["news"], f"charged again {when[:10]}")
            if row["status"] == "failed" and (row["seen_at"] is None or when >= row["seen_at"]):
                changes["status"] = "active"
        _update(conn, plan_id, changes)
    return True


def charges(conn: sqlite3.Connection, plan_id: str) -> list[Charge]:
    """The plan's charges, oldest first, with the CRM gift each became (the gift ledger, else the gift's job)."""
    out: list[Charge] = []
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
            Charge(
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


# -- the plan job ------------------------------------------------------------------------------------------------


def _constituent(job: Job, row: sqlite3.Row, found: Plan, write: bool) -> str | None:
    """The plan's CRM constituent: the one recorded (kept when the donor changes e-mail), else the one a charge's gift
    went to, else donor matching as for gifts (``write``: created when none matches; else the mirror only)."""
    if row["constituent_id"]:
        return str(row["constituent_id"])
    for charge in reversed(charges(job.conn, found.id)):
        newest = log.gift_job(job.conn, charge["external_id"], entity_type="transaction", statuses=("succeeded",))
        made = log.get(job.conn, newest["id"]) if newest is not None else None
        if made is not None and made["crm_constituent_id"]:
            return str(made["crm_constituent_id"])
    person = Person(first_name=found.first_name, last_name=found.last_name, email=found.email, phone=found.phone)
    if not person.email and not person.last_name:
        return None
    if write:
        return job.match_or_create(person)[0]
    matched = constituents.lookup(job.conn, person)
    return str(matched["id"]) if matched is not None else None


def _group(job: Job, constituent_id: str, group_id: int) -> str:
    """The donor in the group while a plan of theirs gives (from the earliest such plan's start), out when none does."""
    giving = job.conn.execute(
        f"SELECT min(started_at) AS since, count(*) AS n FROM plans WHERE constituent_id = ?"
        f" AND status IN ({','.join('?' * len(GIVING))})",
        (constituent_id, *GIVING),
    ).fetchone()
    if giving["n"]:
        since = gifts.gift_date(giving["since"], job.config.timezone) if giving["since"] else _local_day(job.config.timezone)
        said = group_memberships.start(job, constituent_id, group_id, since)
        return {"already": "already in the group"}.get(said, f"group membership {said} ({since})")
    said = group_memberships.end(job, constituent_id, group_id, _local_day(job.config.timezone))
    return {"ended": "group membership ended"}.get(said, "no group membership to end")


def report_text(row: sqlite3.Row, kind: str, found: Plan, *, changes: bool) -> str:
    """The contact report: the plan (id, amount, currency, frequency), what happened, the last successful charge,
    what Givebutter said, and what came since the last report."""
    donor = " ".join(p for p in (row["first_name"], row["last_name"]) if p) or row["email"] or "the donor"
    amount = f"{row['amount']} {row['currency']}" if row["amount"] else "an unknown amount"
    lines = [
        f"Givebutter recurring plan {row['plan_id']} ({amount} {row['frequency'] or ''}".rstrip()
        + f") {SAID.get(kind, kind)}: {donor}"
        + (f" <{row['email']}>" if row["email"] else ""),
        "Last successful charge: "
        + (
            f"{row['last_charge_amount'] or '?'} {row['currency']} on {row['last_charge_at'][:10]}"
            if row["last_charge_at"]
            else "none recorded"
        ),  # fmt: skip
        f"Givebutter says: status {found.status or 'not given'}"
        + (f", {row['failures']} failed charge(s) since the last successful one" if row["failures"] else ""),
    ]
    if row["next_charge"] and kind != "canceled":
        lines.append(f"Next charge: {row['next_charge']}")
    if row["news"]:
        lines.append(f"Since the last report: {row['news']}")
    if changes and row["changed"]:
        lines.append(f"Changed: {row['changed']}")
    return "\n".join(lines)


def _chat_line(row: sqlite3.Row, kind: str) -> str:
    donor = " ".join(p for p in (row["first_name"], row["last_name"]) if p) or "a donor"
    amount = f"{row['amount']} {row['currency']} {row['frequency'] or ''}".rstrip() if row["amount"] else ""
    return (
        f"Monthly donor: {donor}'s Givebutter plan {row['plan_id']}"
        + (f" ({amount})" if amount else "")
        + f" {SAID.get(kind, kind)}"
    )


def _found_already(conn: sqlite3.Connection, found: Plan, kind: str, event_id: str) -> str:
    """A webhook that Givebutter delivers late, after the poll (or backfill) already found what it says: the poll's
    event, so that the change is recorded and followed up once. The same occurrence when the plan's last event is
    the poll's, of the same kind, and (where the plan carries its ``updated_at``, an UNCONFIRMED field) at the same
    moment; a failure after it (a later retry that failed again) carries a later ``updated_at`` and is its own."""
    last = conn.execute(
        "SELECT id, kind, at, json_extract(detail, '$.origin') AS origin FROM plan_events WHERE plan_id = ?"
        " ORDER BY at DESC, rowid DESC LIMIT 1",
        (found.id,),
    ).fetchone()
    if last is None or last["id"] == event_id or last["kind"] != kind or last["origin"] not in ("poll", "backfill"):
        return event_id
    updated = moment(found.updated_at)
    return str(last["id"]) if updated is None or updated == last["at"] else event_id


@handler("donations", "plan")
def plan(event: Event, job: Job) -> Outcome:
    """A plan event (a ``plan.*`` webhook; a poll's, backfill's or reconcile's job): the design's six steps."""
    data = event.payload.get("plan") or event.data
    if not data:  # a job queued with no plan (reconcile --fix): the plan as Givebutter holds it now
        data = job.client("donations", DonationsClient).plan(job.row["entity_id"])
    found = payload(Plan, data, "the Givebutter plan")
    from_webhook = event.type in PLAN_EVENTS
    event_id = event.id or str(event.payload.get("event") or f"job:{job.id}")
    kind = event.type.removeprefix("plan.") if from_webhook else None
    # seen_at: the plan's own updated_at (UNCONFIRMED field: GB-API only) when sent, else when the job was queued
    at = moment(found.updated_at) or str(job.row["created_at"])
    origin = "webhook" if from_webhook else str(event.payload.get("origin") or "job")
    if from_webhook and kind in FOLLOWED_UP and (polled := _found_already(job.conn, found, kind, event_id)) != event_id:
        with job.unit.gather():  # kept as the poll's twin: a later webhook of the same kind is a change of its own
            job.conn.execute(
                "INSERT OR IGNORE INTO plan_events (id, plan_id, kind, at, detail, followup) VALUES (?, ?, ?, ?, ?, ?)",
                (event_id, found.id, kind, max(at, store.iso()), json.dumps({"origin": "webhook", "found_by": polled}),
                 f"plan:{found.id}:{polled}"),
            )  # fmt: skip
        event_id = polled
    with job.unit.gather():  # 1-2: the record and its event, once
        row, kind, _ = record(job.conn, found, event_id=event_id, kind=kind, at=at, origin=origin,
                              timezone=job.config.timezone)  # fmt: skip
    mapped = mappings.get(job.conn, *MAPPING) or {}
    said = []
    cid = _constituent(job, row, found, write=bool(mapped.get("group_id")))  # 3
    if cid and row["constituent_id"] != cid:
        with job.unit.gather():
            _update(job.conn, found.id, {"constituent_id": cid})
        row = get(job.conn, found.id) or row
    known = _event(job.conn, event_id)  # a replay of a late webhook the poll found first follows up under the poll's key
    key = str(known["followup"]) if known is not None and known["followup"] else f"plan:{found.id}:{event_id}"
    if cid and mapped.get("group_id"):  # 4
        with job.unit.lock([f"donations:plan-donor:{cid}"]):  # the donor's plans read and the membership written as one
            said.append(_group(job, cid, int(mapped["group_id"])))
    elif not mapped.get("group_id"):
        said.append("no CRM change (no plans group mapped: synctool mappings plans set --group ID)")
    if kind in FOLLOWED_UP:
        if cid and mapped.get("group_id"):  # 5
            text = report_text(row, kind, found, changes=settings.plans_report_changes(job.conn))
            report = contact_reports.write_once(
                job, key, cid, type_id=mapped.get("contact_report_type_id"),
                original_date=_local_day(job.config.timezone), text=text, team_member=mapped.get("team_member"),
            )  # fmt: skip
            with job.unit.gather():
                job.conn.execute("UPDATE plan_events SET followup = ? WHERE id = ?", (key, event_id))
                _update(job.conn, found.id, {"news": None, "changed": None})
            said.append(f"contact report {report}" if report is not None else "contact report held (preview)")
        with job.unit.gather():  # 6
            if notices.queue(job.conn, key, _chat_line(row, kind)):
                said.append("chat notice queued")
    donor = " ".join(p for p in (found.first_name, found.last_name) if p) or "a donor"
    gives = f" ({found.amount} {found.frequency or ''}".rstrip() + ")" if found.amount is not None else ""
    reach = f" <{found.email}>" if found.email else ""
    return Outcome(
        "succeeded",
        f"recurring plan {found.id} {SAID.get(kind, kind)}: {donor}{reach}{gives}; " + "; ".join(said),
        crm_constituent_id=cid,
    )


# -- the poll and backfill ---------------------------------------------------------------------------------------


def poll_key(found: Plan) -> str:
    """The event id of a polled plan's state: the same state polled again queues nothing."""
    return (
        f"poll:{found.id}:{(found.status or '').lower()}:{_money(found.amount) or ''}:{(found.frequency or '').lower()}"
        f":{_day(found.next_bill_date) or ''}"
    )


def differs(conn: sqlite3.Connection, found: Plan) -> bool:
    """Whether the plan as listed says something the record does not: unknown, or its status, amount, frequency or
    next charge changed."""
    row = get(conn, found.id)
    if row is None:
        return True
    return (
        status_of(None, found.status, row["status"]) != row["status"]
        or (found.amount is not None and _money(found.amount) != row["amount"])
        or (bool(found.frequency) and (found.frequency or "").lower() != row["frequency"])
        or (bool(_day(found.next_bill_date)) and _day(found.next_bill_date) != row["next_charge"])
    )


def queue_changed(
    conn: sqlite3.Connection, listed: Iterable[dict[str, Any]], *, origin: str, max_attempts: int
) -> tuple[int, int]:
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
            if _event(conn, key) is not None or log.has_entity_job(conn, "donations", "plan", found.id, unfinished=True):
                continue
            jobs.enqueue(
                conn,
                source="donations",
                entity_type="plan",
                entity_id=found.id,
                payload={"plan": item, "origin": origin, "event": key},
                email=found.email,
                name=supporter_name(item),
                amount=_money(found.amount),
                max_attempts=max_attempts,
            )
            queued += 1
    return seen, queued
