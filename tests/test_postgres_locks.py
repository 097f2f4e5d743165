"""What SQLite's one writer gave for free, on a real PostgreSQL (tests/pg.py): the queue's claim (each job once, a
lapsed lease taken over), the pacer's ledger across processes, named locks, and the engine's spellings and
housekeeping (store.dialect). Each outcome holds whatever the order the connections and processes ran in: a test
either steps two connections one after the other, or asserts what no interleaving may break."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from synctool import store
from synctool.crm.pacer import Limits
from synctool.errors import StoreUnavailable
from synctool.notices import NOTICES
from synctool.queue import jobs
from synctool.store import dialect, transactions

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def two(pg_url: str) -> Iterator[tuple[store.Connection, store.Connection]]:
    a, b = store.connect(pg_url), store.connect(pg_url)
    yield a, b
    a.close()
    b.close()


def add(conn: store.Connection, n: int, entity_type: str = "record") -> list[str]:
    with store.atomic(conn):
        return [jobs.enqueue(conn, source="donations", entity_type=entity_type, entity_id=str(i)) for i in range(n)]


def test_a_job_another_transaction_holds_is_passed_over_and_the_next_claimed(two) -> None:
    a, b = two
    first, second = add(a, 2)
    with store.atomic(a):  # a's transaction holds the first job's row (as a claim or a wake would)
        a.execute("SELECT id FROM jobs WHERE id = ? FOR UPDATE", (first,)).fetchone()
        row = jobs.claim(b, "b")
        assert row is not None and row["id"] == second
    row = jobs.claim(b, "b")
    assert row is not None and row["id"] == first
    assert jobs.claim(b, "b") is None


def test_a_claimed_job_whose_lease_lapsed_is_taken_over_once(two) -> None:
    a, b = two
    [job_id] = add(a, 1)
    claimed = jobs.claim(a, "dead drain")
    assert claimed is not None and jobs.claim(b, "b") is None  # under its lease: nobody else's
    lapsed = store.iso(store.utcnow() - timedelta(seconds=1))
    a.execute("UPDATE jobs SET lease_expires = ? WHERE id = ?", (lapsed, job_id))  # the drain died
    taken = jobs.claim(b, "b")
    assert taken is not None and taken["id"] == job_id and taken["attempts"] == 2
    assert jobs.claim(a, "a") is None  # taken over once
    assert not jobs.finish(a, claimed, "dead drain", jobs.Outcome("succeeded"))  # the dead drain's lease is lost
    assert jobs.finish(b, taken, "b", jobs.Outcome("succeeded"))
    outcomes = [r[0] for r in a.execute("SELECT outcome FROM job_attempts WHERE job_id = ? ORDER BY id", (job_id,))]
    assert outcomes == ["abandoned", "succeeded"]


def test_a_wake_while_the_job_runs_runs_it_again(two) -> None:
    a, b = two
    [job_id] = add(a, 1)
    row = jobs.claim(a, "a")
    assert row is not None
    assert jobs.wake(b, source="donations", target="crm", entity_type="record", entity_id="0") == job_id
    assert jobs.finish(a, row, "a", jobs.Outcome("succeeded"))
    assert jobs.get(a, job_id)["status"] == "queued"  # it may have read before the piece landed


WORKER = """
import json, sys
from synctool import store
from synctool.crm.pacer import Limits, Pacer
from synctool.queue import jobs
url, limits, name = sys.argv[1], Limits(**json.loads(sys.argv[2])), sys.argv[3]
conn = store.connect(url, migrate=False)
pacer = Pacer(url, limits, clock=lambda: 1_000_000.0)
pacer.budget()  # its connection opened
print("ready", flush=True)
sys.stdin.readline()  # both start together
claimed = []
while (row := jobs.claim(conn, name, max_running=1000)) is not None:
    claimed.append(row["id"])
slots = [pacer.reserve(name) for _ in range(int(sys.argv[4]))]
print(json.dumps({"claimed": claimed, "slots": slots}))
"""


def test_two_processes_claim_each_job_once_and_keep_the_pacers_window_and_gap(pg_url: str) -> None:
    conn = store.connect(pg_url)
    ids = add(conn, 60)
    limits = {"requests": 4, "window_s": 10.0, "min_interval_s": 1.0, "send_margin_s": 0.0}
    # the suite's PYTHONPATH kept: a moved clock (tests/clock, .ci/run) must be the workers' clock too
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, pg_url, json.dumps(limits), name, "6"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        for name in ("one", "two")
    ]  # fmt: skip
    for p in procs:
        assert p.stdout is not None and p.stdout.readline() == "ready\n"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    found = [json.loads(p.communicate(timeout=30)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    # whichever process ran first, and however their statements interleaved: every job claimed, none twice (a
    # claim gets None only once none is due), each by the process its lease names
    claimed = {name: f["claimed"] for name, f in zip(("one", "two"), found, strict=True)}
    assert sorted(claimed["one"] + claimed["two"]) == sorted(ids)
    owners = dict(conn.execute("SELECT id, lease_owner FROM jobs").fetchall())
    assert all(owners[i] == name for name, taken in claimed.items() for i in taken)
    # the pacer: never two slots closer than the gap, never more than 4 in any window
    slots = sorted(s for f in found for s in f["slots"])
    lim = Limits(**limits)
    assert len(slots) == 12 and min(b - a for a, b in zip(slots, slots[1:], strict=False)) >= lim.spacing_s - 1e-9
    assert max(sum(1 for s in slots if start <= s < start + lim.window_s + lim.margin_s) for start in slots) <= 4
    owners = [r[0] for r in conn.execute("SELECT owner FROM crm_requests")]
    assert sorted(owners) == ["one"] * 6 + ["two"] * 6
    conn.close()


def test_a_named_lock_blocks_another_connection_until_released_or_lapsed(two) -> None:
    a, b = two
    with store.named_lock(a, ["gift:1"]):
        with pytest.raises(StoreUnavailable), store.named_lock(b, ["gift:1", "gift:2"], wait_s=0):
            pass
        with store.named_lock(b, ["gift:2"], wait_s=0):  # another name is free
            pass
    with store.named_lock(b, ["gift:1"], wait_s=0):  # released
        pass
    with store.named_lock(a, ["gift:1"]):
        a.execute("UPDATE locks SET expires = 0")  # its holder died a while ago
        with store.named_lock(b, ["gift:1"], wait_s=0):  # lapsed
            pass


def test_a_named_lock_taken_but_not_yet_committed_is_not_taken_twice(two) -> None:
    a, b = two
    with store.atomic(a):  # as a job's unit takes one: the row commits at the unit's next point
        assert transactions.try_exclusive(a, ["gift:1"])
        transactions.take_locks(a, ["gift:1"], "a", 2e9)
        with pytest.raises(StoreUnavailable), store.named_lock(b, ["gift:1"], wait_s=0):
            pass
    with pytest.raises(StoreUnavailable), store.named_lock(b, ["gift:1"], wait_s=0):
        pass  # committed: held by a


def test_a_job_connection_holds_locks_for_its_lease(two) -> None:
    a, _ = two
    with store.held_by(a, store.LockHolder("drain-1", 30)), store.named_lock(a, ["x"]):
        assert a.execute("SELECT owner FROM locks").fetchone()[0].startswith("drain-1#")
        assert store.renew_locks(a, ["drain-1"], 60) == 1


def test_a_transaction_a_failed_statement_spoiled_is_not_committed_silently(two) -> None:
    a, b = two
    with pytest.raises(store.Busy), store.atomic(a):
        a.execute("INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', 't')")
        try:
            a.execute("SELECT no_such_column FROM settings")
        except store.Error:
            pass  # caught, as SQLite would let the transaction go on
    assert not a.in_transaction
    assert b.execute("SELECT count(*) FROM settings WHERE key = 'k'").fetchone()[0] == 0


def test_the_spellings_and_the_housekeeping(pg_url: str) -> None:
    conn = store.connect(pg_url)
    try:
        now = store.iso()
        with store.atomic(conn):
            for i, (name, email) in enumerate([("Ada Lovelace", "ada@example.org"), ("Grace Hopper", "g@example.org")]):
                conn.execute(
                    "INSERT INTO jobs (id, source, entity_type, entity_id, run_after, created_at, updated_at, name, email)"
                    " VALUES (?, 'donations', 'transaction', ?, ?, ?, ?, ?, ?)",
                    (f"z{i}", str(i), now, now, now, name, email),
                )
        assert [r[0] for r in conn.execute(f"SELECT id FROM jobs ORDER BY created_at, {dialect.arrival()}")] == ["z0", "z1"]
        assert [r[0] for r in conn.execute(f"SELECT j.id FROM jobs j ORDER BY {dialect.arrival('j')} DESC")] == ["z1", "z0"]
        for text, found in [("ada", ["z0"]), ("LOVE", ["z0"]), ("grace hop", ["z1"]), ("it's", []), ("example", ["z0", "z1"])]:
            where, param = dialect.full_text("jobs_search", text)
            assert [r[0] for r in conn.execute(f"SELECT id FROM jobs WHERE {where} ORDER BY id", (param,))] == found, text
        assert conn.execute(f"SELECT {dialect.last_chars('?', 3)}", ("12345",)).fetchone()[0] == "345"
        assert conn.execute(f"SELECT {store.JOB_POLLED.format('jobs')} FROM jobs WHERE id = 'z0'").fetchone()[0] == 0

        names = dialect.table_names(conn)
        assert "jobs" in names and "locks" in names and "pg_class" not in names
        assert dialect.has_table(conn, "chat_notices") and not dialect.has_table(conn, "nope")
        assert dialect.integrity_check(conn) == "ok"
        with dialect.secure_delete(conn), store.atomic(conn):
            dialect.give_back(conn, 100)
        dialect.rewrite(conn)
        dialect.refresh_statistics(conn)

        found = store.record_size(conn, "2026-01-01")
        assert found["bytes"] > 0 and found["free_bytes"] == 0
        store.record_size(conn, "2026-01-15")
        assert store.growth_per_month(conn) is not None
        store.record_size(conn, "2027-02-15")  # 400 days on: the first day is let go
        assert [r[0] for r in conn.execute("SELECT day FROM store_sizes ORDER BY day")] == ["2026-01-15", "2027-02-15"]

        with store.atomic(conn):
            conn.execute(
                "INSERT INTO chat_notices (key, text, created_at, send_after, attempts) VALUES ('n1', 't', ?, ?, 5),"
                " ('n2', 't', ?, ?, 0)",
                (now, now, now, now),
            )
        found = NOTICES.problems(conn, late_after=timedelta(0))
        assert (found["failed"], found["late"], found["waiting"]) == (1, 1, 1)
    finally:
        conn.close()


def test_the_hourly_counts_follow_a_job_moving_either_way(two) -> None:
    a, _ = two
    [job_id] = add(a, 1)
    row = jobs.claim(a, "a")
    assert row is not None
    assert jobs.wait(a, row, "a", "not yet", 0) == "queued"  # running to queued: the counters taken the other way
    row = jobs.claim(a, "a")
    assert row is not None and jobs.finish(a, row, "a", jobs.Outcome("succeeded"))
    counts = {r[0]: r[1] for r in a.execute("SELECT status, sum(n) FROM job_counts GROUP BY status")}
    assert counts == {"queued": 0, "running": 0, "succeeded": 1}
    assert jobs.get(a, job_id)["status"] == "succeeded"


def unspaced(conn: store.Connection, more: int) -> dict:
    """Pacing with no gap to keep, a window room for ``more`` reservations past every connection the server
    takes (what a reservation made beside the others counts as possibly unseen)."""
    return {"requests": store.writers_beside(conn) + 1 + more, "window_s": 10.0, "min_interval_s": 0.0, "send_margin_s": 0.0}


def test_with_no_gap_to_keep_a_reservation_waits_on_none_but_one_made_alone(two, pg_url: str) -> None:
    from synctool.crm.pacer import Pacer

    a, b = two
    b.execute("SET lock_timeout = '500ms'")  # where it would wait, it fails at once rather than hang
    with store.atomic(a):  # another process's reservation made beside the others, not yet committed
        store.exclusive(a, "crm_requests", shared=True)
        a.execute("INSERT INTO crm_requests (at, owner) VALUES (?, 'a')", (1_000_000.0,))
        beside = Pacer(pg_url, Limits(**unspaced(a, 5)), clock=lambda: 1_000_000.0, connect=lambda: b)
        assert beside.reserve("b") == 1_000_000.0  # committed while a's is open
        spaced = Pacer(pg_url, Limits(4, 10.0, 1.0, send_margin_s=0.0), clock=lambda: 1_000_000.0, connect=lambda: b)
        with pytest.raises(store.Error, match="lock timeout"):  # pacing on: alone, after every other reservation
            spaced.reserve("b")
    assert [r[0] for r in a.execute("SELECT owner FROM crm_requests ORDER BY owner")] == ["a", "b"]


def test_two_processes_with_no_gap_to_keep_never_exceed_the_window(pg_url: str) -> None:
    conn = store.connect(pg_url)
    limits = unspaced(conn, 20)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    each = limits["requests"] // 2 + 10  # together past the window's limit: the last ones go to the next window
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, pg_url, json.dumps(limits), name, str(each)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        for name in ("one", "two")
    ]  # fmt: skip
    for p in procs:
        assert p.stdout is not None and p.stdout.readline() == "ready\n"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    found = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    slots = sorted(s for f in found for s in f["slots"])
    lim = Limits(**limits)
    assert len(slots) == 2 * each and slots[-1] > slots[0]  # some waited for the next window
    assert max(sum(1 for s in slots if start <= s < start + lim.window_s + lim.margin_s) for start in slots) <= lim.requests
    conn.close()
