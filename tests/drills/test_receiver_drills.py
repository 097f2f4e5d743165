"""The receiver's promises, kept by the real `synctool serve`: a 2xx means the delivery is on disk, a database
it cannot write is a 503 and then, once the cause is gone, the platform's next retry is stored, once, without
a restart (README "Reliability")."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import pytest

from tests.drills.conftest import ROOT, Site, givebutter_delivery, kill_under_load, read_only


def stored_transactions(site: Site) -> list[str]:
    return [r[0] for r in site.rows("SELECT entity_id FROM jobs ORDER BY created_at")]


def refused(site: Site, n: int) -> tuple[bytes, dict[str, str]]:
    """Delivery ``n`` is refused with 503 while the fault lasts; returns it, for the platform's retry."""
    body, headers = givebutter_delivery(n)
    r = site.post(None, "donations", body, headers)
    assert r.status_code == 503, r.text
    assert r.json()["error"] == "could not store the delivery; retry later"
    return body, headers


def stored_once(site: Site, delivery: tuple[bytes, dict[str, str]]) -> None:
    """Once the cause is gone, the platform's retry is accepted, and a second retry is a duplicate."""
    retried = site.post(None, "donations", *delivery)
    assert retried.status_code == 200 and retried.json()["status"] == "accepted", retried.text
    assert site.post(None, "donations", *delivery).json()["status"] == "duplicate"


def test_kill_9_under_concurrent_posts_loses_no_acknowledged_delivery(site: Site):
    acknowledged = kill_under_load(site, site.serve(), after=150)
    assert len(acknowledged) >= 150
    stored = {r[0] for r in site.rows("SELECT id FROM jobs")}
    assert set(acknowledged) <= stored  # every 200 was on disk
    assert site.rows("SELECT count(*) FROM deliveries")[0][0] == len(stored)
    site.serve()  # a restarted receiver carries on with the same database
    assert site.give(999_999).json()["status"] == "accepted"


@pytest.mark.sqlite_only(reason="SQLite's file and folder made read-only")
def test_a_database_read_only_before_the_first_delivery_recovers_without_a_restart(site: Site):
    site.serve()
    with read_only(site.db_path, site.folder):
        delivery = refused(site, 1)
    stored_once(site, delivery)
    assert stored_transactions(site) == ["T1"]


@pytest.mark.sqlite_only(reason="SQLite's file and its WAL made read-only")
def test_a_database_made_read_only_later_recovers_without_a_restart(site: Site):
    site.serve()
    assert site.give(1).status_code == 200  # the receiver's connection is open and has written
    wal = site.db_path.with_name(site.db_path.name + "-wal")
    # not the -shm index: SQLite maps it into memory, and an immutable mapped file is a SIGBUS, not a refusal
    with read_only(site.db_path, wal, site.folder):
        delivery = refused(site, 2)
        assert site.give(3).status_code == 503  # and it stays refused while the fault lasts
    stored_once(site, delivery)
    assert site.give(3).status_code == 200
    assert stored_transactions(site) == ["T1", "T2", "T3"]


@pytest.mark.sqlite_only(reason="SQLite's file grown to a size limit (SQLITE_FULL)")
def test_a_full_disk_recovers_without_a_restart(site: Site):
    """A process file-size limit stands in for a full disk (SQLite sees the same SQLITE_FULL)."""
    site.serve().kill()  # the database created and migrated at its normal size
    site.procs[-1].wait()
    limit = site.db_path.stat().st_size + 64 * 1024
    proc = site.serve(preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY)))
    padding = "x" * 60_000
    refused_at = None
    for n in range(1, 40):
        body, headers = givebutter_delivery(n)
        body = body[:-1] + f', "padding": "{padding}"}}'.encode()
        r = site.post(None, "donations", body, headers)
        if r.status_code == 503:
            refused_at = (n, body, headers)
            break
        assert r.status_code == 200, r.text
    assert refused_at is not None, "the size limit was never reached"
    n, body, headers = refused_at
    assert site.post(None, "donations", body, headers).status_code == 503  # still full
    resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))  # space freed
    stored_once(site, (body, headers))
    assert stored_transactions(site) == [f"T{i}" for i in range(1, n + 1)]
    assert site.rows("PRAGMA integrity_check") == [("ok",)]


def hold_write_lock(site: Site, seconds: float) -> subprocess.Popen:
    """Another process (a backup restore, a long migration) holding the database's write lock."""
    code = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(float(sys.argv[2]))\n"
        "letting_go = time.time(); c.execute('ROLLBACK'); print(letting_go, flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(site.db_path), str(seconds)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@pytest.mark.sqlite_only(reason="SQLite's one write lock and its busy timeout")
def test_a_write_lock_is_waited_for_up_to_the_busy_timeout_then_refused_and_recovered(site: Site):
    site.serve(env={"RECEIVER_BUSY_TIMEOUT_S": "1.5"})
    assert site.give(1).status_code == 200
    # shorter than the busy timeout: the delivery waits for the lock and is stored
    locker = hold_write_lock(site, 0.7)
    assert site.give(2).status_code == 200
    answered = time.time()
    assert locker.stdout is not None and answered >= float(locker.stdout.readline())  # it waited for the lock to go
    locker.wait()
    # longer than the busy timeout: 503 after waiting it out, then the retry is stored once
    locker = hold_write_lock(site, 3)
    started = time.monotonic()
    delivery = refused(site, 3)
    assert time.monotonic() - started >= 1.2  # it waited for the lock, not refused at once
    locker.wait()
    stored_once(site, delivery)
    assert stored_transactions(site) == ["T1", "T2", "T3"]
