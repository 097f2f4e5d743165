"""CRM requests per gift on a giving day, measured at the CRM fake.

The organisation's CRM already holds 400 constituents (common surnames) that synctool has never seen.
240 Givebutter gifts arrive through the receiver: 120 first gifts from those existing donors (e-mail case
varied), 72 from brand-new donors, and 48 repeat gifts from donors who already gave today. Drain then runs
as cron would, with the CRM's limits and cron's 55 s runs scaled down 10x (300 requests / 30 s, 110 ms
apart, 5.5 s runs): as in production, a run is bound by the CRM's pace, not by synctool's own work, so
the bench has as many runs (and mirror refreshes) as the real day would.

Prints the requests per gift measured at the fake, the floor (one gift POST per gift plus one create per
new donor), floor / measured (goal >= 0.95), what a search-every-gift flow spends on the same day, and the
duplicates (donors, gifts) and 429s (goal 0 each). The day runs twice, side by side: with donor matching as
shipped (``donors.matching: review``: every new donor is also looked for by name, address and phone on the
mirror) and with the e-mail match alone (``email``), so the matching's cost in CRM requests is the difference.

    python bench/requests_per_gift.py [--existing 400] [--first 120] [--new 72] [--repeats 48]
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

LIMIT, WINDOW_S, INTERVAL_MS, CRON_RUN_S = 300, 30.0, 110.0, 5.5
SURNAMES = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez"]
FIRST_NAMES = [
    "Mary",
    "James",
    "Linda",
    "John",
    "Maria",
    "David",
    "Susan",
    "Robert",
    "Karen",
    "Michael",
    "Lisa",
    "William",
    "Nancy",
    "Joseph",
    "Betty",
    "Thomas",
    "Sandra",
    "Daniel",
    "Ashley",
    "Paul",
]


def vary_case(email: str, rng: random.Random) -> str:
    local, _, domain = email.partition("@")
    return rng.choice([email.upper(), local.capitalize() + "@" + domain, local + "@" + domain.upper(), f" {email} "])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--existing", type=int, default=400)
    parser.add_argument("--first", type=int, default=120, help="first gifts today from existing donors")
    parser.add_argument("--new", type=int, default=72, help="gifts from brand-new donors")
    parser.add_argument("--repeats", type=int, default=48, help="second gifts from donors who gave today")
    args = parser.parse_args()
    spent = {how: run(args, how) for how in ("review", "email")}
    print(
        f"donor matching (review, the default) vs the e-mail match alone: {spent['review']} vs {spent['email']} CRM requests, "
        f"{spent['review'] - spent['email']:+d} for the matching (it reads the mirror only)"
    )


def run(args: argparse.Namespace, how: str) -> int:
    from fake_world import fake_world
    from starlette.testclient import TestClient

    from synctool import settings, store
    from synctool.crm import matching
    from synctool.fakes import samples
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.platforms.runner import runner
    from synctool.queue.worker import drain
    from synctool.web.receiver import create_app

    rng = random.Random(7)
    with fake_world("synctool-gifts-", limit=LIMIT, window_s=WINDOW_S, interval_ms=INTERVAL_MS) as (world, rt, conn):
        with store.atomic(conn):
            settings.put(conn, matching.SETTING, how)
        existing = []
        for n in range(args.existing):  # in the CRM, last changed weeks before synctool was installed
            first, last = rng.choice(FIRST_NAMES), rng.choice(SURNAMES)
            email = f"{first}.{last}.{n}@example.org".lower()
            record = world.crm.create_constituent(
                {"first_name": first, "last_name": last, "email_addresses": [{"address": email}],
                 "street_addresses": [{"street": f"{n + 1} Main St", "postal_code": "94607"}]}
            )  # fmt: skip
            record["updated_at"] = record["created_at"] = f"2026-10-{1 + n % 28:02d}T12:00:00Z"
            existing.append((first, last, email))
        world.crm.requests.clear()
        world.crm.recent.clear()

        givers = [(*d, True) for d in rng.sample(existing, args.first)]
        givers += [(rng.choice(FIRST_NAMES), rng.choice(SURNAMES), f"new.donor.{n}@example.net", False) for n in range(args.new)]
        rng.shuffle(givers)
        gifts = list(givers)
        for giver in rng.sample(givers, args.repeats):  # a second gift, some time after the first
            gifts.insert(rng.randrange(gifts.index(giver) + 1, len(gifts) + 1), giver)

        with TestClient(create_app(rt)) as client:
            for n, (first, last, email, _) in enumerate(gifts):
                txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
                txn.update(
                    id=f"GD{n:05d}",
                    first_name=first,
                    last_name=last,
                    email=vary_case(email, rng),
                    phone=None,
                    address={**txn["address"], "address_1": f"{n + 1} Market St", "zipcode": "94607"},
                    amount=rng.choice([10, 25, 50, 100]),
                )
                r = client.post(
                    "/webhooks/donations",
                    content=samples.givebutter("transaction.succeeded", txn),
                    headers={"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]},
                )
                assert r.status_code == 200, r.text

        started = time.perf_counter()
        runs = 0
        totals = Counter()
        while True:
            summary = drain(runner(rt), max_seconds=CRON_RUN_S)
            runs += 1
            totals.update({"jobs": summary.claimed, "succeeded": summary.succeeded, "failed": summary.failed})
            if summary.claimed == 0 and not conn.execute("SELECT 1 FROM jobs WHERE status IN ('queued', 'running')").fetchone():
                break
        elapsed = time.perf_counter() - started

        stats = world.crm.stats()
        sent = Counter(
            (r["method"], r["path"].rsplit("/", 1)[-1] if r["method"] == "POST" else r["path"]) for r in world.crm.requests
        )
        measured = stats["requests"] / len(gifts)
        floor = (len(gifts) + args.new) / len(gifts)
        search_every_gift = (2 * len(gifts) + args.new) / len(gifts)
        emails = Counter()
        for row in world.crm.contacts["email_addresses"].values():
            emails[row["address"].strip().lower()] += 1
        duplicate_donors = sum(c - 1 for c in emails.values() if c > 1)
        external = Counter(g["external_id"] for g in world.crm.gifts.values())
        duplicate_gifts = sum(c - 1 for c in external.values() if c > 1)
        print(
            f"[donors.matching: {how}] giving day: {len(gifts)} gifts ({args.first} first gifts from {args.existing} existing constituents, "
            f"{args.new} new donors, {args.repeats} repeats); {runs} drain runs of {CRON_RUN_S} s "
            f"(cron's 55 s at 10x) in {elapsed:.1f} s; jobs {totals['succeeded']} succeeded, {totals['failed']} failed"
        )
        print(
            f"  CRM requests: {stats['requests']} = {sent[('POST', 'gifts')]} gift POSTs + "
            f"{sent[('POST', 'constituents')]} constituent creates + "
            f"{sent[('GET', '/api/v1/constituents/search')]} mirror pages + "
            f"{stats['requests'] - sent[('POST', 'gifts')] - sent[('POST', 'constituents')] - sent[('GET', '/api/v1/constituents/search')]} other"
        )
        print(
            f"  requests per gift: measured {measured:.3f}; floor {floor:.3f}; floor / measured = {floor / measured:.3f} "
            f"(goal >= 0.95); a search-every-gift flow: {search_every_gift:.3f} ({floor / search_every_gift:.3f} of the floor)"
        )
        print(
            f"  duplicate donors: {duplicate_donors}; duplicate gifts: {duplicate_gifts}; gifts in the CRM: "
            f"{len(world.crm.gifts)} of {len(gifts)}; 429s: {stats['rejected_429']} (goal 0 each)"
        )
        return int(stats["requests"])


if __name__ == "__main__":
    main()
