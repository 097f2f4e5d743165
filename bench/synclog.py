"""The sync log over 1,000,000 jobs: filtered listing in-process (the command's start-up is
``bench/startup.py``).

    python bench/synclog.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synctool import store  # noqa: E402
from synctool.ops.syncs import SyncQuery, list_syncs  # noqa: E402

SOURCES = ["donations", "pos", "mailing", "payments", "portal"]
STATUSES = ["succeeded"] * 14 + ["skipped"] * 3 + ["failed", "queued"]


COLUMNS = ("id", "source", "entity_type", "entity_id", "external_id", "status", "run_after", "email", "name", "last_error",
           "created_at", "updated_at")  # fmt: skip


def records(rows: int) -> Iterator[tuple]:
    """The sync records, newest first, about 30 days of them: the same ones whichever engine they go into."""
    rng = random.Random(7)
    now = store.utcnow()
    for n in range(rows):
        created = store.iso(now - timedelta(seconds=n * 2.6))
        status = rng.choice(STATUSES)
        yield (
            f"{n:08d}-0000-4000-8000-000000000000",
            rng.choice(SOURCES),
            "transaction",
            str(n),
            f"donations_{n:010d}",
            status,
            created,
            f"donor{n % 50000}@example.org",
            f"Donor {n % 50000}",
            "CRM answered 503 Service Unavailable" if status == "failed" else None,
            created,
            created,
        )


def seed(conn, rows: int) -> None:
    """``records(rows)`` into the jobs table, then ANALYZE: SQLite's in batches of 50,000 in one transaction, their
    search index and counters kept by the schema's triggers; PostgreSQL's by ``copy_jobs``."""
    if getattr(conn, "engine", None) == "postgresql":
        copy_jobs(conn, rows)
        conn.execute("VACUUM ANALYZE")  # what autovacuum leaves a settled database with (its visibility map too)
        return
    insert = f"INSERT INTO jobs ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
    conn.execute("BEGIN")
    every = records(rows)
    while batch := list(itertools.islice(every, 50_000)):
        conn.executemany(insert, batch)
    conn.execute("COMMIT")
    conn.execute("ANALYZE")


def copy_jobs(conn, rows: int) -> None:
    """PostgreSQL's: one COPY with the row triggers off (run a row at a time they take minutes over a million), then
    what they keep made in one statement each, as store/schema_postgres.sql's jobs_search_keep, job_counts_keep and
    job_campaigns_keep make it a row at a time; checked against the rows after."""
    with conn.raw.transaction(), conn.raw.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")  # no trigger fires
        with cursor.copy(f"COPY jobs ({', '.join(COLUMNS)}) FROM STDIN") as copy:
            for row in records(rows):
                copy.write_row(row)
        cursor.execute("SET LOCAL session_replication_role = origin")
        cursor.execute(
            "INSERT INTO jobs_search (job_id, document)"
            " SELECT id, to_tsvector('simple', concat_ws(' ', external_id, email, name, last_error)) FROM jobs"
        )
        cursor.execute(
            "INSERT INTO job_counts (hour, source, status, polled, n) SELECT substr(created_at, 1, 13), source, status,"
            " job_polled(payload), count(*) FROM jobs GROUP BY 1, 2, 3, 4"
            " ON CONFLICT (hour, source, status, polled, shard) DO UPDATE SET n = job_counts.n + excluded.n"  # shard 0 (m021)
        )
        cursor.execute("SELECT count(job_campaigns_add(j)) FROM jobs j WHERE target = 'crm' AND entity_type = 'transaction'"
                       " AND (payload IS NOT NULL OR delivery_id IS NOT NULL)")  # fmt: skip
        cursor.execute("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM jobs_search), (SELECT sum(n) FROM job_counts)")
        found = cursor.fetchone()
        assert found is not None and found[0] == found[1] == found[2], found


def timed(fn, runs: int = 7) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="synctool-synclog-"))
    db_path = tmp / "synclog.db"
    conn = store.connect(db_path)
    started = time.perf_counter()
    seed(conn, args.rows)
    print(f"seeded {args.rows} jobs in {time.perf_counter() - started:.1f} s (their search index and counters with them)")

    cases = {
        "status+source+date": dict(status="failed", source="pos", date_from="7d"),
        "--q e-mail": dict(q="donor4242@example.org"),
        "--q with filters": dict(q="donor4242", status="succeeded", source="donations", date_from="30d"),
        "no filter (page 1)": dict(),
        "no filter (page 200)": dict(page=200),
    }
    print(f"{'list_syncs, in process':<28}{'median ms':>10}{'total rows':>12}")
    for name, kwargs in cases.items():
        query = SyncQuery(**kwargs)
        total = list_syncs(conn, query)["total"]
        print(f"{name:<28}{timed(lambda q=query: list_syncs(conn, q)):>10.1f}{total:>12}")
    print("start-up: python bench/startup.py")


if __name__ == "__main__":
    main()
