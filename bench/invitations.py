"""Who came: CRM requests for a gala's invitations, measured at the CRM fake.

A 300-ticket gala sold on a Givebutter event campaign: ``--orders`` orders (``--repeats`` of them a buyer's
second order, ``--comped`` comped with a 100% discount code, ``--refunded`` later refunded whole and
``--partial`` refunded in part: one guest's ticket each), ``--guests`` tickets held by someone other than the
buyer, and ``--checkins`` tickets scanned at the door. ``--existing`` buyers were constituents before the gala
(the writer reads their invitations once); staff had already invited one of them (RSVP unknown).

As in life, with the CRM's limits and cron's 55 s runs scaled down 10x (as ``requests_per_gift.py``): the
first two thirds of the orders arrive (``transaction.succeeded`` and a ``ticket.created`` per ticket, through
the receiver) before anyone maps the campaign, and drain leaves their invitations waiting; staff map it
(``synctool mappings events set``) and drain writes them; the last third of the orders arrives (some of them
repeat buyers' second orders) and is drained; the refunds arrive (``refund.created``) and are drained; the
doors open (the event's window is around now): a first wave of check-ins is read by ``synctool poll``, the
second by ``synctool events checkins``, each drained; a last poll finds nothing new.

Prints, measured at the CRM fake (invitation requests only: ``/events/*/invitations``, ``/invitations/*``,
``/constituents/*/invitations``; the gifts' own requests are left out): invitations written (buyers,
guests), updates, removals, attendances, reads, the total; the floor (one request per invitation written,
per update or removal, per attendance, one read per buyer who was a constituent already), floor / measured
(goal >= 0.95), duplicates (goal 0) and whether ``synctool events list --json`` agrees with the CRM fake.

    python bench/invitations.py [--orders 120] [--guests 180] [--checkins 250]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LIMIT, WINDOW_S, INTERVAL_MS, CRON_RUN_S = 300, 30.0, 110.0, 5.5
CODE = "GALA26"
FIRST = ["Mary", "James", "Linda", "John", "Maria", "David", "Susan", "Robert", "Karen", "Michael", "Lisa", "William",
         "Nancy", "Joseph", "Betty", "Thomas", "Sandra", "Daniel", "Ashley", "Paul"]  # fmt: skip
LAST = ["Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
        "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin"]  # fmt: skip
#: ticket type -> price
TYPES = {"General Admission": 150.0, "VIP": 250.0, "After-party": 40.0}
INVITATION_PATH = re.compile(r"^/api/v1/(events/\d+/invitations|invitations/\d+|constituents/\d+/invitations)$")


@dataclass
class Buyer:
    n: int
    first: str
    last: str
    email: str
    existing: bool = False
    staff_invited: bool = False

    def person(self) -> dict[str, Any]:
        return {"first_name": self.first, "last_name": self.last, "email": self.email, "phone": None}


@dataclass(eq=False)
class Order:
    buyer: Buyer
    own: str  # the buyer's own ticket type
    guests: list[dict[str, Any]] = field(default_factory=list)
    comped: bool = False
    second: bool = False  # the buyer's second order
    after_mapping: bool = False
    refund: str | None = None  # "whole" or "part"
    txn: dict[str, Any] = field(default_factory=dict)
    tickets: list[dict[str, Any]] = field(default_factory=list)


def plan(args: argparse.Namespace, rng: random.Random) -> tuple[list[Buyer], list[Order]]:
    """The gala's buyers and orders in the order they are sold."""
    buyers = [Buyer(n, rng.choice(FIRST), rng.choice(LAST), "") for n in range(args.orders - args.repeats)]
    for b in buyers:
        b.email = f"{b.first}.{b.last}.{b.n}@example.org".lower()
    for b in rng.sample(buyers, args.existing):
        b.existing = True
    orders = [Order(b, rng.choice(["General Admission", "General Admission", "VIP"])) for b in buyers]
    rng.shuffle(orders)
    split = len(orders) * 2 // 3  # sold before the campaign is mapped
    for o in orders[split:]:
        o.after_mapping = True
    # repeat buyers: half buy again before the mapping, half after their first invitation was written
    early = rng.sample(orders[: split - 10], args.repeats)
    for k, first in enumerate(early):
        second = Order(first.buyer, "After-party", second=True, after_mapping=k % 2 == 1)
        if second.after_mapping:
            orders.insert(rng.randrange(split + 1, len(orders) + 1), second)
        else:
            orders.insert(rng.randrange(orders.index(first) + 1, split + 1), second)
            split += 1
    singles = [o for o in orders if not o.second and o not in early and o.buyer.email]
    chosen = rng.sample(singles, args.comped + args.refunded + args.partial + 1)
    for o in chosen[: args.comped]:
        o.comped = True
    refunds = chosen[args.comped : args.comped + args.refunded + args.partial]
    for o in refunds[: args.refunded]:
        o.refund = "whole"
    for o in refunds[args.refunded :]:
        o.refund = "part"
    staff = chosen[-1]
    staff.buyer.existing = staff.buyer.staff_invited = True
    # guests: every refunded order has some (a partial refund returns one guest's ticket), the rest at random
    count = {id(o): 0 for o in orders}
    for o in refunds:
        count[id(o)] = 2
    left = args.guests - sum(count.values())
    while left > 0:
        o = rng.choice(orders)
        if count[id(o)] < 5:
            count[id(o)] += 1
            left -= 1
    g = 0
    for o in orders:
        names = {(o.buyer.first, o.buyer.last)}
        for _ in range(count[id(o)]):
            while (name := (rng.choice(FIRST), rng.choice(LAST))) in names:
                pass
            names.add(name)
            g += 1
            email = f"guest{g}@example.net" if g % 4 else ""  # some holders leave their e-mail out
            kind = o.own if o.own != "After-party" else "General Admission"
            o.guests.append({"first_name": name[0], "last_name": name[1], "email": email, "phone": None,
                             "title": kind, "price": TYPES[kind]})  # fmt: skip
    return buyers, orders


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=120)
    parser.add_argument("--guests", type=int, default=180, help="tickets held by someone other than the buyer")
    parser.add_argument("--checkins", type=int, default=250)
    parser.add_argument("--existing", type=int, default=36, help="buyers who were constituents already")
    parser.add_argument("--repeats", type=int, default=8, help="orders that are a buyer's second")
    parser.add_argument("--comped", type=int, default=4)
    parser.add_argument("--refunded", type=int, default=4, help="orders refunded whole")
    parser.add_argument("--partial", type=int, default=2, help="orders refunded in part (one guest's ticket)")
    args = parser.parse_args()
    run(args)


def run(args: argparse.Namespace) -> None:
    from fake_world import fake_world
    from starlette.testclient import TestClient
    from typer.testing import CliRunner

    from synctool.cli.main import app
    from synctool.console import AppContext
    from synctool.fakes import samples
    from synctool.fakes.world import WEBHOOK_SECRETS
    from synctool.ops.poll import poll
    from synctool.platforms.runner import runner
    from synctool.queue.worker import drain
    from synctool.web.receiver import create_app

    rng = random.Random(11)
    buyers, orders = plan(args, rng)
    began = time.perf_counter()
    drained = {"runs": 0, "s": 0.0, "jobs": Counter()}

    with fake_world("synctool-invitations-", limit=LIMIT, window_s=WINDOW_S, interval_ms=INTERVAL_MS) as (world, rt, conn):
        gb, crm = world.givebutter, world.crm
        runner = CliRunner()

        def cli(*words: str) -> str:
            result = runner.invoke(app, list(words), obj=AppContext(runtime=rt), catch_exceptions=False)
            assert result.exit_code == 0, f"synctool {' '.join(words)}: {result.output}"
            return result.stdout

        def drain_all(label: str) -> None:
            """Drain as cron would (5.5 s runs) until no job is queued or running."""
            started = time.perf_counter()
            while True:
                summary = drain(runner(rt), max_seconds=CRON_RUN_S)
                drained["runs"] += 1
                drained["jobs"].update({"succeeded": summary.succeeded, "failed": summary.failed})
                left = conn.execute("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')").fetchone()[0]
                if summary.claimed == 0 and not left:
                    break
                if summary.claimed == 0:  # only jobs due later: say which, and wait for them as cron would
                    waiting = conn.execute(
                        "SELECT entity_type, count(*), min(run_after), max(message) FROM jobs WHERE status = 'queued' GROUP BY entity_type"
                    ).fetchall()
                    print(f"  ({label}: waiting for {[tuple(w) for w in waiting]})")
                    time.sleep(1.0)
            drained["s"] += time.perf_counter() - started

        # the CRM before the gala: other constituents, the buyers who are constituents already, the event
        for n in range(150):
            crm.create_constituent({"first_name": f"Other{n}", "last_name": "Member",
                                    "email_addresses": [{"address": f"other{n}@example.com"}]})  # fmt: skip
        cids: dict[int, int] = {}
        for b in buyers:
            if b.existing:
                made = crm.create_constituent({"first_name": b.first, "last_name": b.last,
                                               "email_addresses": [{"address": b.email}]})  # fmt: skip
                made["updated_at"] = made["created_at"] = "2026-01-15T12:00:00Z"
                cids[b.n] = made["id"]
        now = datetime.now(UTC)
        campaign = gb.add_event_campaign(CODE, "Spring Gala", now - timedelta(hours=1), now + timedelta(hours=4))
        event = crm.add_event("Spring Gala 2026", now.astimezone().date().isoformat())
        staff = next(b for b in buyers if b.staff_invited)
        staff_invitation = crm.invite(event["id"], cids[staff.n], rsvp=0)
        cli("crm", "refresh")  # the event is known to synctool (mapping checks it)

        headers = {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]}
        with TestClient(create_app(rt)) as client:

            def deliver(event_name: str, data: dict[str, Any]) -> None:
                r = client.post("/webhooks/donations", content=samples.givebutter(event_name, data), headers=headers)
                assert r.status_code == 200, r.text

            def sell(batch: list[Order]) -> None:
                for o in batch:
                    own = {**o.buyer.person(), "title": o.own, "price": TYPES[o.own]}
                    o.txn, o.tickets = gb.sell_tickets(
                        campaign, o.buyer.person(), [own, *o.guests], price=TYPES[o.own],
                        discount=100 if o.comped else 0, discount_code="COMP" if o.comped else None,
                    )  # fmt: skip
                    deliver("transaction.succeeded", o.txn)
                    for ticket in o.tickets:
                        deliver("ticket.created", ticket)

            # 1. two thirds of the orders, before the campaign is mapped: gifts made, invitations wait
            sell([o for o in orders if not o.after_mapping])
            drain_all("before the mapping")
            waited = len(crm.invitations) - 1
            waiting = json.loads(cli("events", "list", "--json"))["waiting"]
            # 2. staff map the campaign: the orders that waited are written
            mapped = json.loads(cli("mappings", "events", "set", CODE, "--event", str(event["id"])))
            drain_all("after the mapping")
            # 3. the last third of the orders (repeat buyers' second orders among them)
            sell([o for o in orders if o.after_mapping])
            drain_all("later orders")
            # 4. refunds: whole orders, and one guest's ticket of a few others (revoked: it leaves the ticket list)
            for o in orders:
                if o.refund == "whole":
                    deliver("refund.created", gb.refund_tickets(o.txn["id"], [t["id"] for t in o.tickets]))
                elif o.refund == "part":
                    deliver("refund.created", gb.refund_tickets(o.txn["id"], [o.tickets[-1]["id"]]))
            drain_all("refunds")

        # 5. the doors open: check-ins of live tickets, read by the poll (first wave) and on demand (second)
        live = [t for t in gb.tickets.values() if str(t.get("transaction_id")) in {o.txn["id"] for o in orders}]
        scanned = rng.sample(live, min(args.checkins, len(live)))
        wave = len(scanned) * 3 // 5
        at = datetime.now(UTC)
        for ticket in scanned[:wave]:
            gb.check_in(ticket["id"], at)
        polled = poll(conn, rt)
        drain_all("check-ins, first wave")
        for ticket in scanned[wave:]:
            gb.check_in(ticket["id"], at + timedelta(minutes=20))
        read = json.loads(cli("events", "checkins", CODE, "--json"))
        drain_all("check-ins, second wave")
        mark = len(crm.requests)
        again = poll(conn, rt)
        drain_all("a last poll")
        after_last_poll = [r for r in crm.requests[mark:] if INVITATION_PATH.match(r["path"])]
        listed = json.loads(cli("events", "list", "--json"))
        elapsed = time.perf_counter() - began

        report(args, buyers, orders, world, event, staff_invitation, scanned, listed, elapsed, drained,
               extra={"waited": waited, "waiting": waiting, "mapped": mapped, "polled": polled, "read": read, "again": again,
                      "after_last_poll": after_last_poll})  # fmt: skip


def report(args, buyers, orders, world, event, staff_invitation, scanned, listed, elapsed, drained, extra) -> None:
    crm = world.crm
    eid = event["id"]
    sent = [r for r in crm.requests if INVITATION_PATH.match(r["path"])]
    kinds = Counter(
        (r["method"], re.sub(r"/\d+", "/{id}", r["path"].removeprefix("/api/v1")))
        + (("guest",) if r["method"] == "POST" and (r["body"] or {}).get("is_a_guest") else ())
        for r in sent
    )
    posts = [r for r in sent if r["method"] == "POST"]
    buyer_posts = sum(1 for r in posts if not (r["body"] or {}).get("is_a_guest"))
    guest_posts = len(posts) - buyer_posts
    patches = [r for r in sent if r["method"] == "PATCH"]
    updates = sum(1 for r in patches if {"rsvp", "notes", "attendee_names"} & set(r["body"] or {}))
    attendance_patches = sum(1 for r in patches if "attendances" in (r["body"] or {}))
    folded = sum(1 for r in posts if "attendances" in (r["body"] or {}))
    removals = sum(1 for r in sent if r["method"] == "DELETE")
    reads = sum(1 for r in sent if r["method"] == "GET" and r["path"].endswith("/invitations"))
    other_reads = sum(1 for r in sent if r["method"] == "GET" and not r["path"].endswith("/invitations"))
    refused = sum(1 for r in sent if r["status"] and r["status"] >= 400)

    # -- the floor, from what happened (not from what synctool sent) -------------------------------------------
    live_tickets = set(world.givebutter.tickets)
    by_txn = {o.txn["id"]: o for o in orders}
    distinct = {b.n for b in buyers}
    floor_buyers = len(distinct) - 1  # staff invited one of them: theirs is taken, not made
    floor_guests = args.guests  # every guest's ticket was live when its order was written
    floor_updates = (
        1  # the staff invitation: RSVP unknown -> yes, the order's note
        + sum(1 for o in orders if o.second and o.after_mapping)  # a second order after the first was written
        + sum(1 for o in orders if o.refund)  # RSVP no (whole), notes and names (part)
    )
    floor_removals = sum(len(o.guests) for o in orders if o.refund == "whole") + sum(1 for o in orders if o.refund == "part")
    attended_buyers = {by_txn[t["transaction_id"]].buyer.n for t in scanned
                       if t["id"] == by_txn[t["transaction_id"]].tickets[0]["id"]}  # fmt: skip
    attended_guests = sum(1 for t in scanned if t["id"] != by_txn[t["transaction_id"]].tickets[0]["id"])
    floor_attendances = len(attended_buyers) + attended_guests
    floor_reads = sum(1 for b in buyers if b.existing)
    floor = floor_buyers + floor_guests + floor_updates + floor_removals + floor_attendances + floor_reads
    measured = len(sent)

    at_event = [i for i in crm.invitations.values() if i["event_id"] == eid]
    own = Counter(i["constituent_id"] for i in at_event if not i["is_a_guest"])
    duplicate_own = sum(c - 1 for c in own.values() if c > 1)
    guest_names = Counter((i["parent_invitation_id"], i["guest_name"]) for i in at_event if i["is_a_guest"])
    duplicate_guests = sum(c - 1 for c in guest_names.values() if c > 1)
    live_guests = sum(1 for o in orders for t in o.tickets[1:] if t["id"] in live_tickets)
    crm_own, crm_guests = sum(own.values()), sum(guest_names.values())
    crm_attended = sum(1 for i in at_event if i["attended"])

    [row] = listed["items"]
    tickets_sold = sum(len(o.tickets) for o in orders)
    checked_in = len(scanned)
    agree = {
        "orders": (row["orders"], len(orders)),
        "tickets": (row["tickets"], tickets_sold),
        "invitations": (row["invitations"], crm_own),
        "guests": (row["guests"], crm_guests),
        "checked_in": (row["checked_in"], checked_in),
        "attended": (row["attended"], crm_attended),
    }
    staff_now = crm.invitations.get(staff_invitation["id"]) or {}
    stats = crm.stats()

    print(
        f"gala: {len(orders)} orders ({args.repeats} repeat buyers' second orders, {args.comped} comped, "
        f"{args.refunded} refunded whole, {args.partial} in part) from {len(distinct)} buyers "
        f"({floor_reads} constituents already, one invited by staff), {tickets_sold} tickets, {args.guests} guests, "
        f"{checked_in} check-ins; {drained['runs']} drain runs of {CRON_RUN_S} s in {drained['s']:.1f} s "
        f"(jobs {drained['jobs']['succeeded']} succeeded, {drained['jobs']['failed']} failed); total {elapsed:.1f} s"
    )
    print(
        f"  before the mapping: {extra['waited']} invitations written, events list says waiting "
        f"{[(w['orders'], w['tickets']) for w in extra['waiting']]} (orders, tickets); mapping queued {extra['mapped']['orders_queued']} orders; "
        f"check-ins read: poll {extra['polled']['sources'].get('donations', {}).get('checkins')}, "
        f"events checkins {extra['read'].get('donations')}"
    )
    print(
        f"  written: {buyer_posts} buyers' invitations + {guest_posts} guests' (floor {floor_buyers} + {floor_guests}); "
        f"updates {updates} (floor {floor_updates}); removals {removals} (floor {floor_removals}); "
        f"attendances {attendance_patches} PATCHes + {folded} folded into creates (floor {floor_attendances}: "
        f"{len(attended_buyers)} buyers, {attended_guests} guests); reads {reads} (floor {floor_reads})"
        + (f"; other reads {other_reads}" if other_reads else "")
    )
    print(
        f"  invitation requests: measured {measured}; floor {floor}; floor / measured = {floor / measured:.3f} "
        f"(goal >= 0.95); refused {refused}; 429s {stats['rejected_429']}; a last poll with nothing new: "
        f"{len(extra['after_last_poll'])} requests"
    )
    print(f"  requests by kind: {dict(sorted(kinds.items()))}")
    print(
        f"  duplicates: buyers' invitations {duplicate_own}, guests' {duplicate_guests} (goal 0 each); in the CRM: "
        f"{crm_own} buyers' and {crm_guests} guests' invitations (live guest tickets: {live_guests}), {crm_attended} attended; "
        f"staff's invitation {staff_invitation['id']} now rsvp {staff_now.get('rsvp')}"
    )
    print(
        "  events list --json vs the CRM fake: "
        + ", ".join(f"{k} {a}{'=' if a == b else '!='}{b}" for k, (a, b) in agree.items())
        + ("  (all equal)" if all(a == b for a, b in agree.values()) else "  (MISMATCH)")
    )


if __name__ == "__main__":
    main()
