"""CRM requests per soft credit and per applied donor change, measured at the CRM fake, against their floors.

``--gifts`` Givebutter gifts are made on the pages of ``--fundraisers`` peer-to-peer fundraisers the CRM knows,
each by a new donor: the soft credits' cost is the CRM requests of the run less those of the same gifts made
without a fundraiser (floor: 1 per soft credit, its POST). Then every donor gives again from a new address,
and `donors apply --all` adds the proposed changes (floor: 1 per change). Also prints the Givebutter requests
(one member read per fundraiser, cached).

    python bench/donor_record.py [--gifts 60] [--fundraisers 5]
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fake_world import fake_world  # noqa: E402


def run(gifts: int, fundraisers: int, with_raisers: bool) -> dict[str, int]:
    from starlette.testclient import TestClient

    from synctool.fakes import samples
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.ops.donors import DecideBody, apply
    from synctool.platforms.runner import runner
    from synctool.queue.worker import drain
    from synctool.web.receiver import create_app

    with fake_world("synctool-bench-donors-", limit=10_000, window_s=1.0, interval_ms=0) as (world, rt, conn):
        for f in range(fundraisers):
            world.givebutter.add_member(
                118722, {"id": 700 + f, "first_name": "Raiser", "last_name": f"No{f}", "email": f"r{f}@example.org"}
            )
            world.crm.create_constituent({"first_name": "Raiser", "last_name": f"No{f}", "email_addresses": [{"address": f"r{f}@example.org"}]})  # fmt: skip
        headers = {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]}
        with TestClient(create_app(rt)) as client:

            def give(txn: dict) -> None:
                body = samples.givebutter("transaction.succeeded", txn)
                assert client.post("/webhooks/donations", content=body, headers=headers).status_code == 200

            gb_before = len(world.givebutter.requests)
            start = len(world.crm.requests)
            for n in range(gifts):
                txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
                txn.update(id=f"P2P{n:04d}", email=f"donor{n}@example.org", last_name=f"Donor{n}")
                if with_raisers:
                    txn.update(member_id=700 + n % fundraisers, member_name=f"Raiser No{n % fundraisers}")
                give(txn)
            drain(runner(rt), max_seconds=120)
            gifts_cost = len(world.crm.requests) - start
            platform_cost = len([r for r in world.givebutter.requests[gb_before:] if "/members/" in r["path"]])
            for n in range(gifts):
                txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
                txn.update(id=f"AGAIN{n:04d}", email=f"donor{n}@example.org", last_name=f"Donor{n}",
                           address={"address_1": f"{n} New Road", "city": "Berkeley", "state": "CA", "zipcode": "94704"})  # fmt: skip
                give(txn)
            drain(runner(rt), max_seconds=120)
            mark = len(world.crm.requests)
            applied = apply(conn, rt, DecideBody(all=True))["applied"]
            return {
                "gifts": gifts_cost,
                "member_reads": platform_cost,
                "applied": applied,
                "apply": len(world.crm.requests) - mark,
            }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gifts", type=int, default=60)
    parser.add_argument("--fundraisers", type=int, default=5)
    args = parser.parse_args()
    plain = run(args.gifts, args.fundraisers, with_raisers=False)
    raised = run(args.gifts, args.fundraisers, with_raisers=True)
    per_credit = (raised["gifts"] - plain["gifts"]) / args.gifts
    print(f"{args.gifts} gifts: {plain['gifts']} CRM requests without fundraisers, {raised['gifts']} on {args.fundraisers} "
          f"fundraisers' pages: {per_credit:.2f} CRM requests per soft credit (floor 1: floor/measured {1 / per_credit:.3f}); "
          f"{raised['member_reads']} Givebutter member reads")  # fmt: skip
    print(f"donor changes: {raised['applied']} applied in {raised['apply']} CRM requests "
          f"({raised['apply'] / max(raised['applied'], 1):.2f} per change, floor 1)")  # fmt: skip


if __name__ == "__main__":
    main()
