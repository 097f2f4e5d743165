"""Refunds written back to the CRM (invariant 4: keyed by the refund's own id, never over a person's edit),
through the receiver and drain against the fakes: Givebutter (both shapes), Square, Stripe, each policy."""

from __future__ import annotations

import copy
import json

from synctool.fakes import samples
from tests.flow_helpers import CUSTOMER, add_order, give, job, pos_event, run_drain


def transaction(txn_id: str = "RF1", amount: float = 100, **changes) -> dict:
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    part = {**txn["transactions"][0], "amount": amount}
    txn.update({"id": txn_id, "amount": amount, "transactions": [part], **changes})
    return txn


def gift_of(world, external_id: str) -> dict | None:
    return next((g for g in world.crm.gifts.values() if g["external_id"] == external_id), None)


def crm_writes_since(world, mark: int) -> list[tuple[str, str]]:
    return [(r["method"], r["path"]) for r in world.crm.requests[mark:]]


def refund_row(db, key: str):
    return db.execute("SELECT * FROM refunds WHERE key = ?", (key,)).fetchone()


def test_full_refund_zeroes_the_gift_with_a_note_in_two_requests(coded, receiver, db, cli):
    give(receiver, transaction())
    run_drain()
    gift = gift_of(coded, "donations_RF1")
    assert gift["received_amount"] == 100.0
    mark = len(coded.crm.requests)
    r = give(receiver, samples.givebutter_refund(transaction()), event="refund.created")
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "succeeded", row["last_error"]
    assert row["crm_gift_id"] == str(gift["id"]) and row["amount"] == "-100.00"
    assert gift["received_amount"] == 0.0 and gift["deductible_amount"] == 0.0
    assert gift["note"].endswith("Refunded $100.00 on 2024-02-05 via Givebutter, refund rf_RF1")
    assert gift["note"].startswith("Givebutter transaction RF1")  # appended, not replaced
    # the gift is in the ledger: read, then write; nothing else
    assert crm_writes_since(coded, mark) == [("GET", f"/api/v1/gifts/{gift['id']}"), ("PATCH", f"/api/v1/gifts/{gift['id']}")]
    listed = json.loads(cli("refunds", "list", "--json").stdout)
    [item] = listed["items"]
    assert (item["state"], item["amount_before"], item["amount_after"], item["policy"]) == ("applied", "100.00", "0.00", "adjust")
    assert listed["totals"]["applied"] == 1 and listed["totals"]["amount_applied"] == "100.00"
    assert "rf_RF1" in cli("refunds", "list").stdout


def test_partial_refunds_in_either_shape_leave_the_rest_and_a_replay_changes_nothing(coded, receiver, db):
    give(receiver, transaction())
    run_drain()
    gift = gift_of(coded, "donations_RF1")
    give(receiver, samples.givebutter_refund(transaction(), amount=20), event="refund.created", event_id="e-20")
    run_drain()
    assert gift["received_amount"] == 80.0
    second = {"id": "rf_second", "transaction_id": "RF1", "amount": 30, "created_at": "2024-02-06T10:00:00+00:00"}
    give(receiver, second, event="refund.created")
    run_drain()
    assert (gift["received_amount"], gift["deductible_amount"]) == (50.0, 50.0)
    assert "Refunded $20.00" in gift["note"] and "Refunded $30.00 on 2024-02-06" in gift["note"]
    # the same refund again, in a new envelope (a replay the receiver cannot tell apart): no request at all
    mark = len(coded.crm.requests)
    r = give(receiver, second, event="refund.created")
    run_drain()
    assert job(db, r["job_id"])["status"] == "skipped" and "already applied" in job(db, r["job_id"])["message"]
    assert coded.crm.requests[mark:] == [] and gift["received_amount"] == 50.0
    # the transaction shape carries the refunded total so far: 50 of it is applied; 70 refunds 20 more
    refunded = transaction(transactions=[{**transaction()["transactions"][0], "amount": 70, "refunded": True}])
    give(receiver, samples.givebutter_refund(refunded, as_transaction=True), event="refund.created")
    run_drain()
    assert gift["received_amount"] == 30.0
    r = give(receiver, samples.givebutter_refund(refunded, as_transaction=True), event="refund.created")
    run_drain()
    assert job(db, r["job_id"])["status"] == "skipped" and gift["received_amount"] == 30.0


def test_refund_before_its_gift_waits_then_applies(coded, receiver, db):
    r = give(receiver, samples.givebutter_refund(transaction(), amount=25), event="refund.created")
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "queued" and "waits" in row["message"] and "no CRM gift donations_RF1 yet" in row["message"]
    assert row["attempts"] == 0  # waiting is not failing
    assert refund_row(db, "donations:rf_RF1")["state"] == "waiting"
    give(receiver, transaction())
    run_drain()  # the gift's job finishing wakes the refund: both in one drain
    assert job(db, r["job_id"])["status"] == "succeeded"
    assert gift_of(coded, "donations_RF1")["received_amount"] == 75.0


def test_refund_for_a_gift_synctool_never_made(coded, receiver, db, env):
    env["REFUNDS_WAIT_FOR_GIFT_S"] = "0"
    r = give(receiver, samples.givebutter_refund(transaction("GHOST"), amount=4.5), event="refund.created")
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "skipped" and "no CRM gift donations_GHOST" in row["message"]
    assert "before synctool was installed" in row["message"]
    # a gift made before install (another tool, same external id) is found by its external id and adjusted
    old = coded.crm.create_constituent({"first_name": "Old", "last_name": "Donor"})
    coded.crm.gifts[424242] = {
        "id": 424242,
        "constituent_id": old["id"],
        "external_id": "donations_OLD1",
        "received_amount": 60.0,
        "note": None,
    }
    mark = len(coded.crm.requests)
    r = give(receiver, samples.givebutter_refund(transaction("OLD1"), amount=10), event="refund.created")
    run_drain()
    assert job(db, r["job_id"])["status"] == "succeeded"
    assert coded.crm.gifts[424242]["received_amount"] == 50.0
    assert [m for m, _ in crm_writes_since(coded, mark)] == ["GET", "PATCH"]  # the search read it: 2 requests


def test_a_gift_a_person_edited_is_flagged_not_overwritten(coded, receiver, db, cli):
    give(receiver, transaction())
    run_drain()
    gift = gift_of(coded, "donations_RF1")
    gift["received_amount"] = 90.0  # someone corrected it in LGL
    r = give(receiver, samples.givebutter_refund(transaction(), amount=20), event="refund.created")
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "failed" and row["last_error"].startswith("needs attention")
    assert "$90.00, not the $100.00 synctool wrote" in row["last_error"] and row["crm_gift_id"] == str(gift["id"])
    assert gift["received_amount"] == 90.0 and not any(q["method"] == "PATCH" for q in coded.crm.requests)
    assert (
        json.loads(cli("refunds", "list", "--state", "flagged", "--json").stdout)["items"][0]["gift_external_id"]
        == "donations_RF1"
    )


def test_flag_policy_changes_nothing_and_names_the_gift(coded, receiver, db, cli):
    shown = json.loads(cli("settings", "refund-policy", "--json").stdout)
    assert shown["policy"] == "adjust" and shown["from"].startswith("config")
    assert cli("settings", "refund-policy", "flag").exit_code == 0
    assert json.loads(cli("settings", "refund-policy", "--json").stdout)["policy"] == "flag"
    bad = cli("settings", "refund-policy", "shred")
    assert bad.exit_code == 2 and "adjust" in bad.output
    give(receiver, transaction())
    run_drain()
    gift = gift_of(coded, "donations_RF1")
    r = give(receiver, samples.givebutter_refund(transaction(), amount=20), event="refund.created")
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "failed" and f"CRM gift {gift['id']} ($100.00)" in row["last_error"]
    assert "refund rf_RF1 of $20.00" in row["last_error"] and gift["received_amount"] == 100.0
    # switched to adjust, the operator's retry applies it
    assert cli("settings", "refund-policy", "adjust").exit_code == 0
    assert cli("jobs", "retry", r["job_id"]).exit_code == 0
    run_drain()
    assert job(db, r["job_id"])["status"] == "succeeded" and gift["received_amount"] == 80.0


def test_delete_policy_deletes_a_wholly_refunded_gift_and_adjusts_a_partial_one(coded, receiver, db, cli, env):
    env["REFUNDS_POLICY"] = "delete"
    give(receiver, transaction("FULL"))
    give(receiver, transaction("PART"))
    run_drain()
    full, part = gift_of(coded, "donations_FULL"), gift_of(coded, "donations_PART")
    give(receiver, samples.givebutter_refund(transaction("FULL")), event="refund.created")
    give(receiver, samples.givebutter_refund(transaction("PART"), amount=40), event="refund.created")
    run_drain()
    assert full["id"] not in coded.crm.gifts and part["received_amount"] == 60.0
    ledger = db.execute("SELECT state, crm_id FROM crm_writes WHERE key = 'donations_FULL'").fetchone()
    assert (ledger["state"], ledger["crm_id"]) == ("deleted", str(full["id"]))  # the ledger keeps what it was
    # the transaction's webhook again (or the poll finding it) does not bring the deleted gift back
    r = give(receiver, transaction("FULL"))
    run_drain()
    assert job(db, r["job_id"])["status"] == "skipped" and gift_of(coded, "donations_FULL") is None
    policies = {i["gift_external_id"]: i["policy"] for i in json.loads(cli("refunds", "list", "--json").stdout)["items"]}
    assert policies["donations_FULL"] == "delete" and policies["donations_PART"].startswith("adjust")


def test_square_refund_waits_for_completed_then_reduces_the_orders_gift(coded, receiver, db, cli):
    add_order(coded, "SQR1", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}], cents=4000)
    coded.square.payments["PAY1"] = {"id": "PAY1", "order_id": "SQR1", "status": "COMPLETED"}
    pos_event(receiver, samples.square_order_event("SQR1"))
    run_drain()
    gift = gift_of(coded, "pos_order_SQR1")
    pending = pos_event(receiver, samples.square_refund_event("REF1", "PAY1", 1500, status="PENDING"))
    run_drain()
    row = job(db, pending["job_id"])
    assert row["status"] == "skipped" and "PENDING" in row["message"] and gift["received_amount"] == 40.0
    # the update carries no order_id: the payment names the order
    done = pos_event(receiver, samples.square_refund_event("REF1", "PAY1", 1500, event_type="refund.updated"))
    run_drain()
    row = job(db, done["job_id"])
    assert row["status"] == "succeeded", row["last_error"]
    assert gift["received_amount"] == 25.0 and "Refunded $15.00 on 2026-11-21 via Square, refund REF1" in gift["note"]
    assert any(r["path"] == "/v2/payments/PAY1" for r in coded.square.requests)
    # a second COMPLETED notification of the same refund changes nothing
    again = pos_event(receiver, samples.square_refund_event("REF1", "PAY1", 1500, order_id="SQR1", event_type="refund.updated"))
    run_drain()
    assert job(db, again["job_id"])["status"] == "skipped" and gift["received_amount"] == 25.0
    assert "-15.00" in cli("syncs", "list", "--source", "pos").stdout


def test_a_square_refund_through_its_return_order_reduces_the_sale_each_time(coded, receiver, db, cli):
    """Square records every refund as a return order: the refund's order_id is that return order, whose
    returns[].source_order_id is the sale. Two partial refunds of one payment; the return order's own
    order.created is not a sale."""
    add_order(coded, "SALE40", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}], cents=4000)
    coded.square.payments["PAY40"] = {"id": "PAY40", "order_id": "SALE40", "status": "COMPLETED", "location_id": "FPYCBCHYMXFK1",
                                      "total_money": {"amount": 4000, "currency": "USD"}}  # fmt: skip
    pos_event(receiver, samples.square_order_event("SALE40"))
    run_drain()
    first = coded.square.refund_payment("PAY40", 1500, refund_id="RFA")
    assert first["order_id"] != "SALE40" and coded.square.orders[first["order_id"]]["returns"][0]["source_order_id"] == "SALE40"
    returned = pos_event(receiver, samples.square_order_event(first["order_id"], event_type="order.created"))
    pos_event(receiver, samples.square_refund_notice(first))
    run_drain()
    assert gift_of(coded, "pos_order_SALE40")["received_amount"] == 25.0
    assert "return order" in job(db, returned["job_id"])["message"] and gift_of(coded, f"pos_order_{first['order_id']}") is None
    second = coded.square.refund_payment("PAY40", 500, refund_id="RFB")
    pos_event(receiver, samples.square_refund_notice(second, "refund.updated"))
    run_drain()
    assert gift_of(coded, "pos_order_SALE40")["received_amount"] == 20.0
    listed = {r["refund_id"]: r for r in json.loads(cli("refunds", "list", "--json").stdout)["items"]}
    assert (listed["RFA"]["amount_before"], listed["RFA"]["amount_after"]) == ("40.00", "25.00"), listed["RFA"]
    assert (listed["RFB"]["amount_before"], listed["RFB"]["amount_after"]) == ("25.00", "20.00")
    # a refund that names only its return order reaches the same sale through returns[].source_order_id
    third = {k: v for k, v in coded.square.refund_payment("PAY40", 100, refund_id="RFC").items() if k != "payment_id"}
    pos_event(receiver, samples.square_refund_notice(third))
    run_drain()
    assert gift_of(coded, "pos_order_SALE40")["received_amount"] == 19.0
    assert coded.square.payments["PAY40"]["refunded_money"]["amount"] == 2100


def test_shop_sale_coded_not_deductible(coded, receiver, cli):
    assert cli("pos", "location-overrides", "set", "L2GIFTSHOP001", "--fund-id", "2402", "--deductible", "none").exit_code == 0
    add_order(coded, "SHOP1", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}], location="L2GIFTSHOP001")
    add_order(coded, "DESK1", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}])
    pos_event(receiver, samples.square_order_event("SHOP1", location_id="L2GIFTSHOP001"))
    pos_event(receiver, samples.square_order_event("DESK1"))
    run_drain()
    assert gift_of(coded, "pos_order_SHOP1")["deductible_amount"] == 0.0
    assert gift_of(coded, "pos_order_DESK1")["deductible_amount"] == 25.0


def test_a_refund_whose_answers_were_lost_is_confirmed_not_applied_twice(coded, receiver, db):
    give(receiver, transaction())
    run_drain()
    gift = gift_of(coded, "donations_RF1")
    # every PATCH lands but its answer never arrives: the attempt gives up, the refund is 'pending'
    coded.crm.faults.append({"mode": "commit_timeout", "count": 4, "method": "PATCH", "path": "/gifts/"})
    r = give(receiver, samples.givebutter_refund(transaction(), amount=20), event="refund.created")
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "succeeded", row["last_error"]
    assert gift["received_amount"] == 80.0 and gift["note"].count("Refunded $20.00") == 1
    assert refund_row(db, "donations:rf_RF1")["state"] == "applied"
    # the next attempt read the gift, saw its own write, and wrote nothing more
    attempts = db.execute("SELECT outcome FROM job_attempts WHERE job_id = ? ORDER BY id", (r["job_id"],)).fetchall()
    assert [a["outcome"] for a in attempts][-1] == "succeeded" and len(attempts) >= 2
    assert db.execute("SELECT amount FROM crm_writes WHERE key = 'donations_RF1'").fetchone()[0] == "80.00"


def test_a_delete_whose_answers_were_lost_is_recognised(coded, receiver, db, env):
    env["REFUNDS_POLICY"] = "delete"
    give(receiver, transaction())
    run_drain()
    gift = gift_of(coded, "donations_RF1")
    coded.crm.faults.append({"mode": "commit_timeout", "count": 4, "method": "DELETE", "path": "/gifts/"})
    r = give(receiver, samples.givebutter_refund(transaction()), event="refund.created")
    run_drain()
    assert job(db, r["job_id"])["status"] == "succeeded", job(db, r["job_id"])["last_error"]
    assert gift["id"] not in coded.crm.gifts
    assert db.execute("SELECT state FROM crm_writes WHERE key = 'donations_RF1'").fetchone()[0] == "deleted"
