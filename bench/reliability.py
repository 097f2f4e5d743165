"""The reliability drill: the figures behind the README's "Reliability" section, in one run.

1. Races: 40 Givebutter transactions, each delivered twice (two envelopes) plus a backup-poll job, drained
   at concurrency 3 -> gifts per external id (goal: exactly 1) and gift POSTs (goal: 40).
2. A CRM that stores the gift after the client gave up (commit 3 s after a 1.5 s client timeout), with
   `crm.confirm_after_s` at 4 s -> gifts (goal 1).
3. `kill -9` of a drain holding a person lock (lease 2 s) -> seconds until the next drain has run the job
   that needs the lock (goal: about one lease).
4. Hostile load on the receiver over real sockets: 8 clients sending small garbage and deep JSON while 2
   send 1.5 MB bodies -> 5xx answers and requests with no answer (goal 0 each).

    python bench/reliability.py
"""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import tempfile
import threading
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
    from synctool.fakes import samples
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.ops import inbox
    from synctool.platforms.webhook import WebhookSecrets

    body = samples.givebutter("transaction.succeeded", txn)
    found = inbox.accept(
        "donations", body, {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]}, {}, WebhookSecrets.load(rt)
    )
    return inbox.store_inbound(conn, found)


def races() -> str:
    from synctool import platforms, store
    from synctool.fakes import samples
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
    while drain(platforms.services(rt), max_seconds=20, concurrency=3).claimed:
        pass
    per = Counter(g["external_id"] for g in world.crm.gifts.values())
    posts = sum(1 for r in world.crm.requests if r["method"] == "POST" and r["path"].endswith("/gifts"))
    return (
        f"races: 40 transactions x (2 envelopes + a poll job) at concurrency 3 -> {len(per)} external ids, "
        f"gifts per external id max {max(per.values())} min {min(per.values())}; {posts} gift POSTs (goal 40)"
    )


def late_commit() -> str:
    from synctool import platforms, store
    from synctool.fakes import samples
    from synctool.queue import jobs
    from synctool.queue.worker import drain

    world, rt = world_runtime(Path(tempfile.mkdtemp(prefix="synctool-rel-")), CRM_CONFIRM_AFTER_S="4", CRM_TIMEOUT_S="1.5")
    conn = store.connect(rt.db_path)
    world.crm.faults.append({"mode": "late_commit", "count": 1, "method": "POST", "path": "/gifts"})
    job_id = deliver(rt, conn, samples.GIVEBUTTER_TRANSACTION)
    started = time.monotonic()
    drain(platforms.services(rt), max_seconds=15)
    status = jobs.get(conn, job_id)["status"]
    return (
        f"late commit (CRM stores the gift 3 s after a 1.5 s client timeout): {len(world.crm.gifts)} gift (goal 1), "
        f"job {status} after {time.monotonic() - started:.1f} s"
    )


def kill_nine() -> str:
    from synctool import platforms, store
    from synctool.queue import jobs
    from synctool.queue.worker import HANDLERS, drain
    from synctool.runtime import Runtime

    tmp = Path(tempfile.mkdtemp(prefix="synctool-rel-"))
    (tmp / "config.yaml").write_text("queue:\n  lease_seconds: 2\n")
    env = {"SYNCTOOL_DB": str(tmp / "k.db"), "SYNCTOOL_CONFIG": str(tmp / "config.yaml"), "SYNCTOOL_KEYRING": "off"}
    rt = Runtime.from_environ(None, env)
    conn = store.connect(rt.db_path)
    with store.atomic(conn):
        jobs.enqueue(conn, source="donations", entity_type="locker", entity_id="1")
    proc = subprocess.Popen([sys.executable, "-m", "tests.drain_harness", "locker", "30"], cwd=ROOT, env={**os.environ, **env})
    while not conn.execute("SELECT 1 FROM locks WHERE name = 'person:ada'").fetchone():
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed = time.monotonic()
    with store.atomic(conn):
        jobs.enqueue(conn, source="donations", entity_type="needs_lock", entity_id="2")
    done: list[float] = []

    def needs_lock(ctx):
        with store.named_lock(ctx.conn, ["person:ada"], wait_s=60):
            done.append(time.monotonic() - killed)

    HANDLERS[("crm", "needs_lock")] = needs_lock
    HANDLERS[("crm", "locker")] = lambda ctx: None
    drain(platforms.services(rt), max_seconds=30)
    return f"kill -9 of a drain holding a person lock (lease 2 s): the next drain ran the blocked job {done[0]:.1f} s later"


def hostile() -> str:
    from synctool.fakes.server import BackgroundServer
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.runtime import Runtime
    from synctool.web.receiver import create_app

    tmp = Path(tempfile.mkdtemp(prefix="synctool-rel-"))
    (tmp / "config.yaml").write_text("{}\n")
    env = {
        "SYNCTOOL_DB": str(tmp / "h.db"),
        "SYNCTOOL_KEYRING": "off",
        "POS_WEBHOOK_NOTIFICATION_URL": "https://x/y",
        **WEBHOOK_SECRETS,
    }
    bodies = [b"[" * 5000, b'{"a":' * 5000, b"{}", b"not json", b'{"id": {"x": 1}, "event": [1], "data": 3}', b"\xff\xfe"]
    counts: Counter = Counter()
    lock = threading.Lock()
    with BackgroundServer(create_app(Runtime.from_environ(tmp / "config.yaml", env))) as server:
        stop = time.monotonic() + 8

        def small(n: int) -> None:
            with httpx.Client(base_url=server.url, timeout=10) as client:
                i = 0
                while time.monotonic() < stop:
                    route = ["donations", "pos", "mailing", "payments", "portal"][i % 5]
                    try:
                        status = client.post(f"/webhooks/{route}", content=bodies[(i + n) % len(bodies)]).status_code
                        key = "5xx" if status >= 500 else "answered"
                    except httpx.HTTPError:
                        key = "no answer"
                    with lock:
                        counts[key] += 1
                    i += 1

        def large() -> None:
            with httpx.Client(base_url=server.url, timeout=10) as client:
                while time.monotonic() < stop:
                    try:
                        status = client.post("/webhooks/donations", content=b"x" * 1_500_000).status_code
                        key = "413" if status == 413 else f"large {status}"
                    except httpx.HTTPError:
                        key = "large: no answer"
                    with lock:
                        counts[key] += 1

        threads = [threading.Thread(target=small, args=(n,)) for n in range(8)] + [
            threading.Thread(target=large) for _ in range(2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return (
        f"hostile load (8 clients of garbage and deep JSON beside 2 of 1.5 MB bodies, 8 s): {counts['answered']} answered 4xx/2xx, "
        f"{counts['5xx']} 5xx (goal 0), {counts['no answer']} unanswered (goal 0); large bodies: {counts['413']} refused with 413, "
        f"{counts['large: no answer']} unanswered"
    )


if __name__ == "__main__":
    import logging

    logging.disable(logging.WARNING)
    for drill in (races, late_commit, kill_nine, hostile):
        print(drill(), flush=True)
