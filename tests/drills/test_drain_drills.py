"""The drain's promises, kept by the real `synctool drain` against the CRM fake: `kill -9` mid-write leaves one
gift per external id and one constituent per donor, and the next drain finishes the queue within about one
lease; every CRM fault ends with one gift or a clear failure within `queue.max_attempts` (README "Reliability")."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from tests.drills.conftest import Site, crm_fault, crm_state

LEASE_S = 2.0  # QUEUE_LEASE_SECONDS in the drill's environment
GRACE_S = 1.0  # CRM_CONFIRM_AFTER_S


def watch(site: Site, env: dict[str, str] | None = None):
    """`synctool drain --watch`, as its systemd unit runs it, looking for due jobs every 0.2 s."""
    return site.popen("drain", "--watch", "--interval", "0.2", env=env)


def deliver(site: Site, donors: int) -> None:
    for n in range(donors):
        r = site.give(n)
        assert r.status_code == 200 and r.json()["status"] == "accepted", r.text


def wait_for_request(site: Site, method: str, suffix: str, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(r["method"] == method and r["path"].endswith(suffix) for r in crm_state(site.world)["requests"]):
            return
        time.sleep(0.02)
    raise AssertionError(f"the CRM never saw {method} ...{suffix}")


def assert_one_of_each(site: Site, donors: int) -> None:
    state = crm_state(site.world)
    gifts = Counter(g["external_id"] for g in state["gifts"])
    assert gifts == Counter({f"donations_T{n}": 1 for n in range(donors)})
    people = Counter(c["last_name"] for c in state["constituents"])  # each donor has a last name of their own
    assert people == Counter({f"Number{n}": 1 for n in range(donors)})


@pytest.mark.parametrize("path", ["/gifts", "/constituents"], ids=["gift-path", "matching-path"])
def test_kill_9_of_a_drain_mid_write_leaves_one_gift_and_one_donor(coded_site: Site, path: str):
    site = coded_site
    site.serve()
    deliver(site, 6)
    # the CRM stores the write and answers late: the drain is killed while it waits for the answer
    crm_fault(site.world, "commit_timeout", method="POST", path=path)
    # the answer is held back 10 s and its client waits 30 s: the drain still holds the job when it is killed
    site.world.crm.timeout_sleep_s = 10
    drain = site.drain(30, env={"CRM_TIMEOUT_S": "30"})
    wait_for_request(site, "POST", path)
    os.kill(drain.pid, signal.SIGKILL)
    drain.wait()
    site.world.crm.timeout_sleep_s = 1.5
    killed_at = datetime.now(UTC)
    held = site.rows("SELECT id, lease_expires FROM jobs WHERE status = 'running'")  # what the killed drain held
    assert held, "the killed drain held no job: the timing below would check nothing"
    [(before,)] = site.rows("SELECT coalesce(max(id), 0) FROM job_attempts")
    watch(site)
    statuses = site.wait_until_done(timeout=40)
    assert statuses == {"succeeded": 6}, site.rows("SELECT status, message, last_error FROM jobs")
    assert_one_of_each(site, 6)
    # the killed jobs' leases lapse (one lease), then an unconfirmed write is confirmed by a search (the grace): timed
    # from the database, from when both the lease had lapsed and the new drain was at work (its start-up is the
    # machine's, not synctool's), to the last killed job's end
    at = datetime.fromisoformat
    [(working,)] = site.rows("SELECT min(started_at) FROM job_attempts WHERE id > ?", before)
    for job_id, expires in held:
        assert at(expires) - killed_at < timedelta(seconds=LEASE_S), expires  # one lease, no more
        [(ended,)] = site.rows("SELECT finished_at FROM jobs WHERE id = ?", job_id)
        assert at(ended) - max(at(working), at(expires)) < timedelta(seconds=GRACE_S + 6), (ended, working, expires)


FAULTS = {
    "500-once": ("500", 1),
    "timeout": ("timeout", 1),  # no answer in time, nothing stored
    "commit-then-timeout": ("commit_timeout", 1),  # stored, the answer lost
    "late-commit": ("late_commit", 1),  # stored after the client gave up
}


@pytest.mark.parametrize("fault", FAULTS, ids=list(FAULTS))
def test_a_crm_fault_on_the_gift_post_ends_with_one_gift(coded_site: Site, fault: str):
    site = coded_site
    site.serve()
    deliver(site, 2)
    mode, count = FAULTS[fault]
    crm_fault(site.world, mode, count=count, method="POST", path="/gifts")
    watch(site)
    assert site.wait_until_done(timeout=25) == {"succeeded": 2}, site.rows("SELECT status, message, last_error FROM jobs")
    if mode == "late_commit":
        time.sleep(3.5)  # the commit lands 3 s after the POST: it must not become a second gift
    assert_one_of_each(site, 2)


def test_a_crm_that_always_answers_500_fails_the_job_with_its_error_within_max_attempts(coded_site: Site):
    site = coded_site
    site.serve()
    deliver(site, 1)
    crm_fault(site.world, "500", count=1_000_000, method="POST", path="/gifts")
    # nor a lease here: a search slow on a loaded machine is not asked twice, a starved heartbeat costs no attempt
    watch(site, env={"CRM_TIMEOUT_S": "30", "QUEUE_LEASE_SECONDS": "30"})
    assert site.wait_until_done(timeout=25) == {"failed": 1}
    [(attempts, error)] = site.rows("SELECT attempts, last_error FROM jobs")
    assert attempts == 3 and "CRM answered 500" in error and "was not stored" in error, error
    time.sleep(1)  # nothing more is sent for it
    requests = crm_state(site.world)["requests"]
    assert sum(r["method"] == "POST" and r["path"].endswith("/gifts") for r in requests) == 3
    assert sum(r["path"].endswith("/gifts/search") for r in requests) == 3
    shown = site.run("syncs", "list", "--status", "failed", "--json")
    assert shown.returncode == 0 and "answered 500" in shown.stdout, shown.stdout
