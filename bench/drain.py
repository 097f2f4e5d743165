"""500 mixed deliveries through the receiver, then drains against the CRM fake with limits scaled down
100x (300 requests / 3 s, 11 ms apart). Prints jobs per second as a fraction of what the CRM's allowed
rate permits at the measured requests per job, the 429s (goal 0) and duplicate gifts (goal 0).

    python bench/drain.py [--deliveries 500]
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

LIMIT, WINDOW_S, INTERVAL_MS = 300, 3.0, 11.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deliveries", type=int, default=500)
    args = parser.parse_args()
    from fake_world import POS_URL, fake_world
    from starlette.testclient import TestClient

    from synctool.fakes import samples
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.platforms.mailchimp import ops as mailing
    from synctool.platforms.runner import runner
    from synctool.platforms.square import settings as pos_settings
    from synctool.queue.worker import drain
    from synctool.web.receiver import create_app

    rng = random.Random(11)
    with fake_world("synctool-drain-", limit=LIMIT, window_s=WINDOW_S, interval_ms=INTERVAL_MS) as (world, rt, conn):
        mailing.set_mapping(conn, mailing.ListMappingBody(list_id="b7e21c0d94"))
        mailing.set_tag_rule(conn, mailing.TagRuleBody(list_id="*", event="unsubscribe", add=[12222], remove=[12221]))
        pos_settings.write(conn, pos_settings.PosDefaultBody(email="walkin@example.org", last_name="Customer"))
        donors = [f"donor{n}@example.org" for n in range(120)]
        kinds = Counter()
        bodies = []
        for n in range(args.deliveries):
            roll = rng.random()
            email = rng.choice(donors)
            if roll < 0.55:
                txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
                txn.update(id=f"TX{n:05d}", email=email, last_name=email.split("@")[0], amount=rng.choice([10, 25, 50]))
                bodies.append(("donations", samples.givebutter("transaction.succeeded", txn)))
                kinds["donation"] += 1
            elif roll < 0.80:
                order_id = f"ORD{n:05d}"
                customer = {"id": f"C{email}", "given_name": "Pat", "family_name": email.split("@")[0], "email_address": email}
                world.square.customers[customer["id"]] = customer
                world.square.orders[order_id] = {
                    "id": order_id,
                    "location_id": "FPYCBCHYMXFK1",
                    "state": "COMPLETED",
                    "created_at": "2026-11-20T10:00:00Z",
                    "customer_id": customer["id"],
                    "total_money": {"amount": 1500, "currency": "USD"},
                    "tenders": [{"id": "t", "type": "CARD"}],
                }
                bodies.append(("pos", samples.square_order_event(order_id)))
                kinds["pos"] += 1
            elif roll < 0.92:
                bodies.append(
                    ("mailing", samples.mailchimp_unsubscribe(email=email, fired_at=f"2026-11-20 10:{n % 60:02d}:{n % 59:02d}"))
                )
                kinds["unsubscribe"] += 1
            else:
                source, body = bodies[rng.randrange(len(bodies))] if bodies else ("donations", b"")
                bodies.append((source, body))
                kinds["repeat"] += 1
        with TestClient(create_app(rt)) as client:
            statuses = Counter()
            for source, body in bodies:
                if source == "donations":
                    r = client.post(
                        "/webhooks/donations", content=body, headers={"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]}
                    )
                elif source == "pos":
                    sig = samples.square_signature(WEBHOOK_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"], POS_URL, body)
                    r = client.post("/webhooks/pos", content=body, headers={"x-square-hmacsha256-signature": sig})
                else:
                    r = client.post(f"/webhooks/mailing?secret={WEBHOOK_SECRETS['MAILING_WEBHOOK_SECRET']}", content=body)
                statuses[r.json().get("status")] += 1
        print(f"deliveries: {dict(kinds)}; receiver answers: {dict(statuses)}")

        started = time.perf_counter()
        totals = Counter()
        while True:
            summary = drain(runner(rt), max_seconds=55)
            totals.update(
                {
                    "jobs": summary.claimed,
                    "succeeded": summary.succeeded,
                    "skipped": summary.skipped,
                    "failed": summary.failed,
                    "crm": summary.crm_requests,
                }
            )
            if summary.claimed == 0:
                break
        elapsed = time.perf_counter() - started
        stats = world.crm.stats()
        allowed = min(LIMIT / WINDOW_S, 1000 / INTERVAL_MS)
        per_job = totals["crm"] / max(totals["jobs"], 1)
        jobs_per_s = totals["jobs"] / elapsed
        ceiling = allowed / per_job if per_job else float("inf")
        ext = Counter(g["external_id"] for g in world.crm.gifts.values())
        duplicates = sum(c - 1 for c in ext.values() if c > 1)
        print(
            f"drain: {totals['jobs']} jobs ({totals['succeeded']} succeeded, {totals['skipped']} skipped, "
            f"{totals['failed']} failed) in {elapsed:.1f} s; {totals['crm']} CRM requests, {per_job:.2f} per job"
        )
        print(
            f"  {jobs_per_s:.1f} jobs/s vs the CRM-bound ceiling {ceiling:.1f} jobs/s "
            f"({allowed:.1f} requests/s / {per_job:.2f}): {jobs_per_s / ceiling:.2f}"
        )
        print(
            f"  429s: {stats['rejected_429']} (goal 0); most requests in any {WINDOW_S:.0f} s window: "
            f"{stats['max_in_any_window']} of {LIMIT}; duplicate gifts: {duplicates} (goal 0); "
            f"gifts {len(world.crm.gifts)}, constituents {len(world.crm.constituents)}"
        )


if __name__ == "__main__":
    main()
