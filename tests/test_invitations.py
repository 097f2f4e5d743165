"""Who came: a Givebutter event campaign's orders become the mapped LGL event's invitations (the buyer's, one per
guest, attendance for check-ins), exactly once, through the receiver, drain and poll over the fakes."""

from __future__ import annotations

import copy
import json

from synctool.fakes import samples
from synctool.platforms.givebutter.fake import givebutter_event_campaign
from tests.flow_helpers import give, run_drain

#: an event campaign as Givebutter records one (givebutter-square.md A3.3; tests/data/real_bodies: its event's times
#: in UTC without an offset, its zone in ``event.timezone``, no top-level ``timezone``)
CAMPAIGN = givebutter_event_campaign(
    "GALA26", "Spring Gala", "2026-11-20 23:00:00", "2026-11-21 04:00:00", "America/New_York", campaign_id=555
)


def order(
    txn_id: str, buyer: tuple[str, str, str], holders: list[tuple[str, str, str, str]], price: float = 100
) -> tuple[dict, list[dict]]:
    """An event order as Givebutter sends it: the transaction (a ticket line item per type) and a ticket per holder
    (first, last, e-mail, type)."""
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    first, last, email = buyer
    kinds: dict[str, int] = {}
    for *_, kind in holders:
        kinds[kind] = kinds.get(kind, 0) + 1
    amount = price * len(holders)
    lines = [{"type": "item", "subtype": "ticket", "description": kind, "quantity": n, "price": price, "discount": 0,
              "total": price * n} for kind, n in kinds.items()]  # fmt: skip
    part = {**txn["transactions"][0], "id": f"{txn_id}-1", "amount": amount, "line_items": lines}
    txn.update(id=txn_id, campaign_id=CAMPAIGN["id"], campaign_code=CAMPAIGN["code"], first_name=first, last_name=last,
               email=email, amount=amount, donated=0, transactions=[part], fair_market_value_amount=amount,
               tax_deductible_amount=0, custom_fields=[], method="card" if amount else "none")  # fmt: skip
    tickets = [{"id": f"{txn_id}A{n:04d}", "id_suffix": f"A{n:04d}", "transaction_id": txn_id, "first_name": f, "last_name": la,
                "name": f"{f} {la}", "email": e, "title": kind, "price": price, "checked_in_at": None,
                "created_at": "2026-11-01T12:00:00+00:00", "updated_at": "2026-11-01T12:00:00+00:00"}
               for n, (f, la, e, kind) in enumerate(holders, 1)]  # fmt: skip
    return txn, tickets


def sell(world, receiver, txn: dict, tickets: list[dict]) -> None:
    world.givebutter.transactions[txn["id"]] = txn
    for ticket in tickets:
        world.givebutter.tickets[ticket["id"]] = ticket
    give(receiver, txn)
    for ticket in tickets:
        give(receiver, ticket, event="ticket.created", event_id=f"tk-{ticket['id']}")


def invitations(world, event_id: int) -> list[dict]:
    return [i for i in world.crm.invitations.values() if i["event_id"] == event_id]


def test_an_order_becomes_the_buyers_invitation_and_its_guests_once(coded, receiver, cli, db):
    world = coded
    world.givebutter.campaigns[CAMPAIGN["id"]] = CAMPAIGN
    event = world.crm.add_event("Spring Gala 2026", "2026-11-20")
    ada = ("Ada", "Lovelace", "ada@example.org")
    txn, tickets = order("58123", ada, [("Ada", "Lovelace", "ada@example.org", "VIP"), ("Charles", "Babbage", "cb@example.org", "General Admission"),
                                        ("Mary", "Somerville", "", "General Admission")])  # fmt: skip
    sell(world, receiver, txn, tickets)
    run_drain()
    # no mapping yet: the gift is made, the invitations wait and are counted
    assert len(world.crm.gifts) == 1 and invitations(world, event["id"]) == []
    listed = json.loads(cli("events", "list", "--json").stdout)
    assert listed["waiting"] == [
        {"source": "donations", "campaign_id": "555", "campaign": "Spring Gala", "orders": 1, "tickets": 3}
    ]
    overview = json.loads(cli("overview", "--json").stdout)
    assert any("wait for an event mapping" in a["text"] for a in overview["attention"])
    assert cli("crm", "refresh").exit_code == 0
    mapped = cli("mappings", "events", "set", "GALA26", "--event", str(event["id"]))
    assert mapped.exit_code == 0, mapped.output
    assert json.loads(mapped.stdout)["orders_queued"] == 1
    mark = len(world.crm.requests)
    run_drain()
    made = invitations(world, event["id"])
    [buyer] = [i for i in made if not i["is_a_guest"]]
    guests = sorted((i["guest_name"], i["parent_invitation_id"]) for i in made if i["is_a_guest"])
    assert guests == [("Charles Babbage", buyer["id"]), ("Mary Somerville", buyer["id"])]
    assert buyer["rsvp"] == 1 and buyer["attendee_names"] == "Ada Lovelace, Charles Babbage, Mary Somerville"
    assert buyer["notes"] == "Givebutter order 58123: VIP x1, General Admission x2"
    writes = [(r["method"], r["path"].split("/api/v1")[-1]) for r in world.crm.requests[mark:]]
    # the buyer was made for this order (no read), then one POST per invitation
    assert writes == [("POST", f"/events/{event['id']}/invitations")] * 3, writes
    # a replayed ticket.created and a second pass write nothing more
    give(receiver, tickets[1], event="ticket.created", event_id="tk-replayed")
    assert cli("mappings", "events", "set", "GALA26", "--event", str(event["id"])).exit_code == 0
    mark = len(world.crm.requests)
    run_drain()
    assert len(invitations(world, event["id"])) == 3 and world.crm.requests[mark:] == []
    shown = json.loads(cli("events", "list", "--json").stdout)
    [row] = shown["items"]
    assert (row["orders"], row["tickets"], row["invitations"], row["guests"]) == (1, 3, 1, 2) and shown["waiting"] == []


def test_check_ins_become_attendance_and_a_whole_refund_says_no(coded, receiver, cli, db):
    world = coded
    world.givebutter.campaigns[CAMPAIGN["id"]] = CAMPAIGN
    event = world.crm.add_event("Spring Gala 2026", "2026-11-20")
    assert cli("crm", "refresh").exit_code == 0
    assert cli("mappings", "events", "set", "555", "--event", str(event["id"])).exit_code == 0
    grace = ("Grace", "Hopper", "grace@example.org")
    txn, tickets = order("60001", grace, [("Grace", "Hopper", "grace@example.org", "General Admission"), ("Alan", "Turing", "alan@example.org", "General Admission")])  # fmt: skip
    sell(world, receiver, txn, tickets)
    run_drain()
    assert len(invitations(world, event["id"])) == 2
    for ticket in tickets:  # both walk in at 9 pm New York time on the 20th (02:00 UTC on the 21st)
        world.givebutter.tickets[ticket["id"]]["checked_in_at"] = "2026-11-21T02:00:00+00:00"
    mark = len(world.crm.requests)
    read = cli("events", "checkins", "GALA26", "--json")
    assert read.exit_code == 0, read.output
    run_drain()
    patches = [r for r in world.crm.requests[mark:] if r["method"] == "PATCH"]
    assert len(patches) == 2
    for invitation in invitations(world, event["id"]):
        assert invitation["attended"] == 1 and [a["date"] for a in invitation["attendances"]] == ["2026-11-20"]
    # read again: nothing new, nothing written
    mark = len(world.crm.requests)
    assert cli("events", "checkins", "GALA26").exit_code == 0
    run_drain()
    assert [r for r in world.crm.requests[mark:] if r["method"] != "GET"] == []
    # the whole order refunded: the buyer's RSVP becomes no, the guest's invitation goes
    give(receiver, samples.givebutter_refund(txn), event="refund.created", event_id="rf-60001")
    run_drain()
    [left] = invitations(world, event["id"])
    assert left["rsvp"] == 2 and "refunded" in left["notes"]


def mapped(world, cli) -> dict:
    world.givebutter.campaigns[CAMPAIGN["id"]] = CAMPAIGN
    event = world.crm.add_event("Spring Gala 2026", "2026-11-20")
    assert cli("crm", "refresh").exit_code == 0
    assert cli("donations", "campaigns", "--refresh").exit_code == 0  # the campaign's code is known from here
    assert cli("mappings", "events", "set", "GALA26", "--event", str(event["id"])).exit_code == 0
    return event


def crm_writes(world, mark: int) -> list[tuple[str, str]]:
    return [(r["method"], r["path"].split("/api/v1")[-1]) for r in world.crm.requests[mark:]]


def test_a_repeat_buyer_keeps_one_invitation_and_a_comped_order_makes_no_gift(coded, receiver, cli, db):
    world = coded
    event = mapped(world, cli)
    ada = ("Ada", "Lovelace", "ada@example.org")
    sell(world, receiver, *order("70001", ada, [("Ada", "Lovelace", "ada@example.org", "General Admission")]))
    run_drain()
    mark = len(world.crm.requests)
    sell(world, receiver, *order("70002", ada, [("Charles", "Babbage", "cb@example.org", "VIP")]))
    run_drain()
    [buyer] = [i for i in invitations(world, event["id"]) if not i["is_a_guest"]]
    assert buyer["notes"] == "Givebutter order 70001: General Admission x1; Givebutter order 70002: VIP x1"
    assert buyer["attendee_names"] == "Ada Lovelace, Charles Babbage"
    inviting = [w for w in crm_writes(world, mark) if "invitation" in w[1]]
    assert inviting == [("PATCH", f"/invitations/{buyer['id']}"), ("POST", f"/events/{event['id']}/invitations")]
    # a comped seat (a 100% discount): no gift, the guest list all the same
    gifts_before = len(world.crm.gifts)
    txn, tickets = order(
        "70003", ("Rosalind", "Franklin", "rf@example.org"), [("Rosalind", "Franklin", "rf@example.org", "Comp")], price=0
    )
    sell(world, receiver, txn, tickets)
    run_drain()
    assert len(world.crm.gifts) == gifts_before
    [comped] = [i for i in invitations(world, event["id"]) if i["guest_name"] == "Rosalind Franklin"]
    assert comped["rsvp"] == 1 and comped["notes"] == "Givebutter order 70003: Comp x1"


def test_a_constituent_staff_invited_already_is_taken_not_invited_twice(coded, receiver, cli, db):
    world = coded
    event = mapped(world, cli)
    grace = world.crm.create_constituent({"first_name": "Grace", "last_name": "Hopper",
                                          "email_addresses": [{"address": "grace@example.org"}]})  # fmt: skip
    staff = world.crm.invite(event["id"], grace["id"], rsvp=0)
    mark = len(world.crm.requests)
    sell(world, receiver, *order("71001", ("Grace", "Hopper", "grace@example.org"), [("Grace", "Hopper", "grace@example.org", "General Admission")]))  # fmt: skip
    run_drain()
    [only] = invitations(world, event["id"])
    assert only["id"] == staff["id"] and only["rsvp"] == 1 and only["notes"] == "Givebutter order 71001: General Admission x1"
    inviting = [w for w in crm_writes(world, mark) if "invitation" in w[1]]
    assert inviting == [("GET", f"/constituents/{grace['id']}/invitations"), ("PATCH", f"/invitations/{staff['id']}")]


def test_a_create_whose_answer_was_lost_is_looked_for_not_repeated(coded, receiver, cli, db, env):
    world = coded
    env["CRM_CONFIRM_AFTER_S"] = "0"
    event = mapped(world, cli)
    world.crm.faults.append({"mode": "commit_timeout", "count": 2, "method": "POST", "path": "/invitations"})
    sell(world, receiver, *order("72001", ("Alan", "Turing", "alan@example.org"),
                                 [("Alan", "Turing", "alan@example.org", "GA"), ("Joan", "Clarke", "jc@example.org", "GA")]))  # fmt: skip
    run_drain()
    made = invitations(world, event["id"])
    assert sorted((i["guest_name"], i["is_a_guest"]) for i in made) == [("Alan Turing", False), ("Joan Clarke", True)]
    listed = json.loads(cli("events", "show", "GALA26", "--json").stdout)
    [shown] = listed["orders"]
    assert shown["invitation_id"] and all(h["invitation_id"] or h["buyer"] for h in shown["holders"])


def test_poll_reads_check_ins_only_around_the_event_and_a_partial_refund_removes_its_guests(coded, receiver, cli, db):
    from datetime import timedelta

    from synctool import store

    world = coded
    now = store.utcnow()
    campaign = world.givebutter.add_event_campaign("NOW26", "Tonight", now - timedelta(hours=2), now + timedelta(hours=3),
                                                   "America/Chicago", campaign_id=556)  # fmt: skip
    later = world.givebutter.add_event_campaign("LATER", "Next Month", now + timedelta(days=30), now + timedelta(days=30, hours=4),
                                                "America/Chicago", campaign_id=557)  # fmt: skip
    event, other = world.crm.add_event("Tonight", now.date().isoformat()), world.crm.add_event("Later", "2026-12-30")
    assert cli("crm", "refresh").exit_code == 0 and cli("donations", "campaigns", "--refresh").exit_code == 0
    assert cli("mappings", "events", "set", "NOW26", "--event", str(event["id"])).exit_code == 0
    assert cli("mappings", "events", "set", "LATER", "--event", str(other["id"])).exit_code == 0
    buyer = {"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.org"}
    guests = [{"first_name": "Charles", "last_name": "Babbage", "email": "cb@example.org"},
              {"first_name": "Mary", "last_name": "Somerville", "email": "ms@example.org"}]  # fmt: skip
    txn, tickets = world.givebutter.sell_tickets(campaign, buyer, [buyer, *guests])
    sell(world, receiver, txn, tickets)
    run_drain()
    assert len(invitations(world, event["id"])) == 3
    # Mary's ticket is refunded and revoked: it leaves Givebutter's list, and her invitation goes
    refund = world.givebutter.refund_tickets(txn["id"], [tickets[2]["id"]])
    give(receiver, refund, event="refund.created", event_id="rf-partial")
    run_drain()
    left = invitations(world, event["id"])
    assert sorted(i["guest_name"] for i in left) == ["Ada Lovelace", "Charles Babbage"]
    # Charles walks in; the poll reads tonight's check-ins (not next month's: its window is not open)
    world.givebutter.check_in(tickets[1]["id"])
    polled = cli("poll", "--source", "donations", "--json")
    assert polled.exit_code == 0, polled.output
    run_drain()
    [charles] = [i for i in invitations(world, event["id"]) if i["guest_name"] == "Charles Babbage"]
    assert charles["attended"] == 1 and len(charles["attendances"]) == 1
    assert later["id"] == 557
    shown = json.loads(cli("events", "show", "NOW26", "--json").stdout)
    [order_shown] = shown["orders"]
    assert [h["refunded"] for h in order_shown["holders"]].count(True) == 1


def test_a_ticket_missing_from_one_listing_is_not_taken_for_a_refund(coded, receiver, cli, db):
    """A short or shifting /v1/tickets page revokes nothing: only a ticket Givebutter answers 404 for is refunded."""
    world = coded
    event = mapped(world, cli)
    ada = ("Ada", "Lovelace", "ada@example.org")
    txn, tickets = order(
        "80001", ada, [("Ada", "Lovelace", "ada@example.org", "GA"), ("Charles", "Babbage", "cb@example.org", "GA")]
    )
    sell(world, receiver, txn, tickets)
    run_drain()

    class ShortListing(dict):
        """A /v1/tickets listing that comes back without these tickets (a page that shifted, a glitch), while
        each is still there when asked for by its id."""

        def values(self):
            return []

    listed = world.givebutter.tickets
    world.givebutter.tickets = ShortListing(listed)
    assert cli("events", "checkins", "GALA26").exit_code == 0
    world.givebutter.tickets = listed
    run_drain()
    assert sorted((i["guest_name"], i["rsvp"]) for i in invitations(world, event["id"])) == [
        ("Ada Lovelace", 1),
        ("Charles Babbage", 1),
    ]


def test_two_guests_of_one_name_keep_their_own_invitations_through_a_lost_create_and_a_refund(coded, receiver, cli, db, env):
    world = coded
    env["CRM_CONFIRM_AFTER_S"] = "0"
    event = mapped(world, cli)
    ada = ("Ada", "Lovelace", "ada@example.org")
    sell(world, receiver, *order("90001", ada, [("Ada", "Lovelace", "ada@example.org", "GA"), ("Guest", "Smith", "", "GA")]))
    run_drain()
    world.crm.faults.append({"mode": "timeout", "count": 1, "method": "POST", "path": "/invitations"})  # never reached LGL
    sell(world, receiver, *order("90002", ada, [("Guest", "Smith", "", "GA")]))
    run_drain()
    assert [i["guest_name"] for i in invitations(world, event["id"]) if i["is_a_guest"]] == ["Guest Smith", "Guest Smith"]
    give(receiver, samples.givebutter_refund(world.givebutter.transactions["90001"]), event="refund.created", event_id="rf-90001")
    run_drain()
    assert [i["guest_name"] for i in invitations(world, event["id"]) if i["is_a_guest"]] == ["Guest Smith"]  # 90002's stays


def test_a_staff_invitation_taken_keeps_what_staff_wrote(coded, receiver, cli, db):
    world = coded
    event = mapped(world, cli)
    grace = world.crm.create_constituent({"first_name": "Grace", "last_name": "Hopper",
                                          "email_addresses": [{"address": "grace@example.org"}]})  # fmt: skip
    world.crm.invite(event["id"], grace["id"], rsvp=3, notes="Board member: table 1", attendee_names="Grace Hopper, Dr. X")
    sell(world, receiver, *order("71001", ("Grace", "Hopper", "grace@example.org"), [("Grace", "Hopper", "grace@example.org", "GA")]))  # fmt: skip
    run_drain()
    [only] = invitations(world, event["id"])
    assert only["notes"] == "Board member: table 1; Givebutter order 71001: GA x1" and only["rsvp"] == 1
    assert only["attendee_names"] == "Grace Hopper, Dr. X, Grace Hopper"
    # an event id out of any CRM's range is refused, not stored
    result = cli("mappings", "events", "set", "GALA26", "--event", "99999999999999999999")
    assert result.exit_code == 2


# -- issue 51: every order written by the next drain, partial refunds, check-ins, the waiting column ---------------


def test_a_piece_that_lands_wakes_the_orders_invitations_job_whatever_it_is_doing(db):
    """Deterministic, with no threads: a job waiting (queued for later), running (then ending waiting, or done)
    when its order's piece lands runs again now; one held for review stays held."""
    from synctool import store
    from synctool.platforms.givebutter import events
    from synctool.queue import jobs

    def due_now(job_id: str) -> bool:
        row = jobs.get(db, job_id)
        return row["status"] == "queued" and row["run_after"] <= store.iso()

    def claim() -> object:
        row = jobs.claim(db, "drain:test", targets=("crm",))
        assert row is not None and row["entity_type"] == "invitations"
        return row

    # waiting for the rest of its tickets (queued a minute on): a ticket lands, it is due now
    first = events.queue(db, "O1")
    row = claim()
    assert jobs.wait(db, row, "drain:test", "1 of 2 tickets known; waiting for the rest", 60) == "queued"
    assert not due_now(first)
    assert events.queue(db, "O1") == first and due_now(first)
    # running when the last ticket lands, then ending waiting (it read before the ticket): due now, not in a minute
    row = claim()
    assert events.queue(db, "O1") == first  # no second job
    jobs.wait(db, row, "drain:test", "1 of 2 tickets known; waiting for the rest", 60)
    assert due_now(first)
    # running when a check-in lands, then ending done: it runs once more, now
    row = claim()
    events.queue(db, "O1")
    assert jobs.finish(db, row, "drain:test", jobs.Outcome("succeeded", "event 1: invitation 9 created"))
    assert due_now(first) and "runs again" in jobs.get(db, first)["message"]
    # nothing lands while it runs: it ends as it says, and waits its minute when it waits
    row = claim()
    assert jobs.finish(db, row, "drain:test", jobs.Outcome("succeeded", "done"))
    assert jobs.get(db, first)["status"] == "succeeded"
    # done: the next piece makes a new job, due now; held for a person, a piece leaves it held
    second = events.queue(db, "O1")
    assert second != first and due_now(second)
    row = claim()
    assert jobs.hold(db, row, "drain:test", "which ticket?") == "review"
    assert events.queue(db, "O1") == second and jobs.get(db, second)["status"] == "review"


def guests_of(world, event_id: int) -> dict[str, int]:
    return {i["guest_name"]: i["rsvp"] for i in invitations(world, event_id)}


GA, VIP = {"title": "General Admission", "price": 60}, {"title": "VIP", "price": 150}
ADA = {"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.org"}
CHARLES = {"first_name": "Charles", "last_name": "Babbage", "email": "cb@example.org"}
MARY = {"first_name": "Mary", "last_name": "Somerville", "email": "ms@example.org"}


def test_a_refund_of_one_guests_ticket_removes_that_guest_alone(coded, receiver, cli, db):
    """Givebutter keeps listing the ticket (no "ticket return"): the refund's refunded sub-transaction, whose line
    names the ticket type and count, says which; a refund that names no ticket is matched by its amount."""
    world = coded
    event = mapped(world, cli)
    gb = world.givebutter
    txn, held = gb.sell_tickets(CAMPAIGN["id"], ADA, [{**ADA, **GA}, {**CHARLES, **GA}, {**MARY, **VIP}])
    sell(world, receiver, txn, held)
    run_drain()
    assert guests_of(world, event["id"]) == {"Ada Lovelace": 1, "Charles Babbage": 1, "Mary Somerville": 1}
    # Mary's VIP ticket refunded: the refunded part's line is "VIP" x1 at 150; Ada's and Charles's GA stand
    refund = gb.refund_tickets(txn["id"], [held[2]["id"]], revoke=False)
    assert [p["line_items"] for p in refund["transactions"] if p["refunded"]] == [
        [{"type": "item", "subtype": "ticket", "description": "VIP", "quantity": 1, "price": 150, "discount": 0, "total": 150}]
    ]
    give(receiver, refund, event="refund.created", event_id="rf-mary")
    run_drain()
    assert guests_of(world, event["id"]) == {"Ada Lovelace": 1, "Charles Babbage": 1}
    # a second order: the buyer's own ticket refunded, by a refund object naming only its amount (60: one GA, the
    # only set of its tickets that costs it); the buyer keeps RSVP yes while her guest's ticket stands
    txn2, held2 = gb.sell_tickets(CAMPAIGN["id"], ADA, [{**ADA, **GA}, {**MARY, **VIP}])
    sell(world, receiver, txn2, held2)
    run_drain()
    gb.refund_tickets(txn2["id"], [held2[0]["id"]], revoke=False)
    give(receiver, samples.givebutter_refund(txn2, amount=60), event="refund.created", event_id="rf-ada")
    run_drain()
    assert guests_of(world, event["id"]) == {"Ada Lovelace": 1, "Charles Babbage": 1, "Mary Somerville": 1}
    [buyer] = [i for i in invitations(world, event["id"]) if not i["is_a_guest"]]
    assert buyer["notes"].endswith(f"Givebutter order {txn2['id']}: VIP x1"), buyer["notes"]
    statuses = {r[0] for r in db.execute("SELECT status FROM jobs")}
    assert statuses <= {"succeeded", "skipped"}, statuses


def test_a_refund_that_cannot_tell_two_guests_apart_holds_the_order_naming_the_choices(coded, receiver, cli, db):
    world = coded
    event = mapped(world, cli)
    gb = world.givebutter
    txn, held = gb.sell_tickets(CAMPAIGN["id"], ADA, [{**ADA, **VIP}, {**CHARLES, **GA}, {**MARY, **GA}])
    sell(world, receiver, txn, held)
    run_drain()
    give(receiver, gb.refund_tickets(txn["id"], [held[1]["id"]], revoke=False), event="refund.created", event_id="rf-1")
    run_drain()
    # one of two General Admission tickets at 60: nobody is removed, the order waits for staff, the choices named
    assert guests_of(world, event["id"]) == {"Ada Lovelace": 1, "Charles Babbage": 1, "Mary Somerville": 1}
    [(status, message)] = db.execute(
        "SELECT status, message FROM jobs WHERE entity_type = 'invitations' AND status = 'review'"
    ).fetchall()
    assert status == "review"
    for named in (f"Charles Babbage (ticket {held[1]['id']})", f"Mary Somerville (ticket {held[2]['id']})",
                  "1 of the 2 General Admission at 60", f"synctool donations refunded-tickets {txn['id']}"):  # fmt: skip
        assert named in message, message
    assert "Ada Lovelace" not in message  # her VIP ticket is no choice
    # a check-in meanwhile leaves it held (one job, a person decides first)
    gb.check_in(held[2]["id"])
    assert cli("events", "checkins", "GALA26").exit_code == 0
    assert db.execute("SELECT count(*) FROM jobs WHERE entity_type = 'invitations' AND status = 'review'").fetchone()[0] == 1
    # staff say which: Charles's invitation goes, Mary's stays (and her check-in is written)
    said = cli("donations", "refunded-tickets", txn["id"], held[1]["id"], "--json")
    assert said.exit_code == 0, said.output
    assert json.loads(said.stdout)["released"] == 1
    refused = cli("donations", "refunded-tickets", txn["id"], "NOPE")
    assert refused.exit_code != 0 and "not tickets of order" in refused.output
    run_drain()
    assert guests_of(world, event["id"]) == {"Ada Lovelace": 1, "Mary Somerville": 1}
    [mary] = [i for i in invitations(world, event["id"]) if i["guest_name"] == "Mary Somerville"]
    assert mary["attended"] == 1
    # a later listing of Charles's ticket (Givebutter never revoked it) does not bring him back
    assert cli("events", "checkins", "GALA26").exit_code == 0
    run_drain()
    assert guests_of(world, event["id"]) == {"Ada Lovelace": 1, "Mary Somerville": 1}


def test_events_checkins_brings_a_check_in_another_read_saw_first(coded, receiver, cli, db):
    world = coded
    event = mapped(world, cli)
    other = world.givebutter.add_event_campaign("OTHER", "Other Night", "2026-12-01 01:00:00", "2026-12-01 05:00:00",
                                                campaign_id=560)  # fmt: skip
    night = world.crm.add_event("Other Night", "2026-11-30")
    assert cli("crm", "refresh").exit_code == 0 and cli("donations", "campaigns", "--refresh").exit_code == 0
    assert cli("mappings", "events", "set", "OTHER", "--event", str(night["id"])).exit_code == 0
    txn, held = world.givebutter.sell_tickets(CAMPAIGN["id"], ADA, [ADA, CHARLES])
    sell(world, receiver, txn, held)
    run_drain()
    for ticket in held:
        world.givebutter.check_in(ticket["id"])
    # reading the other event's check-ins records these too (every page is read), but queues only its own orders
    read = json.loads(cli("events", "checkins", "OTHER", "--json").stdout)["donations"]
    assert read["orders_queued"] == 0 and other["id"] == 560
    run_drain()
    assert all(i["attended"] == 0 for i in invitations(world, event["id"]))
    # reading this event's: nothing changed since the last read, yet both attendances are written
    read = json.loads(cli("events", "checkins", "GALA26", "--json").stdout)["donations"]
    assert (read["changed"], read["orders_queued"]) == (0, 1), read
    run_drain()
    assert sorted((i["guest_name"], i["attended"]) for i in invitations(world, event["id"])) == [
        ("Ada Lovelace", 1),
        ("Charles Babbage", 1),
    ]
    # and once written, a read queues nothing
    read = json.loads(cli("events", "checkins", "GALA26", "--json").stdout)["donations"]
    assert read["orders_queued"] == 0


def test_events_list_counts_the_tickets_waiting_for_their_invitations(coded, receiver, cli, db):
    world = coded
    world.givebutter.campaigns[CAMPAIGN["id"]] = CAMPAIGN
    world.givebutter.campaigns[561] = {**CAMPAIGN, "id": 561, "code": "LATER", "title": "Later Gala"}
    event = world.crm.add_event("Spring Gala 2026", "2026-11-20")
    txn, held = world.givebutter.sell_tickets(CAMPAIGN["id"], ADA, [ADA, CHARLES, MARY])
    sell(world, receiver, txn, held)
    later, later_held = world.givebutter.sell_tickets(561, CHARLES, [CHARLES])
    sell(world, receiver, later, later_held)
    run_drain()  # the gifts are made; no campaign is mapped yet
    assert cli("crm", "refresh").exit_code == 0
    assert cli("mappings", "events", "set", "555", "--event", str(event["id"])).exit_code == 0
    # mapped, not drained yet: its three tickets wait for their invitations; the other campaign waits for a mapping
    listed = json.loads(cli("events", "list", "--json").stdout)
    [row] = listed["items"]
    assert (row["event_id"], row["tickets"], row["waiting"], row["invitations"]) == (event["id"], 3, 3, 0), row
    assert listed["waiting"] == [
        {"source": "donations", "campaign_id": "561", "campaign": "Later Gala", "orders": 1, "tickets": 1}
    ]
    shown = cli("events", "list").stdout
    header = next(line for line in shown.splitlines() if "campaign_id" in line)
    assert "waiting" in header and "event campaigns waiting for an event mapping:" in shown, shown
    assert "1 ticket(s) of Later Gala wait for an event mapping: synctool mappings events set 561 --event N" in shown
    run_drain()
    [row] = json.loads(cli("events", "list", "--json").stdout)["items"]
    assert (row["tickets"], row["waiting"], row["invitations"], row["guests"]) == (3, 0, 1, 2), row
    # one guest's ticket refunded (and revoked): it neither waits nor counts as a guest
    give(receiver, world.givebutter.refund_tickets(txn["id"], [held[2]["id"]]), event="refund.created", event_id="rf-w")
    run_drain()
    [row] = json.loads(cli("events", "list", "--json").stdout)["items"]
    assert (row["waiting"], row["guests"], row["refunded"]) == (0, 1, 1), row
