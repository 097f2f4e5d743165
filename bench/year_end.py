"""`synctool year-end check` on a year of 5,000 gifts: its CRM requests (against the estimate it says before it
starts), the platform's requests, and its time, measured here and at the CRM's real pace (300 requests per
5 minutes, 1.1 s apart).

Seeded as a year of synctool's own work: 5,000 Givebutter transactions over 2025, each already in the CRM as
its gift (synctool's ledger names it), from 1,500 donors with their addresses (5 without), acknowledged; plus
5 planted differences, so the check has something to say.

    python bench/year_end.py [--gifts 5000]
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

YEAR = 2025


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gifts", type=int, default=5000)
    args = parser.parse_args()
    from fake_world import fake_world

    from synctool import store
    from synctool.crm import gifts as ledger
    from synctool.fakes import samples
    from synctool.ops import year_end
    from synctool.queue.unit import Unit

    rng = random.Random(7)
    with fake_world("synctool-year-end-", limit=100_000, window_s=1.0, interval_ms=0) as (world, rt, conn):
        donors = []
        for n in range(1500):
            made = world.crm.create_constituent({
                "first_name": "Donor", "last_name": f"Number{n}", "email_addresses": [{"address": f"donor{n}@example.org"}],
                "street_addresses": [{"street": f"{n} Main St", "city": "Oakland", "postal_code": "94607"}] if n % 300 else [],
            })  # fmt: skip
            made["updated_at"] = made["created_at"] = f"2024-{1 + n % 12:02d}-{1 + n % 28:02d}T12:00:{n % 60:02d}Z"  # long before
            donors.append(made["id"])
        template = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
        with store.atomic(conn):
            for n in range(args.gifts):
                day = f"{YEAR}-{1 + n % 12:02d}-{1 + n % 28:02d}"
                amount = rng.choice([10, 25, 50, 100, 250])
                t = copy.deepcopy(template)
                part = {**t["transactions"][0], "amount": amount}
                t.update(id=f"Y{n:05d}", amount=amount, transactions=[part], transacted_at=f"{day}T18:00:00+00:00",
                         created_at=f"{day}T18:00:00+00:00")  # fmt: skip
                world.givebutter.add_transaction(t)
                gid = world.crm.new_id()
                gift = {"id": gid, "constituent_id": donors[n % len(donors)], "external_id": f"donations_Y{n:05d}",
                        "received_amount": float(amount), "deductible_amount": float(amount), "received_date": day,
                        "gift_type_name": "Gift", "ack_template_name": "do_not_ack"}  # fmt: skip
                if n < 5:  # planted: a wrong year, a deductible, an acknowledgement, an amount, a missing gift
                    gift.update([("received_date", f"{YEAR + 1}-01-01"), ("deductible_amount", amount * 2.0),
                                 ("ack_template_name", None), ("received_amount", amount - 1.0), ("received_amount", 0.0)][n:n + 1])  # fmt: skip
                world.crm.gifts[gid] = gift
                ledger.adopt(Unit(conn), gift["external_id"], gift)
                conn.execute(
                    "INSERT INTO jobs (id, source, entity_type, entity_id, external_id, status, run_after, crm_gift_id, created_at,"
                    " updated_at) VALUES (?, 'donations', 'transaction', ?, ?, 'succeeded', ?, ?, ?, ?)",
                    (store.new_id(), t["id"], gift["external_id"], f"{day}T18:00:00Z", str(gid), f"{day}T18:00:00Z", f"{day}T18:00:00Z"),
                )  # fmt: skip
        from synctool.ops import crm as crm_ops

        crm_ops.mirror_refresh(conn, rt)  # as drain keeps it: the check refreshes it incrementally
        world.crm.requests.clear()
        estimate = year_end.estimate(conn, rt, YEAR)
        started = time.perf_counter()
        result = year_end.check(conn, rt, YEAR)
        elapsed = time.perf_counter() - started
        sent = Counter(r["path"].split("/api/v1", 1)[-1].split("?")[0] for r in world.crm.requests)
        crm = len(world.crm.requests)
        paced = max(crm * 1.1, crm / 300 * 300)  # 1.1 s apart; 300 per 5 minutes is never the bound below 272
        print(f"year-end check {YEAR}: {args.gifts:,} gifts from {len(donors):,} donors")
        print(f"  said before it started: about {estimate['crm_requests']} CRM requests, {estimate['seconds']} s")
        print(f"  CRM requests: {crm} ({', '.join(f'{n} {p}' for p, n in sent.most_common())}); estimate / measured = "
              f"{estimate['crm_requests'] / crm:.2f}")  # fmt: skip
        print(f"  Givebutter requests: {sum(result['platform_requests'].values())}")
        print(
            f"  time here: {elapsed:.1f} s; at the CRM's real pace the CRM part takes about {paced:.0f} s ({paced / 60:.1f} min)"
        )
        print(f"  blockers: {len(result['blockers'])} ({', '.join(f'{n} {k}' for k, n in result['by_kind'].items() if n)})")


if __name__ == "__main__":
    main()
