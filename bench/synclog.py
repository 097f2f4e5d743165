"""The sync log over 1,000,000 jobs: filtered listing in-process (the command's start-up is
``bench/startup.py``).

    python bench/synclog.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synctool import store  # noqa: E402
from synctool.ops.syncs import SyncQuery, list_syncs  # noqa: E402

SOURCES = ["donations", "pos", "mailing", "payments", "portal"]
STATUSES = ["succeeded"] * 14 + ["skipped"] * 3 + ["failed", "queued"]


def seed(conn, rows: int) -> None:
    rng = random.Random(7)
    now = store.utcnow()
    batch = []
    conn.execute("BEGIN")
    for n in range(rows):
        created = store.iso(now - timedelta(seconds=n * 2.6))  # about 30 days
        status = rng.choice(STATUSES)
        batch.append(
            (
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
        )
        if len(batch) == 50_000:
            conn.executemany(
                "INSERT INTO jobs (id, source, entity_type, entity_id, external_id, status, run_after, email, name,"
                " last_error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                batch,
            )
            batch = []
    if batch:
        conn.executemany(
            "INSERT INTO jobs (id, source, entity_type, entity_id, external_id, status, run_after, email, name,"
            " last_error, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            batch,
        )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")


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
