"""The reliability drill: the figures behind the README's "Reliability" section, in one run.

1. Races: 40 Givebutter transactions, each delivered twice (two envelopes) plus a backup-poll job, drained
   at concurrency 3 -> gifts per external id (goal: exactly 1) and gift POSTs (goal: 40).
2. A CRM that stores the gift after the client gave up (commit 3 s after a 1.5 s client timeout), with
   `crm.confirm_after_s` at 4 s -> gifts (goal 1).
3. The real processes (the drill tier's, tests/drills): `kill -9` of `synctool serve` under 8 senders
   (acknowledged vs lost); a database read-only, then a write lock past the busy timeout (503, then how soon
   the next retry is stored, with no restart); `kill -9` of `synctool drain` mid gift POST (seconds until the
   queue is done, gifts per external id); a CRM that answers 500 to every gift POST (POSTs and searches the
   job spends before it fails); a fuzz of 5000 requests at concurrency 16 (5xx and unanswered, goal 0).

    python bench/reliability.py
"""

from __future__ import annotations

import copy
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def world_runtime(tmp: Path, **extra: str):
    from synctool.fakes.world import WEBHOOK_SECRETS, FakeWorld
    from synctool.runtime import Runtime

    world = FakeWorld(crm_limit=100_000, crm_window_s=1.0)
    (tmp / "config.yaml").write_text("{}\n")
    environ = {
        "SYNCTOOL_DB": str(tmp / "r.db"),
        "SYNCTOOL_KEYRING": "off",
        "CRM_RATE_LIMIT_REQUESTS": "100000",
        "CRM_SHARE_REQUESTS": "100000",
        "CRM_RATE_LIMIT_WINDOW_S": "1",
        "CRM_MIN_INTERVAL_MS": "0",
        "CRM_TIMEOUT_S": "1.5",
        "POS_WEBHOOK_NOTIFICATION_URL": "https://sync.example.org/webhooks/pos",
        **WEBHOOK_SECRETS,
        **world.env(),
        **extra,
    }
    return world, Runtime.from_environ(tmp / "config.yaml", environ, transports=world.transports())


def deliver(rt, conn, txn: dict) -> str | None:
    """A signed Givebutter delivery, taken as the receiver takes it; returns its job id."""
    from synctool import platforms
    from synctool.fakes import samples
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.ops import inbox

    body = samples.givebutter("transaction.succeeded", txn)
    found = inbox.accept(
        "donations", body, {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]}, {}, platforms.webhook_secrets(rt)
    )
    return inbox.store_inbound(conn, found)


def races() -> str:
    from synctool import store
    from synctool.fakes import samples
    from synctool.platforms.runner import runner
    from synctool.queue import jobs
    from synctool.queue.worker import drain

    world, rt = world_runtime(Path(tempfile.mkdtemp(prefix="synctool-rel-")))
    conn = store.connect(rt.db_path)
    for n in range(40):
        txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
        txn.update(id=f"TX{n:03d}", email=f"donor{n % 7}@example.org")
        for _ in range(2):
            job_id = deliver(rt, conn, txn)
        with store.atomic(conn):
            poll_job = jobs.enqueue(
                conn, source="donations", entity_type="transaction", entity_id=f"poll-{n}", external_id=f"donations_TX{n:03d}"
            )
            conn.execute(
                "UPDATE jobs SET delivery_id = (SELECT delivery_id FROM jobs WHERE id = ?) WHERE id = ?", (job_id, poll_job)
            )
    while drain(runner(rt), max_seconds=20, concurrency=3).claimed:
        pass
    per = Counter(g["external_id"] for g in world.crm.gifts.values())
    posts = sum(1 for r in world.crm.requests if r["method"] == "POST" and r["path"].endswith("/gifts"))
    return (
        f"races: 40 transactions x (2 envelopes + a poll job) at concurrency 3 -> {len(per)} external ids, "
        f"gifts per external id max {max(per.values())} min {min(per.values())}; {posts} gift POSTs (goal 40)"
    )


def late_commit() -> str:
    from synctool import store
    from synctool.fakes import samples
    from synctool.platforms.runner import runner
    from synctool.queue import jobs
    from synctool.queue.worker import drain

    world, rt = world_runtime(Path(tempfile.mkdtemp(prefix="synctool-rel-")), CRM_CONFIRM_AFTER_S="4", CRM_TIMEOUT_S="1.5")
    conn = store.connect(rt.db_path)
    world.crm.faults.append({"mode": "late_commit", "count": 1, "method": "POST", "path": "/gifts"})
    job_id = deliver(rt, conn, samples.GIVEBUTTER_TRANSACTION)
    started = time.monotonic()
    drain(runner(rt), max_seconds=15)
    status = jobs.get(conn, job_id)["status"]
    return (
        f"late commit (CRM stores the gift 3 s after a 1.5 s client timeout): {len(world.crm.gifts)} gift (goal 1), "
        f"job {status} after {time.monotonic() - started:.1f} s"
    )


def site(world):
    """A synctool install in a fresh folder, as the drill tier makes one (tests/drills/conftest.py)."""
    from tests.drills.conftest import Site, coded

    return coded(Site(Path(tempfile.mkdtemp(prefix="synctool-rel-")), world))


def receiver_kill_nine(world) -> str:
    from tests.drills.conftest import kill_under_load

    s = site(world)
    acknowledged = kill_under_load(s, s.serve(), after=300)
    stored = {r[0] for r in s.rows("SELECT id FROM jobs")}
    lost = len(set(acknowledged) - stored)
    s.stop()
    return f"kill -9 of `synctool serve` under 8 concurrent senders: {len(acknowledged)} acknowledged, {lost} lost (goal 0)"


def receiver_recovers(world) -> str:
    from tests.drills.conftest import read_only
    from tests.drills.test_receiver_drills import hold_write_lock

    s = site(world)
    s.serve(env={"RECEIVER_BUSY_TIMEOUT_S": "1"})
    with read_only(s.db_path, s.folder):
        refused = s.give(1).status_code
    started = time.monotonic()
    accepted = s.give(1).status_code
    read_only_s = time.monotonic() - started
    locker = hold_write_lock(s, 2)
    locked = s.give(2).status_code
    locker.wait()
    started = time.monotonic()
    after_lock = s.give(2).status_code
    lock_s = time.monotonic() - started
    s.stop()
    return (
        f"database read-only, then restored: {refused} then {accepted} after {read_only_s * 1000:.0f} ms, no restart; "
        f"write lock held past the busy timeout (1 s): {locked} then {after_lock} after {lock_s * 1000:.0f} ms"
    )


def drain_kill_nine(world) -> str:
    from tests.drills.conftest import crm_fault, crm_state
    from tests.drills.test_drain_drills import deliver, wait_for_request, watch

    s = site(world)
    s.serve()
    deliver(s, 6)
    crm_fault(world, "commit_timeout", method="POST", path="/gifts")
    drain = s.drain(30)
    wait_for_request(s, "POST", "/gifts")
    os.kill(drain.pid, signal.SIGKILL)
    drain.wait()
    killed = time.monotonic()
    watch(s)
    statuses = s.wait_until_done(timeout=30)
    recovered = time.monotonic() - killed
    per = Counter(g["external_id"] for g in crm_state(world)["gifts"])
    s.stop()
    return (
        f"kill -9 of `synctool drain` mid gift POST (lease 2 s, confirm grace 1 s): queue {statuses} {recovered:.1f} s later; "
        f"gifts per external id max {max(per.values())} min {min(per.values())} over {len(per)}"
    )


def always_500(world) -> str:
    from tests.drills.conftest import crm_fault, crm_state
    from tests.drills.test_drain_drills import deliver, watch

    s = site(world)
    s.serve()
    deliver(s, 1)
    crm_fault(world, "500", count=1_000_000, method="POST", path="/gifts")
    started = time.monotonic()
    watch(s)
    statuses = s.wait_until_done(timeout=60)
    took = time.monotonic() - started
    requests = crm_state(world)["requests"]
    posts = sum(r["method"] == "POST" and r["path"].endswith("/gifts") for r in requests)
    searches = sum(r["path"].endswith("/gifts/search") for r in requests)
    s.stop()
    return (
        f"a CRM that answers 500 to every gift POST (max_attempts 3): job {statuses} after {took:.1f} s, "
        f"{posts} POSTs and {searches} confirming searches (goal at most 3 each)"
    )


def fuzz(world) -> str:
    import random
    from concurrent.futures import ThreadPoolExecutor

    from tests.drills.test_fuzz_drill import case

    s = site(world)
    s.serve()
    rng = random.Random(1)
    cases = [case(rng) for _ in range(5000)]
    counts: Counter = Counter()

    def send(chunk: list) -> None:
        with httpx.Client(timeout=30) as client:
            for route, body, headers in chunk:
                try:
                    status = s.post(client, route, body, headers).status_code
                    counts["5xx" if status >= 500 else str(status)] += 1
                except httpx.HTTPError:
                    counts["no answer"] += 1

    started = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(send, [cases[i::16] for i in range(16)]))
    took = time.monotonic() - started
    s.stop()
    return (
        f"fuzz of the real receiver (5000 requests, every route, concurrency 16, {took:.1f} s): {counts['5xx']} 5xx, "
        f"{counts['no answer']} unanswered (goal 0 each); 413: {counts['413']}, 400: {counts['400']}, 401: {counts['401']}, "
        f"200: {counts['200']}"
    )


if __name__ == "__main__":
    import logging

    from synctool.fakes.world import FakeWorld

    logging.disable(logging.WARNING)
    for drill in (races, late_commit):
        print(drill(), flush=True)
    for real in (receiver_kill_nine, receiver_recovers, drain_kill_nine, always_500, fuzz):
        with FakeWorld(crm_limit=100_000, crm_window_s=1.0, serve=True) as world:
            print(real(world), flush=True)
