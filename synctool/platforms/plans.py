"""Recurring plans, a contract part (issue 53's "Monthly donors", made every platform's by issue 60): synctool's record
of each platform's subscriptions in the core's ``plans`` and ``plan_events`` (``store/schema/plans.py``), keyed by the
platform's role (``source``) and its own plan id, and what is done with it in the CRM.

A platform package fills a ``PlanRecord`` (the plan as the platform says it is: its donor a ``Person``, amount,
frequency, synctool's status) and a ``PlanEvent`` (what happened: ``created``, ``updated``, ``failed``, ``paused``,
``resumed``, ``canceled``, or None for a polled state) from its own payload, and its plan handler calls ``apply``:

1. the event is applied to the record once (``plan_events`` by its id), never undoing a newer one (``seen_at``);
2. the donor is found (the constituent recorded, kept when the donor changes e-mail; else the one a charge's gift went
   to; else donor matching as for gifts);
3. with the ``plans`` mapping's group, the donor is a current member while one of their plans (of any platform) gives
   (``active`` or ``failed``: a failed charge is retried) and their membership ends when none does;
4. a failed, paused or canceled event writes one contact report (keyed by the event) saying what the plan is and what
   came since the last one, and queues one chat notice.

Each charge (a gift of a plan) is noted by the package's gift handler with ``record_charge``, its gift made as any
other (coded recurring); ``charges`` lists them with the CRM gift each became (``synctool plans show``).
``known_from_charge`` records a plan known only from its charges (its creation event lost), read once through the
package's ``read``. ``differs`` and ``queue_changed`` are the poll's and backfill's comparison.

Plan ids of two platforms never collide: every row carries its ``source``. A plan is named to people by its ``ref``:
its id for Givebutter's (``donations``, as before), ``<source>:<id>`` for any other platform's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict

from synctool import mappings, notices, settings, store
from synctool.crm import constituents, contact_reports, gifts, group_memberships
from synctool.crm.person import Person
from synctool.queue import jobs, log
from synctool.queue.jobs import Outcome
from synctool.timeutil import parse_iso

if TYPE_CHECKING:
    from synctool.platforms.job import Job
    from synctool.queue.unit import Unit

#: synctool's plan statuses
STATUSES = ("active", "paused", "failed", "canceled", "ended")
#: the statuses of a plan that still gives: its donor stays in the group (a failed charge is retried by the platform)
GIVING = ("active", "failed")
#: what an event says of the plan's status (``updated``, and a polled state, keep the record's ``status``)
EVENT_STATUS = {"failed": "failed", "canceled": "canceled", "paused": "paused", "resumed": "active", "created": "active"}
#: the event kinds a person follows up (a contact report, a chat line)
FOLLOWED_UP = ("failed", "paused", "canceled")
#: the mapping (kind, key): ``{"group_id", "contact_report_type_id", "team_member"}``
MAPPING = ("plans", "*")
#: in words, for the job's message and the daily summary
SAID = {
    "created": "created",
    "updated": "updated",
    "paused": "paused",
    "resumed": "resumed",
    "canceled": "canceled",
    "failed": "failed to charge",
}
#: the source whose plans are named by their bare id (Givebutter's, recorded before plans were every platform's)
BARE = "donations"
#: what is kept to say in the next report: the newest entries, bounded (with no group mapped no report clears it)
SAID_MAX = 500


@dataclass(frozen=True)
class PlanRecord:
    """A recurring plan as its platform says it is now, in synctool's terms (a package fills it from its payload).
    Times are ISO 8601 (UTC); ``next_charge`` a date (``YYYY-MM-DD``)."""

    id: str
    #: who gives (name, e-mail, phone): matched to a constituent as a gift's donor is
    person: Person = field(default_factory=Person)
    #: one charge's amount (None: not said); no gift is made from it (each charge is a gift of its own)
    amount: Decimal | None = None
    currency: str | None = None
    #: monthly, quarterly, yearly, weekly (lower case; another word is shown aside in the figures)
    frequency: str | None = None
    #: synctool's status (``STATUSES``) the platform's word means; None when the word is unknown (the record's kept)
    status: str | None = None
    #: the platform's own word, shown as it said it
    platform_status: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    next_charge: str | None = None
    #: when the platform last changed it, when it says so (orders events: an older one changes nothing)
    updated_at: str | None = None
    #: the donor's id on the platform, when it has one
    contact_id: str | None = None


@dataclass(frozen=True)
class PlanEvent:
    """What happened to a plan: its ``id`` (a webhook's event id; a poll's key of the state it saw), its ``kind``
    (``created``, ``updated``, ``failed``, ``paused``, ``resumed``, ``canceled``; None for a polled state: derived
    from the change of status), when (``at``: the plan's own change time, else when the job was queued) and who
    found it (``origin``: ``webhook``, ``poll``, ``backfill``, ``charge``, ``job``)."""

    id: str
    kind: str | None = None
    at: str | None = None
    origin: str = "webhook"


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


def ref(source: str, plan_id: str) -> str:
    """How a plan is named to people and in its follow-ups' keys: Givebutter's by its id, another's ``source:id``."""
    return plan_id if source == BARE else f"{source}:{plan_id}"


def status_of(kind: str | None, status: str | None, previous: str | None = None) -> str:
    """synctool's status after an event: the event's kind decides but for ``updated`` (and a polled plan, ``kind``
    None), where the platform's status does; an unknown status keeps the previous one (else ``active``)."""
    if kind in EVENT_STATUS:
        return EVENT_STATUS[kind]
    return status or previous or "active"


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
    parsed = parse_iso(str(value)) if value else None
    return store.iso(parsed) if parsed is not None else None


def day(value: str | None) -> str | None:
    """A next charge's day as the record keeps it (``YYYY-MM-DD``; a time's date part; None when it is no date)."""
    given = str(value or "").strip()[:10]
    try:
        return date.fromisoformat(given).isoformat() if given else None
    except ValueError:
        return None


def money(value: Decimal | None) -> str | None:
    """An amount as the record keeps it (two decimals, text)."""
    return None if value is None else f"{value:.2f}"


def get(conn: store.Connection, source: str, plan_id: str) -> store.Row | None:
    """The plan's row, or None when synctool has not recorded it."""
    return conn.execute("SELECT * FROM plans WHERE source = ? AND plan_id = ?", (source, plan_id)).fetchone()


def event_of(conn: store.Connection, source: str, event_id: str) -> store.Row | None:
    """A plan event applied (its ``plan_events`` row), or None."""
    return conn.execute("SELECT * FROM plan_events WHERE source = ? AND id = ?", (source, event_id)).fetchone()


def local_day(timezone: str | None) -> str:
    """Today where the organisation is (``timezone:``)."""
    return gifts.gift_date(None, timezone)


def _add(said: str | None, more: str) -> str:
    text = f"{said}; {more}" if said else more
    return text if len(text) <= SAID_MAX else "...; " + text[-(SAID_MAX - 5) :].split("; ", 1)[-1]


# -- the record --------------------------------------------------------------------------------------------------


def record(
    conn: store.Connection,
    source: str,
    found: PlanRecord,
    event: PlanEvent,
    *,
    at: str,
    timezone: str | None = None,
) -> tuple[store.Row, str, bool]:
    """Apply one plan event to the record, once (``plan_events`` by the event's id); returns the plan's row, the
    event's kind (a polled state's derived from the status change) and whether it was applied now (False: an earlier
    run of the job applied it). An event older than the last applied (``seen_at``) fills what the record lacks and
    changes nothing else. Inside the caller's transaction (the job's unit)."""
    with store.atomic(conn):
        applied = event_of(conn, source, event.id)
        if applied is not None:
            return _recorded(conn, source, found.id), str(applied["kind"]), False
        before = get(conn, source, found.id)
        previous = before["status"] if before is not None else None
        status = status_of(event.kind, found.status, previous)
        kind = event.kind or polled_kind(previous, status)
        now = store.iso()
        ended = moment(found.ended_at) or (at if status in ("canceled", "ended") else None)
        fields: dict[str, Any] = {
            "email": found.person.email,
            "first_name": found.person.first_name,
            "last_name": found.person.last_name,
            "phone": found.person.phone,
            "contact_id": found.contact_id,
            "amount": money(found.amount),
            "frequency": (found.frequency or "").lower() or None,
            "platform_status": found.platform_status,
            "started_at": moment(found.started_at),
            "next_charge": day(found.next_charge),
        }
        if before is None:
            row = dict(fields)
            row.update(source=source, plan_id=found.id, status=status, ended_at=ended, updated_at=now, seen_at=at)
            if found.currency:
                row["currency"] = found.currency.upper()
            row.update(_last_charge(conn, source, found.id))
            if kind == "failed":
                row.update(failures=1, last_failure_at=at)
            conn.execute(f"INSERT INTO plans ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        elif before["seen_at"] is None or at >= before["seen_at"]:
            changes = {k: v for k, v in fields.items() if v is not None}
            changes.update(status=status, updated_at=now, seen_at=at)
            if found.currency:
                changes["currency"] = found.currency.upper()
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
            update(conn, source, found.id, changes)
        else:  # an older event: what the record lacks, nothing it holds
            lacking = {k: v for k, v in fields.items() if v is not None and before[k] is None}
            if kind == "failed":
                lacking.update(failures=int(before["failures"] or 0) + 1)
            if lacking:
                update(conn, source, found.id, {**lacking, "updated_at": now})
        detail = {"status": status, "platform_status": found.platform_status, "amount": money(found.amount),
                  "frequency": found.frequency, "origin": event.origin}  # fmt: skip
        conn.execute(
            "INSERT INTO plan_events (source, id, plan_id, kind, at, detail) VALUES (?, ?, ?, ?, ?, ?)",
            (source, event.id, found.id, kind, at, json.dumps(detail)),
        )
        return _recorded(conn, source, found.id), kind, True


def held(conn: store.Connection, source: str, plan_id: str) -> PlanRecord | None:
    """The plan as synctool holds it, as a ``PlanRecord`` (None: not recorded): what ``apply_held`` applies."""
    row = get(conn, source, plan_id)
    if row is None:
        return None
    person = Person(first_name=row["first_name"], last_name=row["last_name"], email=row["email"], phone=row["phone"])
    amount = Decimal(row["amount"]) if row["amount"] else None
    return PlanRecord(id=plan_id, person=person, amount=amount, currency=row["currency"], frequency=row["frequency"],
                      status=row["status"], platform_status=row["platform_status"], started_at=row["started_at"],
                      ended_at=row["ended_at"], next_charge=row["next_charge"], contact_id=row["contact_id"])  # fmt: skip


def _recorded(conn: store.Connection, source: str, plan_id: str) -> store.Row:
    found = get(conn, source, plan_id)
    if found is None:  # the plan's row and its events are written together
        raise LookupError(f"plan {ref(source, plan_id)} is not recorded")
    return found


def update(conn: store.Connection, source: str, plan_id: str, changes: dict[str, Any]) -> None:
    names = ", ".join(f"{k} = ?" for k in changes)
    conn.execute(f"UPDATE plans SET {names} WHERE source = ? AND plan_id = ?", (*changes.values(), source, plan_id))


def _last_charge(conn: store.Connection, source: str, plan_id: str) -> dict[str, Any]:
    """A plan recorded after its charges (a first charge may precede its plan's creation event): its last one."""
    found = conn.execute(
        "SELECT at, detail FROM plan_events WHERE source = ? AND plan_id = ? AND kind = 'charged' ORDER BY at DESC LIMIT 1",
        (source, plan_id),
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
    work: Unit,
    source: str,
    plan_id: str,
    transaction_id: str,
    amount: Decimal | None,
    currency: str | None,
    at: str | None,
    *,
    external_id: str,
    entity_type: str | None = None,
) -> bool:
    """A charge of the plan (a gift the package's handler makes; ``external_id`` the CRM gift's, ``entity_type`` its
    job's), noted once: its last charge, failures reset, and news for the donor's next contact report when the plan
    had failed or was paused (a failed plan charged again is active: the platform's retry took). No CRM request.
    Inside the job's unit (``gather``); False when already noted."""
    when = moment(at) or store.iso()
    paid = money(amount)
    with work.gather() as conn:
        event_id = f"charge:{transaction_id}"
        if event_of(conn, source, event_id) is not None:
            return False
        detail = {"transaction_id": str(transaction_id), "amount": paid, "currency": currency,
                  "external_id": external_id, "entity_type": entity_type}  # fmt: skip
        conn.execute(
            "INSERT INTO plan_events (source, id, plan_id, kind, at, detail) VALUES (?, ?, ?, 'charged', ?, ?)",
            (source, event_id, plan_id, when, json.dumps(detail)),
        )
        row = get(conn, source, plan_id)
        if row is None:  # its plan comes later (its event, or the poll): it takes its last charge from here
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
        update(conn, source, plan_id, changes)
    return True


def charges(conn: store.Connection, source: str, plan_id: str) -> list[PlanCharge]:
    """The plan's charges, oldest first, with the CRM gift each became (the gift ledger, else the gift's job)."""
    out: list[PlanCharge] = []
    for row in conn.execute(
        "SELECT at, detail FROM plan_events WHERE source = ? AND plan_id = ? AND kind = 'charged' ORDER BY at, id",
        (source, plan_id),
    ):
        detail = json.loads(row["detail"] or "{}")
        txn = str(detail.get("transaction_id") or "")
        ext = str(detail.get("external_id") or f"{source}_{txn}")
        ledger = gifts.recorded(conn, ext)
        newest = log.gift_job(conn, ext, entity_type=detail.get("entity_type"))
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


# -- the CRM side: the plan job ------------------------------------------------------------------------------------


def _constituent(job: Job, source: str, row: store.Row, person: Person, write: bool) -> str | None:
    """The plan's CRM constituent: the one recorded (kept when the donor changes e-mail), else the one a charge's gift
    went to, else donor matching as for gifts (``write``: created when none matches; else the mirror only)."""
    if row["constituent_id"]:
        return str(row["constituent_id"])
    for charge in reversed(charges(job.conn, source, str(row["plan_id"]))):
        newest = log.gift_job(job.conn, charge["external_id"], entity_type=_entity_type(job.conn, source, charge),
                              statuses=("succeeded",))  # fmt: skip
        made = log.get(job.conn, newest["id"]) if newest is not None else None
        if made is not None and made["crm_constituent_id"]:
            return str(made["crm_constituent_id"])
    who = Person(first_name=person.first_name, last_name=person.last_name, email=person.email, phone=person.phone)
    if not who.email and not who.last_name:
        return None
    if write:
        return job.match_or_create(who)[0]
    matched = constituents.lookup(job.conn, who)
    return str(matched["id"]) if matched is not None else None


def _entity_type(conn: store.Connection, source: str, charge: PlanCharge) -> str | None:
    found = event_of(conn, source, f"charge:{charge['transaction_id']}")
    detail = json.loads(found["detail"] or "{}") if found is not None else {}
    return detail.get("entity_type") if isinstance(detail, dict) else None


def _group(job: Job, constituent_id: str, group_id: int) -> str:
    """The donor in the group while a plan of theirs (of any platform) gives (from the earliest such plan's start),
    out when none does."""
    giving = job.conn.execute(
        f"SELECT min(started_at) AS since, count(*) AS n FROM plans WHERE constituent_id = ?"
        f" AND status IN ({','.join('?' * len(GIVING))})",
        (constituent_id, *GIVING),
    ).fetchone()
    if giving["n"]:
        since = gifts.gift_date(giving["since"], job.config.timezone) if giving["since"] else local_day(job.config.timezone)
        said = group_memberships.start(job, constituent_id, group_id, since)
        return {"already": "already in the group"}.get(said, f"group membership {said} ({since})")
    said = group_memberships.end(job, constituent_id, group_id, local_day(job.config.timezone))
    return {"ended": "group membership ended"}.get(said, "no group membership to end")


def _donor_lock(constituent_id: str) -> list[str]:
    """The donor's plans read and their membership written as one, whichever platform's plan the job is about."""
    return [f"donations:plan-donor:{constituent_id}"]


def report_text(row: store.Row, kind: str, platform_status: str | None, *, platform: str, changes: bool) -> str:
    """The contact report: the plan (id, amount, currency, frequency), what happened, the last successful charge,
    what the platform said, and what came since the last report."""
    donor = " ".join(p for p in (row["first_name"], row["last_name"]) if p) or row["email"] or "the donor"
    amount = f"{row['amount']} {row['currency']}" if row["amount"] else "an unknown amount"
    lines = [
        f"{platform} recurring plan {row['plan_id']} ({amount} {row['frequency'] or ''}".rstrip()
        + f") {SAID.get(kind, kind)}: {donor}"
        + (f" <{row['email']}>" if row["email"] else ""),
        "Last successful charge: "
        + (
            f"{row['last_charge_amount'] or '?'} {row['currency']} on {row['last_charge_at'][:10]}"
            if row["last_charge_at"]
            else "none recorded"
        ),  # fmt: skip
        f"{platform} says: status {platform_status or 'not given'}"
        + (f", {row['failures']} failed charge(s) since the last successful one" if row["failures"] else ""),
    ]
    if row["next_charge"] and kind != "canceled":
        lines.append(f"Next charge: {row['next_charge']}")
    if row["news"]:
        lines.append(f"Since the last report: {row['news']}")
    if changes and row["changed"]:
        lines.append(f"Changed: {row['changed']}")
    return "\n".join(lines)


def _chat_line(row: store.Row, kind: str, platform: str) -> str:
    donor = " ".join(p for p in (row["first_name"], row["last_name"]) if p) or "a donor"
    amount = f"{row['amount']} {row['currency']} {row['frequency'] or ''}".rstrip() if row["amount"] else ""
    return (
        f"Monthly donor: {donor}'s {platform} plan {row['plan_id']}"
        + (f" ({amount})" if amount else "")
        + f" {SAID.get(kind, kind)}"
    )


def _origin(detail: str | None) -> object:
    """Who found a plan event (its detail's ``origin``: ``webhook``, ``poll``, ``backfill``, ...), None if unsaid."""
    try:
        found = json.loads(detail or "null")
    except ValueError:
        return None
    return found.get("origin") if isinstance(found, dict) else None


def _found_already(conn: store.Connection, source: str, found: PlanRecord, kind: str, event_id: str) -> str:
    """A webhook the platform delivers late, after the poll (or backfill) already found what it says: the poll's
    event, so that the change is recorded and followed up once. The same occurrence when the plan's last event is
    the poll's, of the same kind, and (where the plan carries its ``updated_at``) at the same moment; a failure
    after it (a later retry that failed again) carries a later ``updated_at`` and is its own."""
    last = conn.execute(
        "SELECT id, kind, at, detail FROM plan_events WHERE source = ? AND plan_id = ?"
        f" ORDER BY at DESC, {store.dialect.arrival()} DESC LIMIT 1",
        (source, found.id),
    ).fetchone()
    if last is None or last["id"] == event_id or last["kind"] != kind or _origin(last["detail"]) not in ("poll", "backfill"):
        return event_id
    updated = moment(found.updated_at)
    return str(last["id"]) if updated is None or updated == last["at"] else event_id


def apply(job: Job, source: str, found: PlanRecord, event: PlanEvent, *, platform: str) -> Outcome:
    """A plan event, recorded and done in the CRM (the module's four steps), from a package's plan handler:
    ``source`` its role, ``platform`` its name in words (the contact report's and chat line's "Givebutter recurring
    plan ..."). Returns the job's outcome; every step is once, whichever run of the job reaches it."""
    event_id = event.id
    # seen_at: the plan's own change time when sent, else when the job was queued
    at = moment(found.updated_at) or moment(event.at) or str(job.row["created_at"])
    kind = event.kind
    from_webhook = event.origin == "webhook"
    if from_webhook and kind in FOLLOWED_UP and (polled := _found_already(job.conn, source, found, kind, event_id)) != event_id:
        with job.unit.gather():  # kept as the poll's twin: a later webhook of the same kind is a change of its own
            job.conn.execute(
                "INSERT INTO plan_events (source, id, plan_id, kind, at, detail, followup) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (source, id) DO NOTHING",
                (source, event_id, found.id, kind, max(at, store.iso()),
                 json.dumps({"origin": "webhook", "found_by": polled}), f"plan:{ref(source, found.id)}:{polled}"),
            )  # fmt: skip
        event_id = polled
    with job.unit.gather():  # 1: the record and its event, once
        row, kind, _ = record(job.conn, source, found, PlanEvent(event_id, kind, event.at, event.origin), at=at,
                              timezone=job.config.timezone)  # fmt: skip
    mapped = mappings.get(job.conn, *MAPPING) or {}
    said = []
    cid = _constituent(job, source, row, found.person, write=bool(mapped.get("group_id")))  # 2
    if cid and row["constituent_id"] != cid:
        with job.unit.gather():
            update(job.conn, source, found.id, {"constituent_id": cid})
        row = get(job.conn, source, found.id) or row
    known = event_of(job.conn, source, event_id)  # a replay of a late webhook the poll found first: the poll's key
    key = str(known["followup"]) if known is not None and known["followup"] else f"plan:{ref(source, found.id)}:{event_id}"
    if cid and mapped.get("group_id"):  # 3
        with job.unit.lock(_donor_lock(cid)):
            said.append(_group(job, cid, int(mapped["group_id"])))
    elif not mapped.get("group_id"):
        said.append("no CRM change (no plans group mapped: synctool mappings plans set --group ID)")
    if kind in FOLLOWED_UP:
        if cid and mapped.get("group_id"):  # 4
            text = report_text(row, kind, found.platform_status, platform=platform,
                               changes=settings.plans_report_changes(job.conn))  # fmt: skip
            report = contact_reports.write_once(
                job, key, cid, type_id=mapped.get("contact_report_type_id"),
                original_date=local_day(job.config.timezone), text=text, team_member=mapped.get("team_member"),
            )  # fmt: skip
            with job.unit.gather():
                job.conn.execute("UPDATE plan_events SET followup = ? WHERE source = ? AND id = ?", (key, source, event_id))
                update(job.conn, source, found.id, {"news": None, "changed": None})
            said.append(f"contact report {report}" if report is not None else "contact report held (preview)")
        with job.unit.gather():
            if notices.queue(job.conn, key, _chat_line(row, kind, platform)):
                said.append("chat notice queued")
    person = found.person
    donor = " ".join(p for p in (person.first_name, person.last_name) if p) or "a donor"
    gives = f" ({found.amount} {found.frequency or ''}".rstrip() + ")" if found.amount is not None else ""
    reach = f" <{person.email}>" if person.email else ""
    return Outcome(
        "succeeded",
        f"recurring plan {found.id} {SAID.get(kind, kind)}: {donor}{reach}{gives}; " + "; ".join(said),
        crm_constituent_id=cid,
    )


def apply_held(job: Job, source: str, *, platform: str) -> Outcome:
    """A plan job ``reconcile --plans --fix`` queued (its payload ``{"held": True}``, no platform's body): the plan as
    synctool holds it applied again (``held``), so its donor is put in or out of the group as their plans say. A
    plan handler's first line: ``if event.payload.get("held"): return plans.apply_held(job, role, platform=...)``."""
    plan_id = str(job.row["entity_id"])
    found = held(job.conn, source, plan_id)
    if found is None:
        from synctool.errors import PermanentError

        raise PermanentError(f"recurring plan {ref(source, plan_id)} is not recorded: nothing to apply")
    return apply(job, source, found, PlanEvent(f"fix:{job.id}", None, origin="reconcile --fix"), platform=platform)


# -- a plan known from its charges ---------------------------------------------------------------------------------


def known_from_charge(
    job: Job, source: str, plan_id: str, transaction_id: str, constituent_id: str, read: Callable[[], PlanRecord | str]
) -> str | None:
    """A charge (its gift made, to ``constituent_id``) of a plan synctool has not recorded (its creation event lost,
    its start older than the poll's window): the plan is read once (``read()``: the plan, or why not in words) and
    recorded (its event ``charge-read:<transaction>``), and its donor joins the group by the plan job's path. Never a
    read when the plan is recorded, nor twice in one job: call it after every write of the gift job that could fail
    and send it round again. A read that fails costs the gift nothing: a later charge's job, or the poll, reads it
    again. What happened, in words; None when the plan was recorded already or a plan job waits to record it."""
    event_id = f"charge-read:{transaction_id}"
    if get(job.conn, source, plan_id) is None:
        if log.has_entity_job(job.conn, source, "plan", plan_id, unfinished=True):
            return None  # its creation event (or the poll's job) is waiting to record it: the plan job does the rest
        found = read()
        if isinstance(found, str):
            return found
        at = moment(found.updated_at) or str(job.row["created_at"])
        with job.unit.gather():
            made, _, _ = record(job.conn, source, found, PlanEvent(event_id, None, at, "charge"), at=at,
                                timezone=job.config.timezone)  # fmt: skip
            if not made["constituent_id"]:
                update(job.conn, source, plan_id, {"constituent_id": constituent_id})
    elif event_of(job.conn, source, event_id) is None:
        return None  # recorded by its own events: its charge asks nothing more
    # recorded now, or by this charge in an earlier run of this job (cut short): the group, 0 requests if written
    row = get(job.conn, source, plan_id)
    cid = str(row["constituent_id"]) if row is not None and row["constituent_id"] else constituent_id
    mapped = mappings.get(job.conn, *MAPPING) or {}
    if not mapped.get("group_id"):
        return f"recurring plan {plan_id} read and recorded (no plans group mapped)"
    with job.unit.lock(_donor_lock(cid)):
        said = _group(job, cid, int(mapped["group_id"]))
    return f"recurring plan {plan_id} read and recorded; {said}"


# -- the poll's and backfill's comparison --------------------------------------------------------------------------


def poll_key(found: PlanRecord) -> str:
    """The event id of a polled plan's state: the same state polled again queues nothing."""
    return (
        f"poll:{found.id}:{(found.platform_status or '').lower()}:{money(found.amount) or ''}:{(found.frequency or '').lower()}"
        f":{day(found.next_charge) or ''}"
    )


def differs(conn: store.Connection, source: str, found: PlanRecord) -> bool:
    """Whether the plan as listed says something the record does not: unknown, or its status, amount, frequency or
    next charge changed."""
    row = get(conn, source, found.id)
    if row is None:
        return True
    return (
        status_of(None, found.status, row["status"]) != row["status"]
        or (found.amount is not None and money(found.amount) != row["amount"])
        or (bool(found.frequency) and (found.frequency or "").lower() != row["frequency"])
        or (bool(day(found.next_charge)) and day(found.next_charge) != row["next_charge"])
    )


def queue_changed(
    conn: store.Connection,
    source: str,
    listed: Iterable[tuple[PlanRecord, dict[str, Any]]],
    *,
    origin: str,
    max_attempts: int,
    name: Callable[[dict[str, Any]], str | None] = lambda item: None,
) -> int:
    """A plan job (``(source, "plan")``, its payload ``{"plan": item, "origin", "event"}``) for each listed plan (the
    record and the platform's item it came from) that differs from the record and has none waiting, its event id
    ``poll_key`` (a replay queues nothing); how many were queued."""
    queued = 0
    for found, item in listed:
        if not differs(conn, source, found):
            continue
        key = poll_key(found)
        with store.atomic(conn):
            if event_of(conn, source, key) is not None or log.has_entity_job(conn, source, "plan", found.id, unfinished=True):
                continue
            jobs.enqueue(
                conn,
                source=source,
                entity_type="plan",
                entity_id=found.id,
                payload={"plan": item, "origin": origin, "event": key},
                email=found.person.email,
                name=name(item),
                amount=money(found.amount),
                max_attempts=max_attempts,
            )
            queued += 1
    return queued
