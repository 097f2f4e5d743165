"""Contact reports written to the CRM once per key, whatever the replays (monthly donors, issue 53: a failed, paused or
canceled plan followed up by staff; ``POST /constituents/{id}/contact_reports``, lgl-openapi.json).

LGL's contact reports carry no external id, so the ``crm_contact_reports`` ledger holds one row per key the caller
gives (``plan:<plan_id>:<event id>``), as invitations do (``crm/invitations.py``): ``pending`` (with the body about to
be sent) committed at the job's point ``before contact report create``, then ``done`` with LGL's id, or
``unconfirmed`` when the answer was lost. Each report's text ends with a marker line ``[synctool <key>]``, so a row
found ``pending`` (a job cut short between the create and the record) or ``unconfirmed`` (once ``crm.confirm_after_s``
has passed) is looked for among the constituent's reports (``GET /constituents/{id}/contact_reports``, one read) and
taken when one carries the marker, before anything is written again. A retried create sends the body recorded with
its intent, to the constituent recorded with it.

Cost: one request per report, none for a key already done, one read after an uncertain create. Preview mode: drain
runs the job on a copy of the database with a client that holds writes back (``crm/preview.py``); ``write_once``
then returns None (no CRM id).
"""

from __future__ import annotations

import json
from typing import TypedDict

from synctool import store
from synctool.crm import confirming
from synctool.crm.group_memberships import CrmJob
from synctool.crm.types import as_int as _int
from synctool.errors import RemoteError, UncertainWrite


class ReportBody(TypedDict, total=False):
    """``POST /constituents/{id}/contact_reports``: the text (ending with synctool's marker), its day, and the type
    and team member when known."""

    text: str
    original_date: str
    contact_report_type_id: int
    team_member: str


def marker(key: str) -> str:
    """The line that ends the text of the report written for ``key``: how a lost create is recognised."""
    return f"[synctool {key}]"


def recorded(conn: store.Connection, key: str) -> store.Row | None:
    return conn.execute("SELECT * FROM crm_contact_reports WHERE key = ?", (key,)).fetchone()


def for_plan(conn: store.Connection, plan_id: str) -> list[store.Row]:
    """The contact reports asked for a plan's events (keys ``plan:<plan_id>:...``), oldest first (``plans show``)."""
    prefix = f"plan:{plan_id}:"
    return conn.execute(
        "SELECT * FROM crm_contact_reports WHERE substr(key, 1, ?) = ? ORDER BY created_at, key", (len(prefix), prefix)
    ).fetchall()


def write_once(
    job: CrmJob,
    key: str,
    constituent_id: str,
    *,
    type_id: int | None,
    original_date: str,
    text: str,
    team_member: str | None,
) -> int | None:
    """POST /constituents/{id}/contact_reports once per key, whatever the replays. The text ends with a marker
    line "[synctool <key>]" so that after an uncertain create the job reads the constituent's contact reports
    (GET /constituents/{id}/contact_reports) and takes the one carrying the marker instead of writing again.
    Returns the CRM id (None when held in preview mode). Raises ``Wait`` while another job writes the same key, or
    while a lost answer is not yet due to be looked for."""
    row = recorded(job.conn, key)
    if row is not None and row["state"] == "done":
        return _shown(row["crm_report_id"])
    body: ReportBody = {"text": f"{text.rstrip()}\n\n{marker(key)}", "original_date": original_date}
    if type_id is not None:
        body["contact_report_type_id"] = int(type_id)
    if team_member:
        body["team_member"] = str(team_member)
    with job.unit.lock_or_wait([f"contact-report:{key}"], f"another job is writing contact report {key}; waiting for it"):
        found, wrote = _write(job, key, str(constituent_id), body)
    if wrote:
        job.unit.commit("after contact report create")  # done, the lock let go
    return _shown(found)


def _write(job: CrmJob, key: str, cid: str, body: ReportBody) -> tuple[int | None, bool]:
    """The report's CRM id, and whether this call wrote (or found) it."""
    row = recorded(job.conn, key)
    if row is not None and row["state"] == "done":
        return row["crm_report_id"], False  # another job wrote it while this one waited
    if row is not None:  # pending or unconfirmed: the intent recorded is what is looked for, and sent again
        _due(job, row)
        cid, body = row["constituent_id"], json.loads(row["body"])
        # the marker is the text's last line: a donor's name or words carrying one elsewhere adopt nothing
        found = next((r for r in job.crm.contact_reports(cid) if str(r.get("text") or "").rstrip().endswith(marker(key))), None)
        if found is not None:
            _save(job, key, cid, state="done", crm_report_id=_int(found.get("id")), error=None, written_at=store.iso())
            return _int(found.get("id")), True
    _save(job, key, cid, state="pending", body=json.dumps(body), job_id=job.id, error=None)
    job.unit.commit("before contact report create")  # the lock and the intent, before the write they guard
    try:
        made = job.crm.add_contact_report(cid, body)
    except UncertainWrite as exc:
        _save(job, key, cid, state="unconfirmed", error=str(exc), written_at=store.iso())  # when it was sent
        job.unit.commit("after contact report create")
        raise confirming.answer_lost(f"contact report {key}", exc, job.config.crm.confirm_after_s) from None
    except RemoteError:
        with job.unit.gather() as conn:  # refused: nothing was made, no intent is left open
            conn.execute("DELETE FROM crm_contact_reports WHERE key = ? AND state = 'pending'", (key,))
        raise
    found_id = _int(made.get("id")) if isinstance(made, dict) else None
    _save(job, key, cid, state="done", crm_report_id=found_id, written_at=store.iso())
    return found_id, True


def _save(job: CrmJob, key: str, cid: str, /, **values: object) -> None:
    with job.unit.gather() as conn:
        if recorded(conn, key) is None:
            values = {"constituent_id": cid, "created_at": store.iso(), **values}
        store.put_row(conn, "crm_contact_reports", {"key": key}, values)


def _due(job: CrmJob, row: store.Row) -> None:
    """A create whose answer was lost is looked for once ``crm.confirm_after_s`` has passed since it was sent (an
    ``unconfirmed`` row's ``written_at``)."""
    if row["state"] == "unconfirmed":
        confirming.wait_until_due(
            f"contact report {row['key']}", row["written_at"] or row["created_at"], job.config.crm.confirm_after_s
        )


def _shown(crm_id: str | int | None) -> int | None:
    """The CRM id a caller sees: None for a report held in preview mode (the preview client's ids are negative)."""
    found = _int(crm_id)
    return None if found is None or found < 0 else found
