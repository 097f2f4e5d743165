"""A giving day where a fifth of the donors are known to the CRM under another e-mail, run under each donor
matching policy side by side: duplicates created, false merges, gifts held for review, CRM requests per gift.

The CRM holds 1,000 constituents (common names, so many share one; households of two at one address and
phone). 500 Givebutter gifts arrive through the receiver and drain runs them against the CRM's fake:

- 250 from known donors under the e-mail the CRM has (the e-mail match finds them);
- 100 from known donors under a new e-mail: a nickname (Bob for Robert), a typo (Micheal), the same name;
  each from the address the CRM has, or from a new address with the phone the CRM has;
- 50 from same-name strangers: a constituent's first and last name, another address and phone;
- 50 from a known donor's household: their partner or child at their address and phone, a new e-mail
  (Roberta at Robert's, Joan at John's, Olivia at Patrick's);
- 50 from people the CRM has never seen.

A gift is a **false merge** when it lands on a constituent who is not its donor, a **duplicate** when a known
donor's gift lands on a constituent made today. With ``review``, the held gifts are then accepted as a person
would (the one candidate) and drained, and the totals are counted again.

    python bench/donor_matching.py [--seed 7]
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

NICKNAMED = {"Robert": "Bob", "William": "Bill", "Elizabeth": "Liz", "Katherine": "Kathryn", "Michael": "Mike",
             "James": "Jim", "Jennifer": "Jen", "Richard": "Rick", "Margaret": "Peggy", "Thomas": "Tom",
             "Christopher": "Chris", "Daniel": "Dan", "Joseph": "Joe", "Susan": "Sue", "Jonathan": "Jon"}  # fmt: skip
TYPOS = {"Michael": "Micheal", "Jeffrey": "Jeffery", "Katherine": "Katharine", "Allison": "Alison", "Phillip": "Philip",
         "Jennifer": "Jenifer", "Rebecca": "Rebbeca", "Matthew": "Mathew"}  # fmt: skip
HOUSEHOLD = {"Robert": "Roberta", "Daniel": "Danielle", "Joseph": "Josephine", "Patrick": "Patricia",
             "Christopher": "Christina", "Paul": "Paula", "John": "Joan", "Alexander": "Alexandra"}  # fmt: skip
FIRST = sorted({*NICKNAMED, *TYPOS, *HOUSEHOLD, "Mary", "Linda", "David", "Sarah", "Karen", "Nancy", "Lisa", "Emily"})
LAST = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez", "Lee",
        "Walker", "Hall", "Young", "King", "Wright", "Lopez", "Hill", "Scott", "Green"]  # fmt: skip
ZIPS = ["94607", "94610", "94611", "94612", "94618", "94619", "94702", "94703", "94704", "94705"]
STREETS = ["Elm St", "Oak Ave", "Pine St", "Maple Dr", "Cedar Ln", "Lake Blvd", "Park Ave", "Grand Ave"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print(
        "policy   gifts  held  matched-new-email  duplicates  false-merges  CRM req/gift  (after review: duplicates, false merges, req/gift)"
    )
    for how in ("email", "review", "auto"):
        run(how, args.seed)


def run(how: str, seed: int) -> None:
    from fake_world import fake_world
    from starlette.testclient import TestClient

    from synctool import settings, store
    from synctool.crm import matching
    from synctool.fakes import samples
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.ops import donors
    from synctool.platforms.runner import runner
    from synctool.queue.worker import drain
    from synctool.web.receiver import create_app

    rng = random.Random(seed)
    with fake_world(f"synctool-matching-{how}-", limit=100_000, window_s=1.0, interval_ms=0) as (world, rt, conn):
        with store.atomic(conn):
            settings.put(conn, matching.SETTING, how)
        people: list[dict] = []  # the constituents, with their contact points
        house = 0
        while len(people) < 1000:
            house += 1
            address = {"street": f"{rng.randint(1, 999)} {rng.choice(STREETS)}", "postal_code": rng.choice(ZIPS)}
            phone = f"510-555-{house:04d}"
            last = rng.choice(LAST)
            members = [rng.choice(FIRST)] + (
                [rng.choice(["Mary", "Linda", "Sarah", "Karen", "Nancy"])] if rng.random() < 0.3 else []
            )
            for first in members:
                email = f"{first}.{last}.{len(people)}@example.org".lower()
                made = world.crm.create_constituent({"first_name": first, "last_name": last,
                                                     "email_addresses": [{"address": email}],
                                                     "phone_numbers": [{"number": phone}],
                                                     "street_addresses": [{**address, "city": "Oakland", "state": "CA"}]})  # fmt: skip
                made["updated_at"] = made["created_at"] = "2026-10-01T12:00:00Z"
                people.append(
                    {"id": made["id"], "first": first, "last": last, "email": email, "phone": phone, "address": address}
                )
        before = set(world.crm.constituents)
        world.crm.requests.clear()

        gifts: list[tuple[dict, int | None]] = []  # (the donor as the platform sends them, who they truly are)

        def donor(first, last, email, address, phone) -> dict:
            return {"first": first, "last": last, "email": email, "address": address, "phone": phone}

        for p in rng.sample(people, 250):
            gifts.append((donor(p["first"], p["last"], p["email"], p["address"], p["phone"]), p["id"]))
        known = [p for p in people if p["first"] in NICKNAMED or p["first"] in TYPOS]
        for n, p in enumerate(rng.sample(known, 100)):
            first = {0: NICKNAMED.get(p["first"]), 1: TYPOS.get(p["first"])}.get(n % 3) or p["first"]
            moved = n % 4 == 3  # a new address, the phone the CRM has
            address = {"street": f"{rng.randint(1000, 1999)} New Rd", "postal_code": "94720"} if moved else p["address"]
            gifts.append(
                (
                    donor(first, p["last"], f"{first}{n}@newmail.net".lower(), address, p["phone"] if moved or n % 2 else None),
                    p["id"],
                )
            )
        for n, p in enumerate(rng.sample(people, 50)):
            address = {"street": f"{rng.randint(2000, 2999)} Far Rd", "postal_code": rng.choice(ZIPS)}
            gifts.append((donor(p["first"], p["last"], f"stranger{n}@else.org", address, f"212-555-{n:04d}"), None))
        households = [p for p in people if p["first"] in HOUSEHOLD]
        for n in range(50):
            p = rng.choice(households)
            first = HOUSEHOLD[p["first"]] if n % 2 == 0 else rng.choice(["Emily", "Olivia", "Noah", "Liam"])
            gifts.append((donor(first, p["last"], f"family{n}@home.org", p["address"], p["phone"]), None))
        for n in range(50):
            address = {"street": f"{rng.randint(3000, 3999)} Fresh St", "postal_code": rng.choice(ZIPS)}
            gifts.append((donor(rng.choice(FIRST), rng.choice(LAST), f"new{n}@first.org", address, f"415-555-{n:04d}"), None))
        rng.shuffle(gifts)

        truth = {}
        with TestClient(create_app(rt)) as client:
            for n, (d, who) in enumerate(gifts):
                txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
                txn.update(id=f"DM{n:04d}", first_name=d["first"], last_name=d["last"], email=d["email"], phone=d["phone"],
                           amount=25, address={**txn["address"], "address_1": d["address"]["street"], "zipcode": d["address"]["postal_code"]})  # fmt: skip
                r = client.post("/webhooks/donations", content=samples.givebutter("transaction.succeeded", txn),
                                headers={"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]})  # fmt: skip
                assert r.status_code == 200, r.text
                truth[f"donations_DM{n:04d}"] = (who, d["email"])

        def count() -> tuple[int, int, int, int, float]:
            duplicates = false_merges = matched_new = 0
            made_for: dict[str, set] = {}
            for gift in world.crm.gifts.values():
                who, email = truth[gift["external_id"]]
                landed = gift["constituent_id"]
                if who is not None and landed != who:
                    if landed in before:
                        false_merges += 1
                    else:
                        duplicates += 1
                elif who is None and landed in before:
                    false_merges += 1
                elif who is not None and email not in {p["email"] for p in people if p["id"] == who}:
                    matched_new += 1
                made_for.setdefault(email, set()).add(landed)
            held = conn.execute("SELECT count(*) FROM jobs WHERE status = 'review'").fetchone()[0]
            return held, matched_new, duplicates, false_merges, len(world.crm.requests) / len(world.crm.gifts or [1])

        started = time.perf_counter()
        while drain(runner(rt), max_seconds=30).claimed:
            pass
        held, matched, duplicates, false_merges, per_gift = count()
        line = f"{how:<8} {len(gifts):>5}  {held:>4}  {matched:>17}  {duplicates:>10}  {false_merges:>12}  {per_gift:>12.3f}"
        if held:
            for m in matching.listing(conn, "pending", 10_000):
                chosen = m["candidates"][0]["constituent_id"]
                truth_id = truth[m["external_id"]][0]
                # the person looks at the evidence: the candidate who is the donor, else a new constituent
                if truth_id is not None and str(truth_id) in {c["constituent_id"] for c in m["candidates"]}:
                    chosen = str(truth_id)
                    donors.accept_match(conn, m["id"], donors.AcceptMatchBody(constituent_id=chosen), by="bench")
                elif m["status"] == "pending" and matching.decision(conn, m["job_id"]) is None:
                    try:
                        donors.new_constituent(conn, m["id"], by="bench")
                    except Exception:  # settled with another gift of the same e-mail
                        pass
            while drain(runner(rt), max_seconds=30).claimed:
                pass
            held2, matched2, duplicates2, false2, per_gift2 = count()
            line += f"  ({duplicates2}, {false2}, {per_gift2:.3f}; {matched2} matched, {held2} still held)"
        print(line + f"  [{time.perf_counter() - started:.1f} s]")
        if how == "email":  # what `synctool crm duplicates` finds of the duplicates this policy made, from the mirror
            from synctool.ops import crm as crm_ops

            crm_ops.mirror_refresh(conn, rt)
            before_requests = len(world.crm.requests)
            started = time.perf_counter()
            pairs = crm_ops.duplicates(conn)["pairs"]
            made_today = {str(c) for c in set(world.crm.constituents) - before}
            found = sum(1 for p in pairs if p["constituent_id"] in made_today or p["other_id"] in made_today)
            print(f"         crm duplicates: {len(pairs)} pairs over {len(world.crm.constituents):,} constituents in "
                  f"{time.perf_counter() - started:.1f} s, {len(world.crm.requests) - before_requests} CRM requests; "
                  f"{found} involve a constituent made today")  # fmt: skip


if __name__ == "__main__":
    main()
