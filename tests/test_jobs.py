"""The queue: leases, crash recovery, no double runs, at most 3 at once, retries, and operator rules."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from synctool import store
from synctool.errors import PermanentError, TransientError
from synctool.platforms.runner import runner
from synctool.queue import jobs
from synctool.queue.worker import HANDLERS, drain
from tests import helpers
from tests.helpers import runtime


def add(db, entity_type: str, n: int = 1, **kw) -> list[str]:
    source = kw.pop("source", "donations")
    with store.atomic(db):
        return [jobs.enqueue(db, source=source, entity_type=entity_type, entity_id=str(i), **kw) for i in range(n)]


def harness(mode: str, seconds: float = 20) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.drain_harness", mode, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(__file__)),
        env={**os.environ, **helpers.CURRENT["env"]},
    )


def effects(db) -> list:
    db.execute("CREATE TABLE IF NOT EXISTS effects (job_id TEXT, started REAL, ended REAL)")
    return db.execute("SELECT * FROM effects").fetchall()


@pytest.mark.drill  # real processes: the drill tier
def test_sigkill_mid_job_is_finished_exactly_once_by_the_next_drain(db, tmp_path):
    (tmp_path / "config.yaml").write_text("queue:\n  lease_seconds: 2\n")
    [job_id] = add(db, "slow")
    proc = harness("slow")
    deadline = time.time() + 15
    while jobs.get(db, job_id)["status"] != "running" and time.time() < deadline:
        time.sleep(0.05)
    assert jobs.get(db, job_id)["status"] == "running"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert effects(db) == []

    time.sleep(2.1)  # the lease expires
    HANDLERS[("*", "slow")] = lambda event, ctx: (
        ctx.conn.execute("INSERT INTO effects VALUES (?, ?, ?)", (ctx.row["id"], 0, 0)) and None
    )
    try:
        summary = drain(runner(runtime()), max_seconds=10)
    finally:
        HANDLERS.pop(("*", "slow"))
    assert summary.succeeded == 1
    assert len(effects(db)) == 1
    job = jobs.get(db, job_id)
    assert job["status"] == "succeeded" and job["attempts"] == 2
    outcomes = [r["outcome"] for r in db.execute("SELECT outcome FROM job_attempts WHERE job_id = ? ORDER BY id", (job_id,))]
    assert outcomes == ["abandoned", "succeeded"]


@pytest.mark.drill  # real processes: the drill tier
def test_two_drains_never_run_a_job_twice_and_at_most_three_run_at_once(db):
    ids = add(db, "record", 40)
    procs = [harness("record"), harness("record")]
    for p in procs:
        p.wait(timeout=60)
    rows = effects(db)
    assert sorted(r["job_id"] for r in rows) == sorted(ids)  # each exactly once
    assert {jobs.get(db, i)["status"] for i in ids} == {"succeeded"}
    events = sorted([(r["started"], 1) for r in rows] + [(r["ended"], -1) for r in rows])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert peak <= 3


def test_transient_errors_retry_with_growing_delay_then_fail(db, monkeypatch, env):
    env["QUEUE_RETRY_DELAY_MS"] = "200"
    calls = []

    def flaky(event, ctx):
        calls.append(time.monotonic())
        raise TransientError("CRM answered 503")

    monkeypatch.setitem(HANDLERS, ("*", "flaky"), flaky)
    [job_id] = add(db, "flaky")
    summary = drain(runner(runtime()), max_seconds=10)
    job = jobs.get(db, job_id)
    assert job["status"] == "failed" and job["attempts"] == 3 and job["last_error"] == "CRM answered 503"
    assert summary.failed == 1 and summary.retrying == 2
    gaps = [b - a for a, b in zip(calls, calls[1:], strict=False)]
    assert gaps[0] >= 0.18 and gaps[1] >= 0.38  # 200 ms, then 400 ms (a stall only lengthens a gap)


def test_first_retry_waits_five_seconds_by_default(db, monkeypatch):
    monkeypatch.setitem(HANDLERS, ("*", "flaky"), lambda event, ctx: (_ for _ in ()).throw(TransientError("timeout")))
    [job_id] = add(db, "flaky")
    before = datetime.now(UTC)
    drain(runner(runtime()), max_seconds=1)
    after = datetime.now(UTC)
    job = jobs.get(db, job_id)
    run_after = datetime.strptime(job["run_after"], store.TIME_FORMAT).replace(tzinfo=UTC)
    assert job["status"] == "queued" and job["attempts"] == 1
    assert before + timedelta(seconds=5) <= run_after <= after + timedelta(seconds=5)  # 5 s from when it failed


def test_permanent_error_and_missing_handler_fail_at_once(db, monkeypatch):
    monkeypatch.setitem(HANDLERS, ("*", "bad"), lambda event, ctx: (_ for _ in ()).throw(PermanentError("no such fund 9")))
    [bad] = add(db, "bad")
    [orphan] = add(db, "unheard_of")
    drain(runner(runtime()), max_seconds=5)
    assert jobs.get(db, bad)["status"] == "failed" and jobs.get(db, bad)["attempts"] == 1
    job = jobs.get(db, orphan)
    assert job["status"] == "failed" and "no handler for donations jobs of type 'unheard_of'" in job["last_error"]


def test_drain_runs_crm_jobs_only(db, monkeypatch):
    monkeypatch.setitem(HANDLERS, ("cms", "page"), lambda event, ctx: None)
    [cms] = add(db, "page", target="cms")
    drain(runner(runtime()), max_seconds=2)
    assert jobs.get(db, cms)["status"] == "queued"


def test_retry_and_resolve_state_rules(db, cli, monkeypatch):
    monkeypatch.setitem(HANDLERS, ("*", "ok"), lambda event, ctx: None)
    monkeypatch.setitem(HANDLERS, ("*", "bad"), lambda event, ctx: (_ for _ in ()).throw(PermanentError("nope")))
    [ok] = add(db, "ok")
    [bad] = add(db, "bad")
    drain(runner(runtime()), max_seconds=5)

    refused = cli("jobs", "retry", ok)
    assert refused.exit_code == 4 and "only a failed job can be retried" in refused.output
    assert "already succeeded" in refused.output
    assert cli("jobs", "retry", "no-such-id").exit_code == 3
    assert cli("syncs", "resolve", ok).exit_code == 4

    resolved = cli("syncs", "resolve", bad, "--notes", "entered by hand", "--by", "sam")
    assert resolved.exit_code == 0
    job = jobs.get(db, bad)
    assert job["resolved_by"] == "sam" and job["notes"] == "entered by hand" and job["status"] == "failed"
    assert cli("syncs", "resolve", bad).exit_code == 4  # already resolved

    assert cli("jobs", "retry", bad).exit_code == 0
    job = jobs.get(db, bad)
    assert job["status"] == "queued" and job["resolved_at"] is None and job["max_attempts"] == job["attempts"] + 3


def test_retry_all_by_source(db, cli, monkeypatch):
    monkeypatch.setitem(HANDLERS, ("*", "bad"), lambda event, ctx: (_ for _ in ()).throw(PermanentError("nope")))
    add(db, "bad", 2, source="pos")
    add(db, "bad", 1, source="donations")
    drain(runner(runtime()), max_seconds=5)
    assert "1 failed jobs queued again" in cli("retry-all", "--source", "donations").output
    assert db.execute("SELECT count(*) FROM jobs WHERE status = 'queued'").fetchone()[0] == 1
    assert "2 failed" in cli("retry-all").output
