"""CRM requests per reconciled gift, for a month of 2,000 Givebutter gifts (goal: at most 1 request per
100 gifts, plus the platform's own pages).

The CRM fake holds the month's 2,000 gifts (and 300 made by other tools); Givebutter's fake holds the
2,000 transactions. One `reconcile` of the month; prints the CRM requests, per 100 gifts, the
platform's pages, the statuses and the time it took.

    python bench/reconcile.py [--gifts 2000]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fake_world import fake_world  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gifts", type=int, default=2000)
    args = parser.parse_args()
    from synctool.fakes import samples
    from synctool.ops.reconcile import reconcile

    with fake_world("synctool-bench-reconcile-", limit=100_000, window_s=1.0, interval_ms=0) as (world, rt, conn):
        donor = world.crm.create_constituent({"first_name": "Bench", "last_name": "Donor"})
        for n in range(args.gifts + 300):
            day = f"2026-10-{1 + n % 31:02d}"
            gid = 700000 + n
            ours = n < args.gifts
            world.crm.gifts[gid] = {
                "id": gid,
                "constituent_id": donor["id"],
                "external_id": f"donations_B{n:05d}" if ours else None,
                "received_amount": 25.0,
                "received_date": day,
            }
            if ours:
                txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
                txn.update(id=f"B{n:05d}", amount=25, transacted_at=f"{day}T16:00:00+00:00", created_at=f"{day}T16:00:00+00:00")
                world.givebutter.add_transaction(txn)
        started = time.perf_counter()
        report = reconcile(conn, rt, start="2026-10-01", end="2026-10-31", source="donations")
        took = time.perf_counter() - started
    crm = report["crm_requests"]
    print(f"gifts reconciled: {args.gifts} (+{report['totals']['other_tools']['count']} by other tools, not compared)")
    print(f"statuses: { {k: v for k, v in report['totals']['by_status'].items() if v} }")
    print(f"CRM requests: {crm} = {crm / args.gifts * 100:.2f} per 100 gifts (goal <= 1.00)")
    print(f"Givebutter requests (100 a page): {report['platform_requests']['donations']}")
    print(f"time: {took:.1f} s in process")


if __name__ == "__main__":
    main()
