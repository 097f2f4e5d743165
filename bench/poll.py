"""What the backup polls and `webhooks heal` cost, measured at the fakes, side by side in one run.

A quiet day: nothing new since the last run. A giving day: ``--gifts`` Givebutter transactions and as many
Square sales in the poll's window (its 15 minutes plus the 60-minute overlap), every one already delivered
by its webhook, and a tenth of them refunded. Prints, per poll run, the platform requests and the CRM
requests (goal 0: the poll queues only what synctool has not seen, and queuing costs the CRM nothing), the
jobs queued, and `heal`'s requests with nothing and with ``--gifts`` failed deliveries to read; then a quiet day
with Square's API refusing connections (Givebutter's poll runs all the same; Square's costs its retries).

    python bench/poll.py [--gifts 400]
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
    parser.add_argument("--gifts", type=int, default=400)
    args = parser.parse_args()
    from synctool.fakes import samples
    from synctool.ops.poll import poll
    from synctool.ops.webhooks import heal
    from synctool.queue import jobs

    def run(label: str, conn, rt, world) -> None:
        crm_before = len(world.crm.requests)
        started = time.perf_counter()
        result = poll(conn, rt)
        took = time.perf_counter() - started
        per = ", ".join(
            f"{role} {r['requests']} requests / {r['queued']} queued" if r["status"] == "ok" else f"{role} FAILED ({r['error']})"
            for role, r in result["sources"].items()
        )
        print(f"{label:<12} poll: {per}; CRM requests {len(world.crm.requests) - crm_before}; {took * 1000:.0f} ms")

    with fake_world("synctool-bench-poll-", limit=10_000, window_s=1.0, interval_ms=0) as (world, rt, conn):
        poll(conn, rt)  # the first run sets the watermarks
        run("quiet day", conn, rt, world)
        now = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 300))
        for n in range(args.gifts):
            txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
            txn.update(id=f"GD{n:05d}", created_at=now, transacted_at=now, updated_at=now, email=f"d{n}@example.org")
            world.givebutter.add_transaction(txn)
            order_id = f"SQ{n:05d}"
            world.square.orders[order_id] = {"id": order_id, "location_id": "FPYCBCHYMXFK1", "state": "COMPLETED",
                                             "created_at": now.replace("+00:00", "Z"), "total_money": {"amount": 1000, "currency": "USD"},
                                             "tenders": [{"type": "CARD"}]}  # fmt: skip
            for source, entity, ext in (
                ("donations", "transaction", f"donations_{txn['id']}"),
                ("pos", "order", f"pos_order_{order_id}"),
            ):
                jobs.enqueue(
                    conn, source=source, entity_type=entity, entity_id=ext.split("_")[-1], external_id=ext
                )  # as its webhook did
        for n in range(0, args.gifts, 10):
            world.givebutter.refund_transaction(f"GD{n:05d}")
        run("giving day", conn, rt, world)
        quiet = heal(conn, rt, since="1d", dry_run=True)
        print(f"heal, nothing failed: {quiet['requests']} platform requests, 0 CRM requests")
        from synctool.ops.webhooks import register

        register(conn, rt, "https://sync.example.org", ["donations"])
        for n in range(args.gifts):
            world.givebutter.record_delivery("transaction.succeeded", {"id": f"GD{n:05d}"}, failed=True)
        busy = heal(conn, rt, since="1d", dry_run=True)
        print(
            f"heal, {args.gifts} failed deliveries: {busy['requests']} platform requests, {busy['found']} found, 0 CRM requests"
        )
        # Square's API down (connection refused): Givebutter's part is the same; Square's costs its client's retries
        import dataclasses

        import httpx

        def refused(request: httpx.Request) -> httpx.Response:
            raise httpx.ConnectError("connection refused", request=request)

        down = dataclasses.replace(rt, transports={**rt.transports, "pos": httpx.MockTransport(refused)})
        run("square down", conn, down, world)


if __name__ == "__main__":
    main()
