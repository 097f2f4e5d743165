"""PostgreSQL's counters without a hot row (store/schema/scale.py's m021): the hourly job counts and campaign gifts
are kept in a shard per writing connection, so two receivers storing one platform's deliveries in one hour commit
side by side, and every reader (the sync log's totals, the overview's counts and campaigns, the copy's check) sums
a counter's rows into the same numbers as before. No test here waits on a clock: a transaction is held open while
the other commits, under a lock timeout that fails the test rather than hang it, were the row still shared."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import time_machine

from synctool import store
from synctool.queue import jobs, log
from synctool.store.schema.scale import SHARDS

NOW = "2026-03-01T10:15:00Z"
SINCE = "2026-03-01T09:00:00.000000Z"


@pytest.fixture
def clock() -> Iterator[None]:
    with time_machine.travel(NOW, tick=False):
        yield


def shard(conn: store.Connection) -> int:
    return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0]) % SHARDS


def apart(pg_url: str) -> tuple[store.Connection, store.Connection, list[store.Connection]]:
    """Two connections writing different shards (the server's process ids decide: another is opened until they
    differ), and the ones passed over, to close."""
    a = store.connect(pg_url)
    spare: list[store.Connection] = []
    while True:
        b = store.connect(pg_url, migrate=False)
        if shard(b) != shard(a):
            return a, b, spare
        spare.append(b)


@pytest.fixture
def two(pg_url: str, clock: None) -> Iterator[tuple[store.Connection, store.Connection]]:
    a, b, spare = apart(pg_url)
    yield a, b
    for conn in (a, b, *spare):
        conn.close()


def gift(conn: store.Connection, entity_id: str, campaign: int = 77) -> str:
    payload = {"transaction": {"campaign_id": campaign}}
    return jobs.enqueue(conn, source="donations", entity_type="transaction", entity_id=entity_id, payload=payload)


def test_two_writers_of_one_counter_commit_side_by_side_and_the_counts_stay_exact(two) -> None:
    a, b = two
    for conn in (a, b):  # where b would wait on a's counter row, it fails at once rather than hang
        conn.execute("SET lock_timeout = '5s'")
    with store.atomic(a):  # a receiver's transaction, its gift stored, not yet committed
        gift(a, "1")
        with store.atomic(b):  # another receiver: the same source, hour and campaign, committed meanwhile
            gift(b, "2")
        assert log.counts_since(b, SINCE)[0]["total"] == 1  # a's not yet seen
    total, _ = log.page(a, source="donations")
    assert total == 2
    overall, per_source = log.counts_since(a, SINCE)
    assert (overall["total"], overall["queued"], per_source["donations"]["queued"]) == (2, 2, 2)
    campaigns = log.gifts_by_campaign(a, "donations", SINCE)
    assert [(c["campaign_id"], c["gifts"], c["last_gift_at"]) for c in campaigns] == [("77", 2, "2026-03-01T10:15:00.000000Z")]
    rows = a.execute("SELECT count(*), sum(n) FROM job_counts").fetchone()
    assert tuple(rows) == (2, 2)  # one row per writer's shard, summed by every reader


def test_counts_moved_by_other_writers_sum_to_the_jobs_whatever_shard_holds_them(two) -> None:
    a, b = two
    with store.atomic(a):
        ids = [gift(a, str(i), campaign=i % 2) for i in range(6)]
    for _ in range(3):  # b claims and finishes what a queued; a claims the rest and waits them
        row = jobs.claim(b, "b")
        assert row is not None and jobs.finish(b, row, "b", jobs.Outcome("succeeded"))
    while (row := jobs.claim(a, "a")) is not None:
        assert jobs.wait(a, row, "a", "not yet", 3600) == "queued"
    with store.atomic(b):
        b.execute("DELETE FROM job_attempts WHERE job_id = ?", (ids[0],))
        b.execute("DELETE FROM jobs WHERE id = ?", (ids[0],))  # as prune does
    by_status = dict(a.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall())
    counted = {k: v for k, v in log.counts_since(b, SINCE)[0].items() if v and k != "total"}
    assert counted == by_status and sum(by_status.values()) == 5
    assert a.execute("SELECT count(DISTINCT shard) FROM job_counts").fetchone()[0] == 2
    gifts = {c["campaign_id"]: c["gifts"] for c in log.gifts_by_campaign(b, "donations", SINCE)}
    assert gifts == {"0": 2, "1": 3}


def test_the_copy_reads_a_counter_s_shards_as_its_one_row(two, tmp_path: Path) -> None:
    a, b = two
    for conn, entity in ((a, "1"), (b, "2"), (a, "3")):
        with store.atomic(conn):
            gift(conn, entity)
    target = store.connect(tmp_path / "copy.db")
    try:
        store.copy.copy_rows(a, target)
        checks = {c.table: c for c in store.copy.compare(a, target)}
        assert [(t, c.difference) for t, c in checks.items() if c.difference] == []
        assert (checks["job_counts"].rows, checks["campaign_hours"].rows) == (1, 1)
        assert target.execute("SELECT n FROM job_counts").fetchone()[0] == 3
    finally:
        target.close()
