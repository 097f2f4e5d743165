"""Monthly donors' CRM writes, exactly once (issue 53): a donor's group membership started and ended
(``crm.group_memberships``) and a plan's follow-up contact report (``crm.contact_reports``), over the LGL fake. One
request a write, none when the ledger says it is done, one read after an uncertain create (a lost answer, a 500 after
the CRM stored it, a job killed between the create and the record), never a second write; nothing in preview mode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from synctool import store
from synctool.crm import contact_reports, group_memberships
from synctool.errors import RemoteError, Wait
from synctool.platforms.job import Job
from synctool.platforms.runner import runner
from tests.helpers import runtime

GROUP = 704  # the fake's "Monthly Donors"
START, END = "2026-01-15", "2026-06-30"


class Killed(BaseException):
    """``kill -9`` at a commit point: what the job gathered since its last point is gone."""


@contextmanager
def running(*, preview: bool = False, killed_at: str | None = None, job_id: str = "plan-job-1") -> Iterator[Job]:
    """A job as drain runs one (its unit bound to its connection, committed at its end whatever happened), on the test's
    database, or on a copy of it in preview mode; ``killed_at`` names a commit point the job dies at."""
    rt = runtime()
    jobs_runner = runner(rt)
    jobs_runner.preview = preview
    conn = rt.open_database()
    work_on = store.snapshot(conn) if preview else conn
    job = jobs_runner.context({"id": job_id, "force": 0, "source": "donations"}, work_on, "test-owner", store.iso())  # type: ignore[arg-type]
    if killed_at is not None:
        commit = job.unit.commit

        def dying(point: str) -> bool:
            if point == killed_at:
                raise Killed(point)
            return commit(point)

        job.unit.commit = dying  # type: ignore[method-assign]
    try:
        with job.unit.bind():
            try:
                yield job
            except Killed:
                raise  # nothing more commits: the unit's binding rolls back what was gathered
            except BaseException:
                job.unit.commit("job end")  # a job that failed or waits records its end, as drain does
                raise
            job.unit.commit("job end")
    finally:
        jobs_runner.close()
        if work_on is not conn:
            work_on.close()
        conn.close()


def lapse(db) -> None:
    """The dead job's lease and locks lapse (as a killed drain's do)."""
    with store.atomic(db):
        db.execute("UPDATE locks SET expires = 0")


def run(call, **kwargs: Any) -> Any:
    with running(**kwargs) as job:
        return call(job)


@pytest.fixture
def donor(world, env) -> str:
    env["CRM_CONFIRM_AFTER_S"] = "0"  # a lost answer is looked for at the next attempt
    return str(world.crm.create_constituent({"first_name": "Pat", "last_name": "Example"})["id"])


def sent(world, mark: int) -> list[tuple[str, str]]:
    return [(r["method"], r["path"].removeprefix("/api/v1")) for r in world.crm.requests[mark:]]


def memberships(world, cid: str) -> list[dict]:
    return [m for m in world.crm.group_memberships.values() if str(m["constituent_id"]) == cid]


def ledger(db, cid: str) -> dict:
    row = group_memberships.recorded(db, cid, GROUP)
    return {} if row is None else dict(row)


# -- group memberships --------------------------------------------------------------------------------------


def test_start_and_end_write_one_request_each_and_a_repeat_writes_nothing(world, donor, db):
    mark = len(world.crm.requests)
    with running() as job:
        assert group_memberships.start(job, donor, GROUP, START) == "started"
        assert job.unit.points == ["before group membership create", "after group membership create"]
    assert sent(world, mark) == [("POST", f"/constituents/{donor}/group_memberships")]
    [made] = memberships(world, donor)
    assert made["is_current"] is True and made["date_start"] == START and made["group_name"] == "Monthly Donors"
    assert ledger(db, donor)["state"] == "current" and ledger(db, donor)["crm_membership_id"] == made["id"]

    mark = len(world.crm.requests)
    assert run(lambda job: group_memberships.start(job, donor, GROUP, START)) == "already"
    assert sent(world, mark) == []  # a charge of a donor already in the group costs nothing

    assert run(lambda job: group_memberships.end(job, donor, GROUP, END)) == "ended"
    assert sent(world, mark) == [("PATCH", f"/group_memberships/{made['id']}")]
    assert world.crm.group_memberships[made["id"]]["is_current"] is False
    assert world.crm.group_memberships[made["id"]]["date_end"] == END
    mark = len(world.crm.requests)
    assert run(lambda job: group_memberships.end(job, donor, GROUP, END)) == "already"
    assert run(lambda job: group_memberships.end(job, "959000", GROUP, END)) == "none"
    assert sent(world, mark) == []

    # giving monthly again: a new membership, the old one stays ended
    assert run(lambda job: group_memberships.start(job, donor, GROUP, "2026-09-01")) == "started again"
    assert sent(world, mark) == [("POST", f"/constituents/{donor}/group_memberships")]
    assert sorted((m["is_current"], m["date_start"]) for m in memberships(world, donor)) == [
        (False, START),
        (True, "2026-09-01"),
    ]
    assert [r["constituent_id"] for r in group_memberships.current(db, GROUP)] == [donor]


def test_an_end_is_never_dated_before_its_start(world, donor, db):
    run(lambda job: group_memberships.start(job, donor, GROUP, START))
    assert run(lambda job: group_memberships.end(job, donor, GROUP, "2026-01-10")) == "ended"
    [made] = memberships(world, donor)
    assert made["date_end"] == START and ledger(db, donor)["date_end"] == START


@pytest.mark.parametrize("mode", ["commit_500", "commit_timeout"])
def test_a_lost_create_is_found_by_one_read_not_written_twice(world, donor, db, mode):
    world.crm.faults.append({"mode": mode, "count": 1, "method": "POST", "path": "/group_memberships"})
    with pytest.raises(Wait):
        run(lambda job: group_memberships.start(job, donor, GROUP, START))
    assert ledger(db, donor)["state"] == "unconfirmed" and len(memberships(world, donor)) == 1
    mark = len(world.crm.requests)
    assert run(lambda job: group_memberships.start(job, donor, GROUP, START)) == "started"
    assert sent(world, mark) == [("GET", f"/constituents/{donor}/group_memberships")]
    [made] = memberships(world, donor)
    assert ledger(db, donor)["state"] == "current" and ledger(db, donor)["crm_membership_id"] == made["id"]


def test_a_lost_create_is_not_looked_for_before_it_is_due(world, donor, db, env):
    env["CRM_CONFIRM_AFTER_S"] = "60"
    world.crm.faults.append({"mode": "commit_500", "count": 1, "method": "POST", "path": "/group_memberships"})
    with pytest.raises(Wait):
        run(lambda job: group_memberships.start(job, donor, GROUP, START))
    mark = len(world.crm.requests)
    with pytest.raises(Wait, match="waiting to confirm"):
        run(lambda job: group_memberships.start(job, donor, GROUP, START))
    assert sent(world, mark) == []


def test_a_job_killed_between_the_create_and_the_record_takes_what_it_made(world, donor, db):
    with pytest.raises(Killed):
        run(lambda job: group_memberships.start(job, donor, GROUP, START), killed_at="after group membership create")
    lapse(db)
    assert ledger(db, donor)["state"] == "pending" and len(memberships(world, donor)) == 1
    mark = len(world.crm.requests)
    assert run(lambda job: group_memberships.start(job, donor, GROUP, START)) == "started"
    assert sent(world, mark) == [("GET", f"/constituents/{donor}/group_memberships")]
    assert len(memberships(world, donor)) == 1 and ledger(db, donor)["state"] == "current"


def test_a_job_killed_before_its_create_was_sent_writes_it_once(world, donor, db):
    with pytest.raises(Killed):
        run(lambda job: group_memberships.start(job, donor, GROUP, START), killed_at="before group membership create")
    lapse(db)
    assert ledger(db, donor) == {} and memberships(world, donor) == []  # the intent had not committed
    with store.atomic(db):  # a job cut short just after its intent committed, before the POST left
        db.execute(
            "INSERT INTO crm_group_memberships (constituent_id, group_id, date_start, state, updated_at)"
            " VALUES (?, ?, ?, 'pending', ?)",
            (donor, GROUP, START, store.iso()),
        )
    mark = len(world.crm.requests)
    assert run(lambda job: group_memberships.start(job, donor, GROUP, START)) == "started"
    assert sent(world, mark) == [
        ("GET", f"/constituents/{donor}/group_memberships"),
        ("POST", f"/constituents/{donor}/group_memberships"),
    ]
    assert len(memberships(world, donor)) == 1


def test_an_end_cut_short_is_sent_again_and_a_lost_create_that_never_landed_has_nothing_to_end(world, donor, db):
    run(lambda job: group_memberships.start(job, donor, GROUP, START))
    with pytest.raises(Killed):
        run(lambda job: group_memberships.end(job, donor, GROUP, END), killed_at="after group membership end")
    lapse(db)
    assert ledger(db, donor)["state"] == "ending"
    mark = len(world.crm.requests)
    assert run(lambda job: group_memberships.end(job, donor, GROUP, END)) == "ended"
    [made] = memberships(world, donor)
    assert sent(world, mark) == [("PATCH", f"/group_memberships/{made['id']}")]  # the same PATCH: idempotent
    assert made["is_current"] is False and ledger(db, donor)["state"] == "ended"

    other = str(world.crm.create_constituent({"first_name": "Lee", "last_name": "Example"})["id"])
    world.crm.faults.append({"mode": "500", "count": 1, "method": "POST", "path": "/group_memberships"})
    with pytest.raises(Wait):  # a 500 without the write: uncertain all the same
        run(lambda job: group_memberships.start(job, other, GROUP, START))
    mark = len(world.crm.requests)
    assert run(lambda job: group_memberships.end(job, other, GROUP, END)) == "none"
    assert sent(world, mark) == [("GET", f"/constituents/{other}/group_memberships")]
    assert ledger(db, other) == {} and memberships(world, other) == []


def test_a_create_answered_without_its_id_is_read_back_once(world, donor, db):
    world.crm.bare_group_membership_answer = True
    mark = len(world.crm.requests)
    assert run(lambda job: group_memberships.start(job, donor, GROUP, START)) == "started"
    assert sent(world, mark) == [
        ("POST", f"/constituents/{donor}/group_memberships"),
        ("GET", f"/constituents/{donor}/group_memberships"),
    ]
    [made] = memberships(world, donor)
    assert ledger(db, donor)["crm_membership_id"] == made["id"]


def test_a_refused_create_leaves_no_intent(world, donor, db):
    with pytest.raises(RemoteError) as refused:
        run(lambda job: group_memberships.start(job, donor, 999, START))
    assert refused.value.status == 422 and group_memberships.recorded(db, donor, 999) is None


# -- contact reports ----------------------------------------------------------------------------------------


def report(job: Job, cid: str, key: str = "plan:VV2WktbU5v9bkzIH:evt-1", **kwargs: Any) -> int | None:
    values: dict[str, Any] = {"type_id": 2183, "original_date": "2026-03-02", "team_member": "nick@example.org"}
    text = "Monthly plan VV2WktbU5v9bkzIH (10.00 USD monthly) failed; last charge 2026-02-02."
    return contact_reports.write_once(job, key, cid, text=text, **(values | kwargs))


def test_a_contact_report_is_written_once_per_key_whatever_the_replays(world, donor, db):
    mark = len(world.crm.requests)
    with running() as job:
        made = report(job, donor)
        assert job.unit.points == ["before contact report create", "after contact report create"]
    assert sent(world, mark) == [("POST", f"/constituents/{donor}/contact_reports")]
    stored = world.crm.contact_reports[made]
    assert stored["contact_report_type_name"] == "Call" and stored["team_member"] == "Nick Bicknell"
    assert stored["original_date"] == "2026-03-02" and stored["text"].endswith("\n\n[synctool plan:VV2WktbU5v9bkzIH:evt-1]")
    mark = len(world.crm.requests)
    for _ in range(3):
        assert run(lambda job: report(job, donor)) == made
    assert sent(world, mark) == [] and len(world.crm.contact_reports) == 1
    row = contact_reports.recorded(db, "plan:VV2WktbU5v9bkzIH:evt-1")
    assert row["state"] == "done" and row["crm_report_id"] == made and json.loads(row["body"])["text"] == stored["text"]


@pytest.mark.parametrize("mode", ["commit_500", "commit_timeout"])
def test_a_lost_contact_report_is_found_by_its_marker_not_written_twice(world, donor, db, mode):
    staff = world.crm.new_id()  # staff's own report on the same donor is not taken for it
    world.crm.contact_reports[staff] = {"id": staff, "constituent_id": int(donor), "text": "Called Pat about the gala."}
    world.crm.faults.append({"mode": mode, "count": 1, "method": "POST", "path": "/contact_reports"})
    with pytest.raises(Wait):
        run(lambda job: report(job, donor))
    assert contact_reports.recorded(db, "plan:VV2WktbU5v9bkzIH:evt-1")["state"] == "unconfirmed"
    mark = len(world.crm.requests)
    made = run(lambda job: report(job, donor))
    assert made is not None and made != staff and len(world.crm.contact_reports) == 2
    assert sent(world, mark) == [("GET", f"/constituents/{donor}/contact_reports")]
    assert run(lambda job: report(job, donor)) == made


def test_a_job_killed_between_the_report_and_the_record_takes_what_it_wrote(world, donor, db):
    with pytest.raises(Killed):
        run(lambda job: report(job, donor), killed_at="after contact report create")
    lapse(db)
    assert contact_reports.recorded(db, "plan:VV2WktbU5v9bkzIH:evt-1")["state"] == "pending"
    mark = len(world.crm.requests)
    [written] = world.crm.contact_reports
    assert run(lambda job: report(job, donor)) == written
    assert sent(world, mark) == [("GET", f"/constituents/{donor}/contact_reports")]
    # one cut short before its POST left is written once, after the read finds nothing
    with pytest.raises(Killed):
        run(lambda job: report(job, donor, key="plan:VV2WktbU5v9bkzIH:evt-2"), killed_at="after contact report create")
    lapse(db)
    world.crm.contact_reports.pop(max(world.crm.contact_reports))  # as though the POST had not reached LGL
    mark = len(world.crm.requests)
    again = run(lambda job: report(job, donor, key="plan:VV2WktbU5v9bkzIH:evt-2"))
    assert again in world.crm.contact_reports and len(world.crm.contact_reports) == 2
    assert [m for m, _ in sent(world, mark)] == ["GET", "POST"]


def test_a_refused_report_leaves_no_intent_and_for_plan_lists_a_plans_reports(world, donor, db):
    with pytest.raises(RemoteError):
        run(lambda job: report(job, donor, team_member="nobody@example.org"))
    assert contact_reports.recorded(db, "plan:VV2WktbU5v9bkzIH:evt-1") is None
    run(lambda job: report(job, donor, key="plan:P1:evt-1", type_id=None, team_member=None))
    run(lambda job: report(job, donor, key="plan:P1:evt-2"))
    run(lambda job: report(job, donor, key="plan:P12:evt-1"))
    run(lambda job: report(job, donor, key="plan:P_:evt-1"))
    assert [r["key"] for r in contact_reports.for_plan(db, "P1")] == ["plan:P1:evt-1", "plan:P1:evt-2"]
    assert [r["key"] for r in contact_reports.for_plan(db, "P_")] == ["plan:P_:evt-1"]
    untyped = world.crm.contact_reports[contact_reports.for_plan(db, "P1")[0]["crm_report_id"]]
    assert untyped["contact_report_type_id"] is None and untyped["team_member"] is None


# -- preview ------------------------------------------------------------------------------------------------


def test_preview_writes_nothing(world, donor, db):
    mark = len(world.crm.requests)
    with running(preview=True) as job:
        assert group_memberships.start(job, donor, GROUP, START) == "started"
        assert group_memberships.start(job, donor, GROUP, START) == "already"
        assert group_memberships.end(job, donor, GROUP, END) == "ended"
        assert report(job, donor) is None
        held = [(w["method"], w["path"]) for w in job.runner.plan()]
    # the plan a previewed job shows: each write once, the membership ended by the id the preview client gave it
    assert held == [
        ("POST", f"/constituents/{donor}/group_memberships"),
        ("PATCH", "/group_memberships/-1"),
        ("POST", f"/constituents/{donor}/contact_reports"),
    ]
    assert sent(world, mark) == [] and memberships(world, donor) == [] and world.crm.contact_reports == {}
    assert ledger(db, donor) == {} and contact_reports.recorded(db, "plan:VV2WktbU5v9bkzIH:evt-1") is None


# -- the reference lists ------------------------------------------------------------------------------------


def test_crm_refresh_caches_contact_report_types_and_team_members(world, cli):
    counts = json.loads(cli("crm", "refresh", "--json").stdout)
    assert counts["contact-report-types"] == 6 and counts["team-members"] == 2
    types = json.loads(cli("crm", "list", "contact-report-types", "--json").stdout)
    assert [(t["id"], t["name"]) for t in types][:2] == [(2183, "Call"), (2184, "Email")]
    members = json.loads(cli("crm", "list", "team-members", "--json").stdout)
    assert [(m["name"], m["email"]) for m in members] == [
        ("Tom Talbott", "tom@example.org"),
        ("Nick Bicknell", "nick@example.org"),
    ]
    table = cli("crm", "list", "team-members").stdout
    assert "Nick Bicknell" in table
    assert ("GET", "/types/contact_report_types") in sent(world, 0) and ("GET", "/team_members") in sent(world, 0)
