"""CRM requests per refund, measured at the CRM fake.

60 Givebutter gifts are made, then refunded as a giving day's aftermath brings them: 20 full refunds,
20 partial ones (a second partial refund of 10 of those follows), 10 in Givebutter's transaction shape,
and every refund webhook delivered twice (a replay with a new envelope id, which the receiver cannot tell
apart). Prints the CRM requests the refunds cost against the floor (a read and a write per refund applied,
nothing for a replay), floor / measured (goal 1.0), and the gifts whose amount is not what the platform kept
(goal 0).

    python bench/refunds.py [--gifts 60]
"""

from __future__ import annotations

import argparse
import copy
import sys
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fake_world import fake_world  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gifts", type=int, default=60)
    args = parser.parse_args()
    from starlette.testclient import TestClient

    from synctool.fakes import samples
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.platforms.runner import runner
    from synctool.queue.worker import drain
    from synctool.web.receiver import create_app

    with fake_world("synctool-bench-refunds-", limit=10_000, window_s=1.0, interval_ms=0) as (world, rt, conn):
        headers = {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]}
        kept: dict[str, Decimal] = {}
        with TestClient(create_app(rt)) as client:

            def send(event: str, data: dict) -> None:
                assert (
                    client.post("/webhooks/donations", content=samples.givebutter(event, data), headers=headers).status_code
                    == 200
                )

            txns = []
            for n in range(args.gifts):
                txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
                txn.update(id=f"BENCH{n:04d}", amount=100, email=f"donor{n}@example.org", last_name=f"Donor{n}")
                txn["transactions"][0]["amount"] = 100
                txns.append(txn)
                kept[f"donations_{txn['id']}"] = Decimal(100)
                send("transaction.succeeded", txn)
            drain(runner(rt), max_seconds=120)
            before = len(world.crm.requests)
            applied = 0
            third = args.gifts // 3
            refunds = []
            for n, txn in enumerate(txns):
                ext = f"donations_{txn['id']}"
                if n < third:  # full
                    refunds.append(samples.givebutter_refund(txn))
                    kept[ext] = Decimal(0)
                    applied += 1
                elif n < 2 * third:  # partial, and half of them a second partial
                    refunds.append(samples.givebutter_refund(txn, amount=30))
                    kept[ext] -= 30
                    applied += 1
                    if n % 2:
                        refunds.append({"id": f"rf2_{txn['id']}", "transaction_id": txn["id"], "amount": 20})
                        kept[ext] -= 20
                        applied += 1
                elif n < 2 * third + third // 2:  # the refunded transaction itself
                    part = {**txn["transactions"][0], "refunded": True, "amount": 100}
                    refunds.append(samples.givebutter_refund({**txn, "transactions": [part]}, as_transaction=True))
                    kept[ext] = Decimal(0)
                    applied += 1
            for refund in refunds + refunds:  # every refund twice
                send("refund.created", refund)
            drain(runner(rt), max_seconds=120)
        spent = len(world.crm.requests) - before
        floor = 2 * applied
        wrong = [
            ext
            for ext, amount in kept.items()
            if Decimal(str(next(g for g in world.crm.gifts.values() if g["external_id"] == ext)["received_amount"])) != amount
        ]
        print(f"refund deliveries: {2 * len(refunds)} ({len(refunds)} refunds, each delivered twice); applied: {applied}")
        print(f"CRM requests for the refunds: {spent}; floor (read + write per refund applied, 0 per replay): {floor}")
        print(f"floor / measured: {floor / spent if spent else 1:.3f} (goal 1.0)")
        print(f"gifts whose CRM amount is not what the platform kept: {len(wrong)} (goal 0)")
        print(f"429s: {world.crm.rejected_429}")


if __name__ == "__main__":
    main()
