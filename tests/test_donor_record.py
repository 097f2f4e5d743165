"""The donor record, right: soft credits for peer-to-peer fundraisers (exactly once, refunded with their gift,
never money), acknowledgement templates on the mappings, and news about known donors kept as proposed changes,
through the receiver and drain against the fakes."""

from __future__ import annotations

import copy
import json
import threading

from synctool.fakes import samples
from tests.flow_helpers import CUSTOMER, add_order, give, job, pos_event, run_drain

CAMPAIGN = 118722
RAISER = {"id": 501, "first_name": "Mae", "last_name": "Jemison", "email": "mae@example.org"}


def transaction(txn_id: str = "P2P1", amount: float = 50, **changes) -> dict:
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    part = {**txn["transactions"][0], "amount": amount}
    txn.update({"id": txn_id, "amount": amount, "transactions": [part], "member_id": 501, "member_name": "Mae Jemison"})
    txn.update(changes)
    return txn


def gifts(world, external_id: str) -> list[dict]:
    return [g for g in world.crm.gifts.values() if g["external_id"] == external_id]


def known_fundraiser(world) -> int:
    world.givebutter.add_member(CAMPAIGN, RAISER)
    made = world.crm.create_constituent(
        {"first_name": "Mae", "last_name": "Jemison", "email_addresses": [{"address": "mae@example.org"}]}
    )
    return made["id"]


def test_a_peer_to_peer_gift_gives_one_soft_credit_to_its_fundraiser_in_one_request(coded, receiver, db):
    raiser_id = known_fundraiser(coded)
    give(receiver, transaction(txn_id="P2P0", amount=5, email="warm@example.org"))  # warms the mirror
    run_drain()
    mark = len(coded.crm.requests)
    r = give(receiver, transaction())
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "succeeded", row["last_error"]
    [gift] = gifts(coded, "donations_P2P1")
    [credit] = gifts(coded, "donations_P2P1_sc_501")
    assert credit["constituent_id"] == raiser_id and credit["gift_type_name"] == "Soft Credit"
    assert credit["parent_gift_id"] == gift["id"] and credit["received_amount"] == 50.0
    assert credit["deductible_amount"] == 0.0 and credit["ack_template_name"] == "do_not_ack"
    assert "soft credit" in row["message"] and "Mae Jemison" in gift["note"]
    posts = [x for x in coded.crm.requests[mark:] if x["method"] == "POST" and x["path"].endswith("/gifts")]
    credit_posts = [x for x in posts if f"/constituents/{raiser_id}/" in x["path"]]
    assert len(credit_posts) == 1  # the fundraiser was known: one request for the soft credit


def test_a_replayed_or_raced_peer_to_peer_gift_still_gives_one_soft_credit(coded, receiver, db):
    known_fundraiser(coded)
    give(receiver, transaction(), event_id="evt-1")
    give(receiver, transaction(), event_id="evt-2")  # the same transaction, announced twice
    runs = [threading.Thread(target=run_drain) for _ in range(2)]
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    give(receiver, transaction(), event_id="evt-3")
    run_drain()
    assert len(gifts(coded, "donations_P2P1")) == 1 and len(gifts(coded, "donations_P2P1_sc_501")) == 1


def test_a_refund_lowers_then_deletes_the_soft_credit_with_its_gift(coded, receiver, db, cli):
    known_fundraiser(coded)
    give(receiver, transaction(amount=100))
    run_drain()
    give(receiver, samples.givebutter_refund(transaction(amount=100), amount=40), event="refund.created", event_id="r-40")
    run_drain()
    [credit] = gifts(coded, "donations_P2P1_sc_501")
    assert credit["received_amount"] == 60.0
    assert cli("settings", "refund-policy", "delete").exit_code == 0
    give(receiver, transaction(txn_id="P2P3", amount=30))
    run_drain()
    assert len(gifts(coded, "donations_P2P3_sc_501")) == 1
    give(receiver, samples.givebutter_refund(transaction(txn_id="P2P3", amount=30)), event="refund.created")
    run_drain()
    assert gifts(coded, "donations_P2P3") == [] and gifts(coded, "donations_P2P3_sc_501") == []


def test_a_fundraiser_not_in_the_crm_is_named_not_created(coded, receiver, db):
    coded.givebutter.add_member(CAMPAIGN, RAISER)
    before = len(coded.crm.constituents)
    r = give(receiver, transaction())
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "succeeded"
    assert "no soft credit: Mae Jemison <mae@example.org> is not in the CRM" in row["message"]
    assert len(coded.crm.constituents) == before + 1  # the donor only
    assert gifts(coded, "donations_P2P1_sc_501") == []
    assert "raised by Mae Jemison (no soft credit)" in gifts(coded, "donations_P2P1")[0]["note"]


def test_soft_credits_are_not_money_in_reconcile_and_can_be_switched_off(coded, receiver, db, cli):
    known_fundraiser(coded)
    coded.givebutter.add_transaction({**transaction(), "transacted_at": "2026-10-05T12:00:00+00:00"})
    give(receiver, {**transaction(), "transacted_at": "2026-10-05T12:00:00+00:00"})
    run_drain()
    result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "donations", "--json")
    report = json.loads(result.stdout)
    assert report["soft_credits"] == 1 and report["differences"] == 0, result.stdout
    assert json.loads(cli("settings", "soft-credits", "off", "--json").stdout)["enabled"] is False
    give(receiver, transaction(txn_id="P2P2"))
    run_drain()
    assert gifts(coded, "donations_P2P2_sc_501") == []


def test_a_campaign_override_with_no_ack_sends_do_not_ack(coded, receiver, cli):
    result = cli("mappings", "overrides", "set", str(CAMPAIGN), "--fund-id", "2398", "--no-ack")
    assert result.exit_code == 0, result.output
    assert "do_not_ack" in cli("mappings", "overrides").stdout
    give(receiver, transaction(member_id=None))
    run_drain()
    assert gifts(coded, "donations_P2P1")[0]["ack_template_name"] == "do_not_ack"
    # a template by name is checked against the CRM's acknowledgement templates
    assert cli("mappings", "types", "set", "pos:default", "--fund-id", "2402", "--ack", "Nope").exit_code != 0
    ok = cli("mappings", "types", "set", "pos:default", "--fund-id", "2402", "--ack", "donation_ack")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ack_template_name"] == "Donation Acknowledgment"
    assert cli("mappings", "types", "set", "pos:default", "--ack", "x", "--no-ack").exit_code != 0


def test_a_pos_location_override_can_say_no_ack(coded, receiver, cli):
    assert cli("pos", "location-overrides", "set", "FPYCBCHYMXFK1", "--fund-id", "2402", "--no-ack").exit_code == 0
    add_order(coded, "ACK1", "COMPLETED", tenders=[{"type": "CARD"}], customer=CUSTOMER)
    pos_event(receiver, samples.square_order_event("ACK1"))
    run_drain()
    assert gifts(coded, "pos_order_ACK1")[0]["ack_template_name"] == "do_not_ack"


def test_a_returning_donor_who_moved_yields_one_proposed_change_applied_in_one_request(coded, receiver, db, cli):
    give(receiver, transaction(member_id=None, txn_id="D1"))
    run_drain()
    moved = {
        "address_1": "7 New Street",
        "address_2": None,
        "city": "Berkeley",
        "state": "CA",
        "zipcode": "94704",
        "country": "USA",
    }
    # the same donor gives again from her new home, and spells her name differently
    r = give(receiver, transaction(member_id=None, txn_id="D2", address=moved, first_name="Augusta Ada"))
    run_drain()
    give(receiver, transaction(member_id=None, txn_id="D3", address=moved), event_id="d3")  # proposed once only
    run_drain()
    assert "new address proposed" in job(db, r["job_id"])["message"]
    [change] = json.loads(cli("donors", "changes", "--json").stdout)["items"]
    assert (change["kind"], change["value"], change["external_id"]) == (
        "address",
        "7 New Street, Berkeley, CA, 94704, USA",
        "donations_D2",
    )
    cid = int(change["constituent_id"])
    assert coded.crm.constituents[cid]["first_name"] == "Ada"  # a name is never changed
    mark = len(coded.crm.requests)
    applied = cli("donors", "apply", str(change["id"]))
    assert applied.exit_code == 0, applied.output
    assert [(x["method"], x["path"]) for x in coded.crm.requests[mark:]] == [
        ("POST", f"/api/v1/constituents/{cid}/street_addresses")
    ]
    rows = [r for r in coded.crm.contacts["street_addresses"].values() if r["item_id"] == cid]
    assert {r["street"] for r in rows} == {"12 Analytical Way", "7 New Street"}
    assert [r["is_preferred"] for r in rows if r["street"] == "7 New Street"] == [False]
    # the mirror knows it now: the next gift from the new address proposes nothing
    give(receiver, transaction(member_id=None, txn_id="D4", address=moved))
    run_drain()
    assert json.loads(cli("donors", "changes", "--json").stdout)["pending"] == 0
    assert cli("donors", "dismiss", "999").exit_code != 0


def test_donor_updates_add_adds_at_once_and_off_drops(coded, receiver, db, cli):
    give(receiver, transaction(member_id=None, txn_id="E1"))
    run_drain()
    assert cli("settings", "donor-updates", "add").exit_code == 0
    give(receiver, transaction(member_id=None, txn_id="E2", phone="+15105550000"))
    run_drain()
    numbers = {r["number"] for r in coded.crm.contacts["phone_numbers"].values()}
    assert "+15105550000" in numbers
    assert cli("settings", "donor-updates", "off").exit_code == 0
    give(receiver, transaction(member_id=None, txn_id="E3", phone="+15105559999"))
    run_drain()
    assert json.loads(cli("donors", "changes", "--status", "all", "--json").stdout)["items"][0]["status"] == "applied"
    assert "+15105559999" not in {r["number"] for r in coded.crm.contacts["phone_numbers"].values()}


def test_the_preview_plan_shows_the_ack_and_the_soft_credit_and_writes_neither(coded, receiver, cli):
    known_fundraiser(coded)
    assert cli("mappings", "types", "set", "donations:default", "--fund-id", "2398", "--no-ack").exit_code == 0
    assert cli("sync-mode", "preview").exit_code == 0
    give(receiver, transaction())
    run_drain()
    [plan] = json.loads(cli("preview", "--json").stdout)["items"]
    assert plan["ack"] == "do_not_ack" and plan["extras"].startswith("soft credit to #") and plan["crm_writes"] >= 2
    assert gifts(coded, "donations_P2P1") == [] and gifts(coded, "donations_P2P1_sc_501") == []


def test_a_soft_credit_whose_answer_was_lost_is_confirmed_not_repeated(coded, receiver, db, env):
    env["CRM_CONFIRM_AFTER_S"] = "0"
    raiser_id = known_fundraiser(coded)
    coded.crm.faults.append({"mode": "commit_timeout", "count": 1, "method": "POST", "path": f"/constituents/{raiser_id}/gifts"})
    r = give(receiver, transaction())
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "succeeded", (row["status"], row["message"], row["last_error"])
    assert len(gifts(coded, "donations_P2P1")) == 1 and len(gifts(coded, "donations_P2P1_sc_501")) == 1


def test_a_fundraiser_not_in_the_crm_is_created_when_allowed(coded, receiver, db, env):
    env["SOFT_CREDITS_CREATE_FUNDRAISERS"] = "true"
    coded.givebutter.add_member(CAMPAIGN, RAISER)
    give(receiver, transaction())
    run_drain()
    [credit] = gifts(coded, "donations_P2P1_sc_501")
    raiser = coded.crm.constituents[credit["constituent_id"]]
    assert (raiser["first_name"], raiser["last_name"]) == ("Mae", "Jemison")


def test_the_daily_summary_counts_the_pending_donor_changes(coded, receiver, cli):
    give(receiver, transaction(member_id=None, txn_id="S1"))
    run_drain()
    give(receiver, transaction(member_id=None, txn_id="S2", phone="+15105551234"))
    run_drain()
    mail = cli("alerts", "summary", "--dry-run").stdout
    assert "Donor records: 1 proposed change(s) to review: synctool donors changes" in mail
