"""Creating a gift exactly once for an external id (invariant 4).

One writer per external id: ``create_once`` holds the lock ``gift:<external id>`` (across threads and
processes, renewed with the job's lease) while it reads the ledger and writes, so a second job for the
same gift waits, then finds the first one's result in the ledger and spends no request.

The ``crm_writes`` ledger records the intent (``pending``) before the POST and the CRM's gift id
(``done``) after it: in a job, the lock and ``pending`` commit at the job's point ``before gift create`` and
``done`` (or ``unconfirmed``) with the lock let go at ``after gift create`` (``queue.unit``). A ``done`` entry costs no request. A POST whose answer was lost (a timeout, a dropped
connection, a 5xx after sending) is ``unconfirmed``: the job waits ``crm.confirm_after_s`` (a slow CRM may
store the gift after the client gave up, and its search may lag its writes), then searches by external id
and POSTs again only if the CRM still has no such gift. A ``pending`` entry (a crash mid-POST) is treated
the same way. LGL's 422 "External Gift ID already exists" means: look it up.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from synctool import store
from synctool.crm.client import CrmClient
from synctool.crm.types import Amount, CrmId, JsonObject
from synctool.errors import RemoteError, Skip, TransientError, UncertainWrite, Wait
from synctool.money import dollars
from synctool.queue.jobs import Outcome
from synctool.queue.unit import Unit
from synctool.timeutil import age_s, parse_iso

if TYPE_CHECKING:
    from synctool.crm.constituents import Matching, Person


def zone(name: str | None) -> ZoneInfo | None:
    """The IANA time zone ``name`` (``America/New_York``), or None when it is empty or unknown."""
    if not name:
        return None
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        return None


def gift_date(moment: str | None, *zones: str | None) -> str:
    """The calendar day of ``moment`` (ISO 8601 with an offset) where the money was given: the first known
    time zone of ``zones`` (the platform's, then the organisation's), else UTC. An evening gift in
    California on 31 December belongs to that year, not the next."""
    where = next((z for z in map(zone, zones) if z is not None), UTC)
    if not moment:
        return datetime.now(where).strftime("%Y-%m-%d")
    parsed = parse_iso(moment, assume_utc=False)
    if parsed is None:
        return str(moment)[:10]
    if parsed.tzinfo is None:  # a time without an offset is already local to the platform
        return parsed.strftime("%Y-%m-%d")
    return parsed.astimezone(where).strftime("%Y-%m-%d")


def recorded(conn: store.Connection, external_id: str) -> store.Row | None:
    return conn.execute("SELECT * FROM crm_writes WHERE key = ? AND kind = 'gift'", (external_id,)).fetchone()


def _mark(
    work: Unit,
    external_id: str,
    state: str,
    crm_id: CrmId | None = None,
    job_id: str | None = None,
    amounts: tuple[object, object] | None = None,
    error: str | None = None,
) -> None:
    """Record the ledger's state for ``external_id``; ``amounts`` are the received and deductible amounts the
    CRM's gift now holds (what a later refund checks a person has not changed); ``error`` is why an
    ``unconfirmed`` write is uncertain."""
    amount, deductible = (None, None) if amounts is None else (money(amounts[0]), money(amounts[1]))
    with work.gather() as conn:
        conn.execute(
            "INSERT INTO crm_writes (key, kind, state, crm_id, job_id, updated_at, amount, deductible, error)"
            " VALUES (?, 'gift', ?, ?, ?, ?, ?, ?, ?)"
            # the kept values named by their table: PostgreSQL finds a bare ``crm_id`` ambiguous beside ``excluded``
            " ON CONFLICT (key) DO UPDATE SET state = excluded.state, crm_id = coalesce(excluded.crm_id, crm_writes.crm_id),"
            " job_id = coalesce(excluded.job_id, crm_writes.job_id), updated_at = excluded.updated_at,"
            " amount = coalesce(excluded.amount, crm_writes.amount),"
            " deductible = coalesce(excluded.deductible, crm_writes.deductible), error = excluded.error",
            (external_id, state, None if crm_id is None else str(crm_id), job_id, store.iso(), amount, deductible, error),
        )


def money(value: object) -> str | None:
    """A CRM amount as the ledger keeps it ("80.00"), or None."""
    if value is None or value == "":
        return None
    return str(dollars(value))


def amounts_of(gift: JsonObject) -> tuple[object, object]:
    """A CRM gift's (received, deductible) amounts; LGL defaults the deductible amount to the received one."""
    received = gift.get("received_amount")
    deductible = gift.get("deductible_amount")
    return received, received if deductible is None else deductible


def record_amounts(work: Unit, external_id: str, received: Amount, deductible: Amount) -> None:
    """The amounts synctool just wrote to the gift of ``external_id`` (a refund's PATCH)."""
    _mark(work, external_id, "done", amounts=(received, deductible))


def record_deleted(work: Unit, external_id: str) -> None:
    """The gift of ``external_id`` was deleted from the CRM (a refund, by policy): it is never created again
    unless an operator forces it."""
    _mark(work, external_id, "deleted", amounts=(0, 0))


def already_made(conn: store.Connection, external_id: str, job: store.Row) -> Outcome | None:
    """The outcome of a job whose gift the ledger already holds (None when it does not, or the job is forced):
    succeeded when this very job wrote it (an earlier attempt cut short after the write, by ``kill -9`` say),
    else skipped, naming the gift."""
    done = recorded(conn, external_id)
    if done is None or done["state"] != "done" or job["force"]:
        return None
    if done["job_id"] == job["id"]:
        return Outcome(
            "succeeded", f"gift created (CRM gift {done['crm_id']}, written before this attempt)", crm_gift_id=done["crm_id"]
        )
    return Outcome("skipped", f"already synced as CRM gift {done['crm_id']}", crm_gift_id=done["crm_id"])


def find(crm: CrmClient, external_id: str) -> JsonObject | None:
    for gift in crm.find_gifts_by_external_id(external_id):
        if str(gift.get("external_id")) == external_id:
            return gift
    return None


def _adopt(crm: CrmClient, work: Unit, external_id: str, job_id: str | None) -> str | None:
    """The id of the CRM's gift with ``external_id``, recorded as done in the ledger; None if it has none."""
    existing = find(crm, external_id)
    if existing is None:
        return None
    return adopt(work, external_id, existing, job_id)


def adopt(work: Unit, external_id: str, gift: JsonObject, job_id: str | None = None) -> str:
    """Record the CRM's ``gift`` (found by its external id) as the ledger's, with its amounts; its id."""
    _mark(work, external_id, "done", gift["id"], job_id, amounts_of(gift))
    return str(gift["id"])


def create_once(
    crm: CrmClient,
    work: Unit,
    constituent_id: str,
    body: Mapping[str, object],
    *,
    job_id: str | None = None,
    force_lookup: bool = False,
    confirm_after_s: float = 120.0,
) -> tuple[str, bool]:
    """The CRM gift id for ``body['external_id']`` and whether this call created it. Raises ``Wait`` while
    another job writes the same gift, or while a lost answer is not yet due to be confirmed. In a job, ``work`` is
    its unit (``Job.unit``): the ledger commits at the points named here; outside one, an unbound ``Unit(conn)``."""
    external_id = str(body["external_id"])
    with work.lock_or_wait([f"gift:{external_id}"], f"another job is writing gift {external_id}; waiting for it"):
        found, created = _create_once(crm, work, constituent_id, body, job_id, force_lookup, confirm_after_s)
    if created:
        work.commit("after gift create")  # the ledger's done, the lock let go
    return found, created


def _create_once(
    crm: CrmClient,
    work: Unit,
    constituent_id: str,
    body: Mapping[str, object],
    job_id: str | None,
    force_lookup: bool,
    confirm_after_s: float,
) -> tuple[str, bool]:
    external_id = str(body["external_id"])
    conn = work.conn
    entry = recorded(conn, external_id)
    if entry is not None and entry["state"] == "done" and not force_lookup:
        return entry["crm_id"], False
    if entry is not None and entry["state"] == "deleted" and not force_lookup:
        raise Skip(f"gift {external_id} (CRM gift {entry['crm_id']}) was deleted after its refund; not created again")
    if entry is not None and entry["state"] in ("pending", "unconfirmed"):
        due = confirm_after_s - max(age_s(entry["updated_at"]) or 0.0, 0.0)
        if due > 0:
            raise Wait(f"gift {external_id} sent, waiting to confirm (searching the CRM for it in {due:.0f} s)", retry_after=due)
    if entry is not None or force_lookup:
        work.commit("before gift search")  # the lock, before the search the next write depends on
        found = _adopt(crm, work, external_id, job_id)
        if found is not None:
            return found, False
        if entry is not None and entry["state"] == "unconfirmed":
            _confirmed_absent(work, entry)
    _mark(work, external_id, "pending", job_id=job_id)
    work.commit("before gift create")  # the lock and the intent, before the write they guard
    try:
        gift = crm.create_gift(constituent_id, body)
    except UncertainWrite as exc:
        _mark(work, external_id, "unconfirmed", job_id=job_id, error=str(exc))
        work.commit("after gift create")
        raise Wait(
            f"gift {external_id} sent, waiting to confirm (the CRM's answer was lost: {exc}); "
            f"searching the CRM for it in {confirm_after_s:.0f} s",
            retry_after=confirm_after_s,
        ) from None
    except RemoteError as exc:
        if exc.status == 422 and "already exists" in str(exc).lower():
            found = _adopt(crm, work, external_id, job_id)
            if found is not None:
                return found, False
        # the CRM answered and refused: nothing was created, so no open intent is left to confirm
        with work.gather():
            conn.execute("DELETE FROM crm_writes WHERE key = ? AND state = 'pending'", (external_id,))
        raise
    received = body["received_amount"]
    _mark(work, external_id, "done", gift["id"], job_id, (received, body.get("deductible_amount", received)))
    return str(gift["id"]), True


def _confirmed_absent(work: Unit, entry: store.Row) -> None:
    """The search found no gift for a write whose answer was lost: that write failed. It is a failed attempt
    with the CRM's own error (so a CRM that refuses every POST fails the job after ``max_attempts``, one
    POST and one search each), and the next attempt writes afresh."""
    with work.gather() as conn:
        conn.execute("DELETE FROM crm_writes WHERE key = ? AND state = 'unconfirmed'", (entry["key"],))
    waited = age_s(entry["updated_at"]) or 0.0
    raise TransientError(
        f"gift {entry['key']} was not stored: {entry['error'] or 'the CRM did not answer'} "
        f"(the CRM had no such gift {waited:.0f} s later)"
    )


def for_person(
    crm: CrmClient,
    work: Unit,
    person: Person,
    body: Mapping[str, object],
    how: Matching,
    *,
    job_id: str,
    force: bool = False,
    confirm_after_s: float = 10.0,
) -> tuple[str, str, bool]:
    """Match or create the person's constituent by ``how`` (``constituents.match_or_create``), then create the gift
    once. A linked constituent the CRM no longer has (``constituents.is_gone``) is unlinked, dropped from the mirror,
    and the person matched again, once."""
    from synctool.crm import mirror
    from synctool.crm.constituents import is_gone, match_or_create, unlink
    from synctool.queue import jobs

    constituent_id, _ = match_or_create(crm, work, person, how)
    try:
        gift_id, created = create_once(
            crm, work, constituent_id, body, job_id=job_id, force_lookup=force, confirm_after_s=confirm_after_s
        )
    except RemoteError as exc:
        if not is_gone(exc):
            raise
        with work.gather() as conn:
            unlink(conn, person.email)
            mirror.forget(conn, constituent_id)
        constituent_id, _ = match_or_create(crm, work, person, how, use_link=False)
        gift_id, created = create_once(
            crm, work, constituent_id, body, job_id=job_id, force_lookup=True, confirm_after_s=confirm_after_s
        )
    with work.gather() as conn:  # commits at the job's end, with its row
        jobs.record_crm_ids(conn, job_id, constituent_id=constituent_id, gift_id=gift_id)
    return constituent_id, gift_id, created
