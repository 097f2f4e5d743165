"""The plan job (``("donations", "plan")``, issue 53's "Monthly donors"): a plan event applied to synctool's record
(``plans.py``), then in the CRM, with the ``plans`` mapping:

- the donor is found (the constituent recorded, kept when the donor changes e-mail; else the one a charge's gift went
  to; else donor matching as for gifts);
- the donor is a current member of the group while one of their plans gives (``active`` or ``failed``: Givebutter
  retries a failed charge) and their membership ends when none does (``synctool.crm.group_memberships``);
- a failed, paused or canceled event writes one contact report (``synctool.crm.contact_reports.write_once``, keyed by
  the event) saying what the donor's plan is and what came since the last one (resumed, charged again; a changed
  amount when ``plans_report_changes`` is on); and a chat notice (``synctool.notices``, once per event, when a chat
  webhook is set).

A plan known only from its charges (its ``plan.created`` lost, its start older than the poll's window) is read once by
the charge's gift job (``known_from_charge``) and recorded, and its donor joins the group by the same path.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from synctool.platform import (
    Event,
    Job,
    Outcome,
    Person,
    SynctoolError,
    constituents,
    contact_reports,
    gifts,
    group_memberships,
    log,
    mappings,
    notices,
    payload,
    settings,
    store,
)
from synctool.platforms.givebutter import plans
from synctool.platforms.givebutter.client import DonationsClient
from synctool.platforms.givebutter.webhook import PLAN_EVENTS, Plan

if TYPE_CHECKING:
    from synctool.platform import Connection, Row

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


def _constituent(job: Job, row: Row, found: Plan, write: bool) -> str | None:
    """The plan's CRM constituent: the one recorded (kept when the donor changes e-mail), else the one a charge's gift
    went to, else donor matching as for gifts (``write``: created when none matches; else the mirror only)."""
    if row["constituent_id"]:
        return str(row["constituent_id"])
    for charge in reversed(plans.charges(job.conn, found.id)):
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
        f" AND status IN ({','.join('?' * len(plans.GIVING))})",
        (constituent_id, *plans.GIVING),
    ).fetchone()
    if giving["n"]:
        since = gifts.gift_date(giving["since"], job.config.timezone) if giving["since"] else plans.local_day(job.config.timezone)
        said = group_memberships.start(job, constituent_id, group_id, since)
        return {"already": "already in the group"}.get(said, f"group membership {said} ({since})")
    said = group_memberships.end(job, constituent_id, group_id, plans.local_day(job.config.timezone))
    return {"ended": "group membership ended"}.get(said, "no group membership to end")


def report_text(row: Row, kind: str, found: Plan, *, changes: bool) -> str:
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


def _chat_line(row: Row, kind: str) -> str:
    donor = " ".join(p for p in (row["first_name"], row["last_name"]) if p) or "a donor"
    amount = f"{row['amount']} {row['currency']} {row['frequency'] or ''}".rstrip() if row["amount"] else ""
    return (
        f"Monthly donor: {donor}'s Givebutter plan {row['plan_id']}"
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


def _found_already(conn: Connection, found: Plan, kind: str, event_id: str) -> str:
    """A webhook that Givebutter delivers late, after the poll (or backfill) already found what it says: the poll's
    event, so that the change is recorded and followed up once. The same occurrence when the plan's last event is
    the poll's, of the same kind, and (where the plan carries its ``updated_at``, an UNCONFIRMED field) at the same
    moment; a failure after it (a later retry that failed again) carries a later ``updated_at`` and is its own."""
    last = conn.execute(
        f"SELECT id, kind, at, detail FROM plan_events WHERE plan_id = ? ORDER BY at DESC, {store.dialect.arrival()} DESC LIMIT 1",
        (found.id,),
    ).fetchone()
    if last is None or last["id"] == event_id or last["kind"] != kind or _origin(last["detail"]) not in ("poll", "backfill"):
        return event_id
    updated = plans.moment(found.updated_at)
    return str(last["id"]) if updated is None or updated == last["at"] else event_id


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
    at = plans.moment(found.updated_at) or str(job.row["created_at"])
    origin = "webhook" if from_webhook else str(event.payload.get("origin") or "job")
    if from_webhook and kind in FOLLOWED_UP and (polled := _found_already(job.conn, found, kind, event_id)) != event_id:
        with job.unit.gather():  # kept as the poll's twin: a later webhook of the same kind is a change of its own
            job.conn.execute(
                "INSERT INTO plan_events (id, plan_id, kind, at, detail, followup) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO NOTHING",
                (event_id, found.id, kind, max(at, store.iso()), json.dumps({"origin": "webhook", "found_by": polled}),
                 f"plan:{found.id}:{polled}"),
            )  # fmt: skip
        event_id = polled
    with job.unit.gather():  # 1-2: the record and its event, once
        row, kind, _ = plans.record(job.conn, found, event_id=event_id, kind=kind, at=at, origin=origin,
                                    timezone=job.config.timezone)  # fmt: skip
    mapped = mappings.get(job.conn, *MAPPING) or {}
    said = []
    cid = _constituent(job, row, found, write=bool(mapped.get("group_id")))  # 3
    if cid and row["constituent_id"] != cid:
        with job.unit.gather():
            plans.update(job.conn, found.id, {"constituent_id": cid})
        row = plans.get(job.conn, found.id) or row
    known = plans.event_of(job.conn, event_id)  # a replay of a late webhook the poll found first follows up under the poll's key
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
                original_date=plans.local_day(job.config.timezone), text=text, team_member=mapped.get("team_member"),
            )  # fmt: skip
            with job.unit.gather():
                job.conn.execute("UPDATE plan_events SET followup = ? WHERE id = ?", (key, event_id))
                plans.update(job.conn, found.id, {"news": None, "changed": None})
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


# -- a plan known from its charges ---------------------------------------------------------------------------------


def known_from_charge(job: Job, plan_id: str, transaction_id: str, constituent_id: str) -> str | None:
    """A charge (its gift made, to ``constituent_id``) of a plan synctool has not recorded: its ``plan.created`` was
    lost and its start is older than the poll's window. The plan is read once (``GET /v1/plans/{id}``) and recorded
    (its event ``charge-read:<transaction>``), and its donor joins the group by the plan job's path. Never a read when
    the plan is recorded, nor twice in one job: the read comes after every write of the gift job that could fail and
    send it round again, and its record is committed before the group's CRM write. A read that fails (a 404, an
    outage) costs the gift nothing: a later charge's job, or the poll, reads it again. What happened, in words; None
    when the plan was recorded already or a plan job waits to record it (a first charge comes seconds before its
    ``plan.created``)."""
    event_id = f"charge-read:{transaction_id}"
    if plans.get(job.conn, plan_id) is None:
        if log.has_entity_job(job.conn, "donations", "plan", plan_id, unfinished=True):
            return None  # its plan.created (or the poll's job) is waiting to record it: the plan job does the rest
        found = _read(job, plan_id)
        if isinstance(found, str):
            return found
        at = plans.moment(found.updated_at) or str(job.row["created_at"])
        with job.unit.gather():
            made, _, _ = plans.record(job.conn, found, event_id=event_id, kind=None, at=at, origin="charge",
                                      timezone=job.config.timezone)  # fmt: skip
            if not made["constituent_id"]:
                plans.update(job.conn, plan_id, {"constituent_id": constituent_id})
    elif plans.event_of(job.conn, event_id) is None:
        return None  # recorded by its own events: its charge asks nothing more
    # recorded now, or by this charge in an earlier run of this job (cut short): the group, 0 requests if written
    row = plans.get(job.conn, plan_id)
    cid = str(row["constituent_id"]) if row is not None and row["constituent_id"] else constituent_id
    mapped = mappings.get(job.conn, *MAPPING) or {}
    if not mapped.get("group_id"):
        return f"recurring plan {plan_id} read and recorded (no plans group mapped)"
    with job.unit.lock([f"donations:plan-donor:{cid}"]):  # as the plan job: the donor's plans and membership as one
        said = _group(job, cid, int(mapped["group_id"]))
    return f"recurring plan {plan_id} read and recorded; {said}"


def _read(job: Job, plan_id: str) -> Plan | str:
    """The plan as Givebutter holds it, or why not, in words."""
    try:
        return payload(Plan, job.client("donations", DonationsClient).plan(plan_id), "the Givebutter plan")
    except SynctoolError as exc:
        return f"recurring plan {plan_id} not read ({exc}): read again at its next charge or by the poll"
