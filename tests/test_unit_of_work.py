"""A job has one unit of work (docs/developers.md, "A job's commits"): a gift job's local writes gather and commit at
named points around its CRM writes, at most two a write and one at its end, and a job killed at any point still
ends with one gift and one donor."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from synctool import store
from synctool.crm import gifts
from synctool.fakes import samples
from synctool.platforms.job import Job
from synctool.platforms.runner import runner
from synctool.queue import unit, worker
from tests.flow_helpers import give, run_drain
from tests.helpers import runtime
from tests.test_portal import portal  # noqa: F401,F811  (the fixture)

NEW_DONOR = ["before mirror refresh", "before constituent create", "before gift create", "after gift create", "job end"]
KNOWN_DONOR = ["before gift create", "after gift create", "job end"]


class Killed(BaseException):
    """``kill -9`` at a commit point: what the job gathered since the last point is gone."""


def run_counted(job_id: str) -> tuple[int, Job]:
    """Run one queued job as drain runs it, counting the COMMITs on its connection from its start (after the claim)."""
    rt = runtime()
    jobs_runner = runner(rt)
    seen: list[str] = []
    ran: list[Job] = []
    context = jobs_runner.context

    def counting(row: Any, conn: Any, owner: str, run_started: str) -> Job:
        job = context(row, conn, owner, run_started)
        conn.set_trace_callback(seen.append)
        ran.append(job)
        return job

    jobs_runner.context = counting  # type: ignore[method-assign]
    conn = rt.open_database(migrate=False)
    try:
        worker.run_now(jobs_runner, conn, job_id)
    finally:
        conn.set_trace_callback(None)
        conn.close()
    return sum(statement.strip().upper() == "COMMIT" for statement in seen), ran[0]


def crm_writes(world: Any, since: int) -> int:
    return sum(r["method"] in ("POST", "PUT", "PATCH", "DELETE") for r in world.crm.requests[since:])


def no_request_inside_a_change(caplog: pytest.LogCaptureFixture) -> bool:
    """No request was sent while a change was half made (the database would have stayed locked while it waited)."""
    return not [r for r in caplog.records if r.name == "synctool.unit"]


def test_a_new_donors_gift_commits_at_most_twice_a_crm_write_and_once_more(coded, receiver, db, caplog):
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    queued = give(receiver, txn)
    before = len(coded.crm.requests)
    commits, job = run_counted(queued["job_id"])
    writes = crm_writes(coded, before)
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (queued["job_id"],)).fetchone()[0] == "succeeded"
    assert writes == 2  # the constituent, the gift
    assert job.unit.points == NEW_DONOR
    assert commits == len(NEW_DONOR) <= 2 * writes + 1  # 26 store.atomic commits before the unit of work
    assert no_request_inside_a_change(caplog)


def test_a_known_donors_gift_commits_three_times(coded, receiver, db, caplog):
    first = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    give(receiver, first)
    run_drain()
    again = {**copy.deepcopy(first), "id": "SecondGiftOfAda", "number": "2"}
    queued = give(receiver, again)
    before = len(coded.crm.requests)
    commits, job = run_counted(queued["job_id"])
    assert crm_writes(coded, before) == 1
    assert job.unit.points == KNOWN_DONOR
    assert commits == len(KNOWN_DONOR)
    assert len(coded.crm.gifts) == 2 and len(coded.crm.constituents) == 1
    assert no_request_inside_a_change(caplog)


@pytest.mark.parametrize("point", NEW_DONOR)
def test_a_job_killed_at_any_point_ends_with_one_gift_and_one_donor(coded, receiver, db, env, monkeypatch, point):
    env["CRM_CONFIRM_AFTER_S"] = "0"  # a write whose answer the kill lost is searched for at once
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    queued = give(receiver, txn)
    commit = unit.Unit.commit

    def kill_at(self: unit.Unit, name: str) -> bool:
        if name == point and self.bound:
            self.abandon()
            raise Killed(name)
        return commit(self, name)

    monkeypatch.setattr(unit.Unit, "commit", kill_at)
    with pytest.raises(Killed):
        run_counted(queued["job_id"])
    monkeypatch.setattr(unit.Unit, "commit", commit)
    # the dead drain's lease and locks lapse
    with store.atomic(db):
        db.execute("UPDATE jobs SET lease_expires = '2000-01-01T00:00:00Z' WHERE status = 'running'")
        db.execute("UPDATE locks SET expires = 0")
    run_drain()
    row = db.execute("SELECT status, message, crm_gift_id FROM jobs WHERE id = ?", (queued["job_id"],)).fetchone()
    assert row["status"] == "succeeded", dict(row)
    assert Counter(g["external_id"] for g in coded.crm.gifts.values()) == {f"donations_{txn['id']}": 1}
    assert len(coded.crm.constituents) == 1
    [gift] = coded.crm.gifts.values()
    assert row["crm_gift_id"] == str(gift["id"])
    assert db.execute("SELECT count(*) FROM locks WHERE expires > 0").fetchone()[0] == 0


def test_a_known_donors_new_phone_added_at_once_commits_at_the_units_points(coded, receiver, db, cli, caplog):
    """``donors.updates: add``: the proposed change commits before the CRM write that applies it, the answer after it;
    no commit of its own outside the unit's named points."""
    first = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    give(receiver, first)
    run_drain()
    assert cli("settings", "donor-updates", "add").exit_code == 0
    again = {**copy.deepcopy(first), "id": "SecondGiftOfAda", "number": "2", "phone": "+15105550000"}
    queued = give(receiver, again)
    before = len(coded.crm.requests)
    commits, job = run_counted(queued["job_id"])
    assert crm_writes(coded, before) == 2  # the gift, the phone
    assert job.unit.points == [*KNOWN_DONOR[:2], "before contact point add", "after contact point add", "job end"]
    assert commits == len(job.unit.points)
    assert "+15105550000" in {r["number"] for r in coded.crm.contacts["phone_numbers"].values()}
    assert db.execute("SELECT status FROM donor_changes").fetchone()[0] == "applied"
    assert no_request_inside_a_change(caplog)


def test_outside_a_job_each_change_commits_at_once(db):
    """An operator's command (or a test) passes an unbound unit: each gathered change is its own commit, and no point
    has anything to commit."""
    work = unit.Unit(db)
    gifts.record_deleted(work, "donations_OUTSIDE")
    assert not db.in_transaction and gifts.recorded(db, "donations_OUTSIDE")["state"] == "deleted"
    assert work.commit("after nothing") is False and work.points == []


def test_a_platform_client_commits_what_the_job_gathered_before_it_sends_and_is_typed(db):
    """``job.client(role, Class)`` gives the platform's own client (typed: another class is refused); each request it
    sends first commits what the job's unit gathered, as a point of its own."""
    import httpx

    from synctool.platforms.givebutter.client import DonationsClient
    from synctool.platforms.mailchimp.client import MailingClient
    from synctool.platforms.runner import Runner
    from synctool.queue import jobs
    from tests.helpers import mock_transport

    transport = mock_transport([httpx.Response(200, json={"data": {"id": 7}})])
    built = DonationsClient("https://donations.invalid/v1", "key", transport=transport)
    jobs_runner = Runner(runtime(), open_client=lambda role: built, parse=lambda source, body: None)  # type: ignore[arg-type,return-value]
    with store.atomic(db):
        job_id = jobs.enqueue(db, source="donations", entity_type="plan", entity_id="P1")
    job = jobs_runner.context(jobs.get(db, job_id), db, "test", "2026-12-01T00:00:00Z")
    with job.unit.bind():
        with job.unit.gather() as conn:
            conn.execute("UPDATE jobs SET message = 'gathered' WHERE id = ?", (job_id,))
        assert job.client("donations", DonationsClient).campaign("7") == {"id": 7}
        assert job.unit.points == ["before a donations request"] and not db.in_transaction
        with pytest.raises(TypeError, match="not a MailingClient"):
            job.client("donations", MailingClient)
    assert jobs.get(db, job_id)["message"] == "gathered"
    built.close()


def test_every_commit_of_a_portal_users_job_is_one_of_its_named_points(portal, db, caplog):  # noqa: F811
    """One way to write in a job: the portal's link to the constituent it made (``set_link``) gathers in the unit
    like the gift ledger, so the job commits at its named points and nowhere else."""
    from tests.test_portal import seed_user

    seed_user(portal)  # the push: a job that stores the record and queues the user's CRM job
    (push_job,) = [r["id"] for r in db.execute("SELECT id FROM jobs WHERE source = 'portal' AND status = 'queued'")]
    run_counted(push_job)
    (user_job,) = [r["id"] for r in db.execute("SELECT id FROM jobs WHERE entity_type = 'user' AND target = 'crm'")]
    commits, job = run_counted(user_job)
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (user_job,)).fetchone()[0] == "succeeded"
    assert db.execute("SELECT crm_constituent_id FROM portal_users WHERE id = 'u1'").fetchone()[0]
    assert commits == len(job.unit.points), job.unit.points
    assert job.unit.points[-1] == "job end"
    assert no_request_inside_a_change(caplog)
