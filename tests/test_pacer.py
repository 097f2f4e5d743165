"""The pacer (pacer.py): slots a minimum interval plus the send margin apart, never more than synctool's
share of the account's requests in any window, held across processes; measured at the CRM fake."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from synctool.crm.pacer import Limits, Pacer

ROOT = Path(__file__).resolve().parents[1]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_slots_keep_the_interval_plus_margin_and_the_window_cap(tmp_path):
    from synctool import store

    store.connect(tmp_path / "p.db").close()
    clock = Clock()
    pacer = Pacer(
        tmp_path / "p.db",
        Limits(requests=5, window_s=10.0, min_interval_s=1.0, account_limit=6, send_margin_s=0.25),
        clock=clock,
        sleep=clock.sleep,
    )
    sent = []
    for _ in range(7):
        pacer.acquire()
        sent.append(clock.now)
    gaps = [b - a for a, b in zip(sent, sent[1:], strict=False)]
    assert all(gap >= 1.25 - 1e-9 for gap in gaps)  # the interval plus the send margin
    # the sixth waits until the first has left the 10 s window (plus its small margin)
    assert sent[5] >= sent[0] + 10.0
    budget = pacer.budget()
    assert budget["limit"] == 5 and budget["account_limit"] == 6 and budget["min_interval_ms"] == 1000.0
    pacer.close()


def test_a_clock_set_back_does_not_stall_the_next_request(tmp_path):
    from synctool import store

    store.connect(tmp_path / "p.db").close()
    clock = Clock()
    pacer = Pacer(tmp_path / "p.db", Limits(requests=5, window_s=10.0, min_interval_s=1.0), clock=clock, sleep=clock.sleep)
    for _ in range(3):
        pacer.acquire()
    clock.now -= 365 * 86400  # the machine's clock corrected by a year (NTP, a wrong date set by hand)
    assert pacer.acquire() == 0.0  # the requests reserved "in the future" no longer hold the next one back
    assert pacer.acquire() >= 1.0  # and the spacing holds again from the corrected clock
    pacer.close()


@pytest.mark.drill  # real processes: the drill tier, on each leg's engine (the PostgreSQL leg's ledger: store.exclusive)
def test_two_processes_never_exceed_the_limit(served_crm, env, db):
    served_crm.limit, served_crm.window_s = 10, 1.0
    env["CRM_RATE_LIMIT_REQUESTS"] = "10"
    env["CRM_MIN_INTERVAL_MS"] = "50"
    # a loaded 2-core CI machine wakes a sleeper tens of milliseconds late, and a busy one (the drill tier beside
    # other work) over a hundred: the margin is what the pacer keeps for that jitter, as an operator would set it
    env["CRM_SEND_MARGIN_MS"] = "200"
    env["CRM_TIMEOUT_S"] = "30"  # no fault here: an answer slow on a loaded machine is waited for, not asked twice
    hammer = [sys.executable, "-m", "tests.crm_hammer", "14"]
    procs = [subprocess.Popen(hammer, cwd=ROOT, env={**os.environ, **env}) for _ in range(2)]
    for p in procs:
        assert p.wait(timeout=60) == 0
    stats = served_crm.stats()
    assert stats["served"] == 28 and stats["rejected_429"] == 0
    assert stats["max_in_any_window"] <= 10
    # the slots the two processes reserved are spaced (as the CRM receives them, a stall of this process's server
    # may bunch two: what the CRM enforces is its window, above)
    slots = [at for (at,) in db.execute("SELECT at FROM crm_requests ORDER BY at")]
    assert len(slots) == 28 and min(b - a for a, b in zip(slots, slots[1:], strict=False)) >= 0.05 + 0.2 - 1e-6


def test_budget_command(fake_crm, cli, crm_client):
    crm_client.request("GET", "/funds")
    result = json.loads(cli("crm", "budget", "--json").stdout)
    assert result["used_in_window"] == 1 and result["limit"] == 1000
