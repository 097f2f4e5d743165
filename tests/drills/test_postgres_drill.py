"""Several machines against one PostgreSQL (issue 59), drilled with the real processes: two `synctool serve` (behind
a load balancer, here the sender's own round robin) and three `synctool drain --watch` (each as its machine would run
it: its own process, the database's URL in ``SYNCTOOL_DB``), on a PostgreSQL cluster of the drill's own (tests/pg.py,
never the one the other tests share), against one CRM fake with its account's rate limit.

A giving day: signed Givebutter deliveries, spread over both receivers by senders that retry any non-2xx (or no
answer) as the platform would, on the other receiver. While deliveries and drains are under way, one receiver and
one drain are ``kill -9``ed (the drain while it holds a job's lease) and the database is restarted once
(``pg_ctl restart -m fast``: every session ended). Each fault is made when the database says its moment has come
(so many acknowledged; the drain holding a lease), never after a sleep; the outcome depends on no thread's timing.

Then: every acknowledged delivery is exactly one gift in the CRM (by external id: none missing, none twice), no
CRM window over the account's limit (the CRM refused nothing) and the pacer's slots its spacing apart, the killed
drain's leases taken over by the others, nothing left queued.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from synctool.fakes.world import FakeWorld
from tests import helpers, pg
from tests.drills.conftest import Site, coded, crm_state, givebutter_delivery

pytestmark = pytest.mark.postgresql_only(reason="several machines share one PostgreSQL: the PostgreSQL drill leg runs it")

DELIVERIES = 200
SENDERS = 6
#: the CRM account: LGL's 300 requests in any 300 s, and synctool's 1.1 s between two, with time scaled by 1/75
#: (as the other drills scale it down): 300 in any 4 s, 14.7 ms apart; as on LGL, the spacing is what binds
SCALE = 75
LIMIT, WINDOW_S, SPACING_MS = 300, 300 / SCALE, 1100 / SCALE
RETRY_S = 0.05  # the platform's pause before it retries a delivery that got no 2xx


class Machines:
    """The receivers and drains of several machines, one database, and the deliveries they were given."""

    def __init__(self, site: Site, server: pg.Server):
        self.site = site
        self.server = server
        self.receivers: list[tuple[subprocess.Popen, str]] = []
        self.drains: list[subprocess.Popen] = []
        self.acknowledged: set[int] = set()
        self.refused = 0  # answers that were not a 2xx (or no answer at all), each retried
        self.lock = threading.Lock()
        self.second_half = threading.Event()

    def serve(self) -> None:
        self.site.port = helpers.free_port()
        proc = self.site.serve()
        self.receivers.append((proc, self.site.url))

    def drain(self) -> None:
        self.drains.append(self.site.popen("drain", "--watch", "--interval", "0.2"))

    def drains_ready(self) -> bool:
        """Every drain connected and watching the queue (it says so first)."""
        logs = sorted(self.site.folder.glob("drain-*.log"))
        return len(logs) == len(self.drains) and all(b"drain --watch: polling" in log.read_bytes() for log in logs)

    def count(self, sql: str, *params: object) -> int:
        return self.site.rows(sql, *params)[0][0]

    def send(self, queue: Iterator[int], deadline: float) -> None:
        """A platform's sender: each delivery until a receiver acknowledges it, the next receiver after a refusal. The
        second half is sent once the database's restart is under way (``second_half``)."""
        with httpx.Client(timeout=5) as client:
            for n in queue:
                if n >= DELIVERIES // 2:
                    self.second_half.wait()
                body, headers = givebutter_delivery(n)
                for attempt in itertools.count(n):
                    url = self.receivers[attempt % len(self.receivers)][1]
                    try:
                        answered = client.post(f"{url}/webhooks/donations", content=body, headers=headers)
                        if answered.status_code == 200:
                            with self.lock:
                                self.acknowledged.add(n)
                            break
                    except httpx.HTTPError:
                        pass
                    with self.lock:
                        self.refused += 1
                    if time.monotonic() > deadline:
                        return
                    time.sleep(RETRY_S)

    def wait_for(self, what: str, ready, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert time.monotonic() < deadline, f"never came: {what}; the jobs: {self.jobs()}"
            time.sleep(0.02)

    def jobs(self) -> list[tuple]:
        return self.site.rows("SELECT status, count(*), min(message), min(lease_owner), min(run_after) FROM jobs GROUP BY status")

    def stop(self) -> None:
        self.site.stop()


@pytest.fixture
def machines(tmp_path: Path) -> Iterator[Machines]:
    server = pg.own_server()  # restarted below: never the cluster the process's other drills share
    try:
        with FakeWorld(crm_limit=LIMIT, crm_window_s=WINDOW_S, serve=True) as world:
            site = Site(tmp_path, world, server.new_database())
            site.env.update(
                CRM_RATE_LIMIT_REQUESTS=str(LIMIT),
                CRM_SHARE_REQUESTS=str(LIMIT),
                CRM_RATE_LIMIT_WINDOW_S=str(WINDOW_S),
                CRM_MIN_INTERVAL_MS=str(SPACING_MS),
                CRM_SEND_MARGIN_MS="0",  # (20 ms by default: nothing beside 1.1 s, more than the whole gap here)
                CRM_TIMEOUT_S="5",  # no CRM fault here: a slow answer on a loaded machine is waited for
                DONORS_MATCHING="email",
            )
            found = Machines(coded(site), server)
            try:
                yield found
            finally:
                found.stop()
    finally:
        server.stop()


def test_two_receivers_and_three_drains_share_one_postgresql_through_kills_and_a_restart(machines: Machines):
    started = time.monotonic()
    world = machines.site.world
    for _ in range(2):
        machines.serve()
    for _ in range(3):
        machines.drain()
    machines.wait_for("the drains watching the queue", machines.drains_ready)
    queue = iter(range(DELIVERIES))
    queue_lock = threading.Lock()

    def next_delivery() -> Iterator[int]:
        while True:
            with queue_lock:
                n = next(queue, None)
            if n is None:
                return
            yield n

    deadline = time.monotonic() + 90  # (bounds a hang only: on a 2-core machine the whole drill takes about 20 s)
    senders = [threading.Thread(target=machines.send, args=(next_delivery(), deadline)) for _ in range(SENDERS)]
    for t in senders:
        t.start()

    # a quarter acknowledged: one receiver's machine dies; its senders' retries go to the other
    machines.wait_for("a quarter acknowledged", lambda: len(machines.acknowledged) >= DELIVERIES // 4)
    killed_receiver, _ = machines.receivers[0]
    os.kill(killed_receiver.pid, signal.SIGKILL)
    killed_receiver.wait()

    # one drain's machine dies while it holds a job's lease (its owner names its process)
    killed_drain = machines.drains[0]
    owner = f"%:{killed_drain.pid}:%"
    machines.wait_for("the first drain holding a lease", lambda: machines.count(
        "SELECT count(*) FROM jobs WHERE status = 'running' AND lease_owner LIKE ?", owner) > 0)  # fmt: skip
    os.kill(killed_drain.pid, signal.SIGKILL)
    killed_drain.wait()
    held = [
        job_id for (job_id,) in machines.site.rows("SELECT id FROM jobs WHERE status = 'running' AND lease_owner LIKE ?", owner)
    ]

    # the first half acknowledged: the database restarts while the second half is sent and the drains work
    machines.wait_for("the first half acknowledged", lambda: len(machines.acknowledged) >= DELIVERIES // 2)
    backlog = machines.count("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")
    machines.second_half.set()
    machines.server.restart()

    for t in senders:
        t.join()
    assert len(machines.acknowledged) == DELIVERIES, f"{DELIVERIES - len(machines.acknowledged)} never acknowledged"

    def finished() -> bool:
        found = dict(machines.site.rows("SELECT status, count(*) FROM jobs GROUP BY status"))
        return sum(found.values()) >= DELIVERIES and not set(found) - {"succeeded", "skipped", "failed"}

    machines.wait_for("every job finished", finished, timeout=90)
    elapsed = time.monotonic() - started

    # every acknowledged delivery is one gift, none missing, none twice
    gifts = Counter(g["external_id"] for g in crm_state(world)["gifts"])
    assert gifts == Counter({f"donations_T{n}": 1 for n in machines.acknowledged})
    statuses = dict(machines.site.rows("SELECT status, count(*) FROM jobs GROUP BY status"))
    assert statuses == {"succeeded": DELIVERIES}, machines.site.rows(
        "SELECT status, message, last_error FROM jobs WHERE status != 'succeeded'"
    )
    # the killed drain's leases were taken over by another drain and finished there
    assert held, "the killed drain held no job: nothing was taken over"
    for job_id in held:
        [(last_worker, outcome)] = machines.site.rows(
            "SELECT worker, outcome FROM job_attempts WHERE job_id = ? ORDER BY number DESC LIMIT 1", job_id)  # fmt: skip
        assert outcome == "succeeded" and f":{killed_drain.pid}:" not in last_worker, (last_worker, outcome)
    # every drain took its share (the killed one, at least the job it held)
    pids = {int(worker.split(":")[1]) for (worker,) in machines.site.rows("SELECT DISTINCT worker FROM job_attempts")}
    assert pids == {d.pid for d in machines.drains}, (pids, [d.pid for d in machines.drains])
    # the CRM account: nothing refused, no window over the limit, the pacer's slots its spacing apart
    stats = world.crm.stats()
    assert stats["rejected_429"] == 0 and stats["max_in_any_window"] <= LIMIT, stats
    slots = [at for (at,) in machines.site.rows("SELECT at FROM crm_requests ORDER BY at")]
    assert min(b - a for a, b in zip(slots, slots[1:], strict=False)) >= SPACING_MS / 1000 - 1e-6
    # the receivers and drains that were not killed are still at work
    assert machines.receivers[1][0].poll() is None and all(d.poll() is None for d in machines.drains[1:])
    print(
        f"\n{DELIVERIES} deliveries, {len(machines.acknowledged)} acknowledged ({machines.refused} refusals retried),"
        f" {sum(gifts.values())} gifts, {stats['served']} CRM requests, max {stats['max_in_any_window']} in a"
        f" {WINDOW_S:g} s window (limit {LIMIT}), {len(held)} leases taken over, database restarted with"
        f" {backlog} jobs to do, {elapsed:.1f} s"
    )
