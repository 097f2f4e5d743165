"""A constituent's membership of a CRM group, started and ended exactly once (monthly donors, issue 53:
``POST /constituents/{id}/group_memberships``, ``PATCH /group_memberships/{id}``, lgl-openapi.json).

LGL's group memberships carry no external id, so the ``crm_group_memberships`` ledger is what synctool wrote: one row
per (constituent, group), as invitations do (``crm/invitations.py``). A row is

- ``pending`` while its create is sent (committed at the job's point ``before group membership create``, so a job
  cut short between the create and the record finds it),
- ``unconfirmed`` when the create's answer was lost (a timeout, a 5xx after sending),
- ``current`` with LGL's membership id once the CRM answered,
- ``ending`` while the PATCH that ends it is sent, and ``ended`` after it.

A row found ``pending`` or ``unconfirmed`` (the latter once ``crm.confirm_after_s`` has passed, as for gifts) is
looked for before anything is written again: the constituent's memberships are read once
(``GET /constituents/{id}/group_memberships``) and a current membership of that group is taken as the one synctool
made. A membership synctool did not start (staff's own) is never ended by it.

Cost: one request per membership started or ended, none when the ledger says it is done already, and one read after an
uncertain create (or after a create whose answer carried no id: see ``_made_id``). Preview mode needs nothing of its
own here: drain runs a preview job on a copy of the database with a client that holds writes back
(``crm/preview.py``), so the ledger rows go with the copy and no write leaves the machine.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from synctool import store
from synctool.config import Config
from synctool.crm import confirming
from synctool.crm.client import CrmClient
from synctool.crm.types import JsonObject
from synctool.crm.types import as_int as _int
from synctool.crm.types import same_id as _same
from synctool.errors import RemoteError, UncertainWrite
from synctool.queue.unit import Unit

#: the states of a ledger row that stand for a membership synctool holds open in the CRM (or may: pending, unconfirmed)
OPEN = ("pending", "unconfirmed", "current", "ending")


class CrmJob(Protocol):
    """What these writes need of the running job (``synctool.platforms.job.Job`` is one): its CRM client, its
    connection, its unit of work, the config and its id. A protocol, since ``crm`` stands below ``platforms``."""

    @property
    def crm(self) -> CrmClient: ...
    @property
    def conn(self) -> store.Connection: ...
    @property
    def unit(self) -> Unit: ...
    @property
    def config(self) -> Config: ...
    @property
    def id(self) -> str: ...


def recorded(conn: store.Connection, constituent_id: str, group_id: int) -> store.Row | None:
    """The ledger's row for one constituent in one group, or None."""
    return conn.execute(
        "SELECT * FROM crm_group_memberships WHERE constituent_id = ? AND group_id = ?", (str(constituent_id), int(group_id))
    ).fetchone()


def current(conn: store.Connection, group_id: int) -> list[store.Row]:
    """The group's memberships synctool holds open (``current``, and ``pending``/``unconfirmed``/``ending`` ones still
    being written), by constituent: what reconcile and the figures compare with the plans."""
    marks = ",".join("?" * len(OPEN))
    return conn.execute(
        f"SELECT * FROM crm_group_memberships WHERE group_id = ? AND state IN ({marks}) ORDER BY constituent_id",
        (int(group_id), *OPEN),
    ).fetchall()


def start(job: CrmJob, constituent_id: str, group_id: int, date_start: str) -> str:
    """Make the constituent a current member of the group from ``date_start`` (YYYY-MM-DD). Returns "started",
    "started again" (a new membership after an ended one) or "already" (nothing written: 0 CRM requests when the
    ledger says current). After an uncertain create (timeout, 5xx after send, a crash between the create and the
    record: state 'pending' found at the start), reads GET /constituents/{id}/group_memberships once and takes a
    current membership of that group as ours before writing again. Raises ``Wait`` while another job writes the same
    membership, or while a lost answer is not yet due to be looked for."""
    cid, gid = str(constituent_id), int(group_id)
    row = recorded(job.conn, cid, gid)
    if row is not None and row["state"] == "current":
        return "already"
    with _locked(job, cid, gid):
        said = _start(job, cid, gid, date_start)
    if said != "already":
        job.unit.commit("after group membership create")  # current, the lock let go
    return said


def end(job: CrmJob, constituent_id: str, group_id: int, date_end: str) -> str:
    """End the membership synctool started: PATCH /group_memberships/{id} {date_end, is_current: false}.
    Returns "ended" or "already" / "none" (nothing to end). ``date_end`` is never before the membership's start."""
    cid, gid = str(constituent_id), int(group_id)
    row = recorded(job.conn, cid, gid)
    if row is None:
        return "none"
    if row["state"] == "ended":
        return "already"
    with _locked(job, cid, gid):
        said = _end(job, cid, gid, date_end)
    if said == "ended":
        job.unit.commit("after group membership end")
    return said


def not_in_crm(conn: store.Connection, constituent_id: str, group_id: int) -> None:
    """What reconcile read (``reconcile --plans --fix``): the CRM holds no current membership where the ledger says
    ``current`` (a person ended or removed it there). Recorded as ended, so the next ``start`` writes a new one instead
    of finding it written. Inside the caller's transaction."""
    conn.execute(
        "UPDATE crm_group_memberships SET state = 'ended', error = ?, updated_at = ?"
        " WHERE constituent_id = ? AND group_id = ? AND state = 'current'",
        ("not current in the CRM (reconcile --plans)", store.iso(), str(constituent_id), int(group_id)),
    )


# -- the writes -----------------------------------------------------------------------------------------------


def _locked(job: CrmJob, cid: str, gid: int) -> AbstractContextManager[None]:
    """One writer per (constituent, group) across threads and processes, inside the job's unit (``Unit.lock``)."""
    busy = f"another job is writing constituent {cid}'s membership of group {gid}; waiting for it"
    return job.unit.lock_or_wait([f"group-membership:{gid}:{cid}"], busy)


def _start(job: CrmJob, cid: str, gid: int, date_start: str) -> str:
    row = recorded(job.conn, cid, gid)
    if row is not None and row["state"] == "current":
        return "already"  # another job started it while this one waited
    if row is not None and row["state"] == "ending":  # its end was sent, its answer lost: did it land?
        theirs = _read(job, cid)
        still = next((m for m in theirs if _same(m.get("id"), row["crm_membership_id"]) and m.get("is_current")), None)
        if still is not None:
            _save(job, cid, gid, state="current", date_end=None)
            return "already"
        _save(job, cid, gid, state="ended")
        row = recorded(job.conn, cid, gid)
    if row is not None and row["state"] in ("pending", "unconfirmed"):
        _due(job, row)
        found = current_in(_read(job, cid), gid)
        # ours only if it starts the day ours was to start: a membership staff made by hand is never adopted (and so
        # never ended by synctool)
        if found is not None and str(found.get("date_start") or "")[:10] == str(row["date_start"])[:10]:
            _save(job, cid, gid, state="current", crm_membership_id=_int(found.get("id")), error=None,
                  date_start=found.get("date_start") or row["date_start"])  # fmt: skip
            return "started"
    return _create(job, cid, gid, date_start, row)


def _create(job: CrmJob, cid: str, gid: int, date_start: str, before: store.Row | None) -> str:
    again = before is not None and before["state"] == "ended"
    _save(job, cid, gid, state="pending", crm_membership_id=None, date_start=date_start, date_end=None, job_id=job.id,
          error=None)  # fmt: skip
    job.unit.commit("before group membership create")  # the lock and the intent, before the write they guard
    try:
        made = job.crm.add_to_group(cid, {"group_id": gid, "date_start": date_start, "is_current": True})
    except UncertainWrite as exc:
        _save(job, cid, gid, state="unconfirmed", error=str(exc))
        job.unit.commit("after group membership create")
        what = f"constituent {cid}'s membership of group {gid}"
        raise confirming.answer_lost(what, exc, job.config.crm.confirm_after_s) from None
    except RemoteError:
        _restore(job, cid, gid, before)  # refused: nothing was made, no intent is left open
        raise
    found = _made_id(job, cid, gid, made)
    _save(job, cid, gid, state="current", crm_membership_id=found)
    return "started again" if again else "started"


def _made_id(job: CrmJob, cid: str, gid: int, made: object) -> int | None:
    """The new membership's id: from the create's answer when it has one, else from one read of the constituent's
    memberships. Unconfirmed fact: LGL documents the create's answer as "200 Ok" with no body, so whether it returns the
    membership (as its other creates return theirs) is not known; None when even the read does not show it (``end``
    looks again)."""
    found = _int(made.get("id")) if isinstance(made, dict) else None
    if found is not None:
        return found
    membership = current_in(_read(job, cid), gid)
    return None if membership is None else _int(membership.get("id"))


def _end(job: CrmJob, cid: str, gid: int, date_end: str) -> str:
    row = recorded(job.conn, cid, gid)
    if row is None:
        return "none"
    if row["state"] == "ended":
        return "already"
    mid = row["crm_membership_id"]
    if row["state"] in ("pending", "unconfirmed") or mid is None:  # an uncertain create: did it land?
        if row["state"] == "unconfirmed":
            _due(job, row)
        found = current_in(_read(job, cid), gid)
        if found is None or _int(found.get("id")) is None:  # it did not: nothing to end, and the next start writes anew
            with job.unit.gather() as conn:
                conn.execute("DELETE FROM crm_group_memberships WHERE constituent_id = ? AND group_id = ?", (cid, gid))
            return "none"
        mid = _int(found.get("id"))
        _save(job, cid, gid, state="current", crm_membership_id=mid, error=None)
    end_on = max(str(date_end), str(row["date_start"] or ""))  # LGL's end is never before its start
    _save(job, cid, gid, state="ending", date_end=end_on, job_id=job.id)
    job.unit.commit("before group membership end")
    try:
        # the PATCH is retried by the client as any idempotent request; one that failed for good leaves the row
        # ``ending``, and the next end (or start) sends it again (or reads whether it landed)
        job.crm.update_group_membership(mid, {"group_id": gid, "date_end": end_on, "is_current": False})
    except RemoteError as exc:
        if exc.status != 404:  # gone (staff deleted it): ended is what was wanted
            _save(job, cid, gid, state="current", date_end=None)
            raise
    _save(job, cid, gid, state="ended", error=None)
    return "ended"


# -- the ledger -----------------------------------------------------------------------------------------------


def _save(job: CrmJob, cid: str, gid: int, /, **values: object) -> None:
    """Record what is known of one membership: the values given change, the others stay (gathered in the job's unit)."""
    with job.unit.gather() as conn:
        store.put_row(
            conn, "crm_group_memberships", {"constituent_id": cid, "group_id": gid}, values | {"updated_at": store.iso()}
        )


def _restore(job: CrmJob, cid: str, gid: int, before: store.Row | None) -> None:
    """The ledger's row as it was before a create the CRM refused."""
    with job.unit.gather() as conn:
        conn.execute("DELETE FROM crm_group_memberships WHERE constituent_id = ? AND group_id = ?", (cid, gid))
        if before is not None:
            row = dict(before)
            conn.execute(
                f"INSERT INTO crm_group_memberships ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values())
            )


def _due(job: CrmJob, row: store.Row) -> None:
    """A create whose answer was lost is looked for only once ``crm.confirm_after_s`` has passed (a slow CRM may store
    it after the client gave up); a ``pending`` one (a job cut short) is looked for at once."""
    if row["state"] == "unconfirmed":
        what = f"constituent {row['constituent_id']}'s membership of group {row['group_id']}"
        confirming.wait_until_due(what, row["updated_at"], job.config.crm.confirm_after_s)


def _read(job: CrmJob, cid: str) -> list[JsonObject]:
    return job.crm.list_group_memberships(cid)


def current_in(memberships: list[JsonObject], gid: int) -> JsonObject | None:
    """The constituent's current membership of the group (the newest, when LGL holds more than one)."""
    found = [
        m for m in memberships if _same(m.get("group_id"), gid) and m.get("is_current") is not False and not m.get("date_end")
    ]
    return max(found, key=lambda m: _int(m.get("id")) or 0) if found else None
