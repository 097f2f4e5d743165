"""Nothing missed: the backup poll finds Square sales and refunds and Givebutter refunds whose webhooks were
lost, and `webhooks heal` replays what the platforms report they failed to deliver, once."""

from __future__ import annotations

import copy
import json

from synctool.fakes import samples
from tests.flow_helpers import CUSTOMER, add_order, days_ago, give, pos_event, run_drain


def gifts(world, external_id: str) -> list[dict]:
    return [g for g in world.crm.gifts.values() if g["external_id"] == external_id]


def synced_by_poll(db, external_id: str) -> list[str]:
    rows = db.execute("SELECT status, payload FROM jobs WHERE external_id = ?", (external_id,)).fetchall()
    return [f"{r['status']} by {(json.loads(r['payload']) if r['payload'] else {}).get('origin') or 'webhook'}" for r in rows]


def test_a_square_sale_and_refund_whose_webhooks_were_lost_are_synced_by_the_next_poll(coded, db, cli):
    add_order(coded, "LOST1", "COMPLETED", tenders=[{"type": "CARD"}], customer=CUSTOMER)
    add_order(coded, "OPEN0", "OPEN")  # no payment yet: the sale rule skips it, so no job
    first = json.loads(cli("poll", "--source", "pos", "--lookback", "7d", "--json").stdout)["sources"]["pos"]
    assert (first["orders_seen"], first["queued"]) == (2, 1), first
    assert first["requests"] == 3  # the locations (cache empty), one order search, one refund listing
    run_drain()
    assert gifts(coded, "pos_order_LOST1")[0]["received_amount"] == 25.0
    assert synced_by_poll(db, "pos_order_LOST1") == ["succeeded by poll"]
    # the sale is refunded at the register; the refund's webhook is lost too
    coded.square.payments["PAYL1"] = {"id": "PAYL1", "order_id": "LOST1", "status": "COMPLETED", "location_id": "FPYCBCHYMXFK1",
                                      "created_at": days_ago(1), "total_money": {"amount": 2500, "currency": "USD"}}  # fmt: skip
    coded.square.refund_payment("PAYL1", 1000, refund_id="RFL1")
    again = json.loads(cli("poll", "--source", "pos", "--json").stdout)["sources"]["pos"]
    assert (again["refunds_seen"], again["refunds_queued"]) == (1, 1) and again["requests"] == 2, again
    run_drain()
    assert gifts(coded, "pos_order_LOST1")[0]["received_amount"] == 15.0
    quiet = json.loads(cli("poll", "--source", "pos", "--json").stdout)["sources"]["pos"]
    assert (quiet["queued"], quiet["requests"]) == (0, 2)  # seen already: nothing queued twice


def test_a_sale_whose_webhook_arrived_is_not_queued_again_by_the_poll(coded, receiver, db, cli):
    add_order(coded, "SEEN1", "COMPLETED", tenders=[{"type": "CASH"}], customer=CUSTOMER)
    pos_event(receiver, samples.square_order_event("SEEN1"))
    run_drain()
    result = json.loads(cli("poll", "--source", "pos", "--lookback", "7d", "--json").stdout)["sources"]["pos"]
    assert result["queued"] == 0 and len(gifts(coded, "pos_order_SEEN1")) == 1


def test_a_lost_givebutter_refund_is_applied_by_the_next_poll(coded, receiver, db, cli):
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn.update(id="GBR1", amount=30, transactions=[{**txn["transactions"][0], "amount": 30}])
    coded.givebutter.add_transaction(txn)
    give(receiver, txn)
    run_drain()
    assert gifts(coded, "donations_GBR1")[0]["received_amount"] == 30.0
    coded.givebutter.refund_transaction("GBR1")  # refunded on Givebutter; refund.created never arrives
    result = json.loads(cli("poll", "--source", "donations", "--json").stdout)["sources"]["donations"]
    assert result["refunds_queued"] == 1 and result["requests"] == 3, result  # new, changed, the plans
    run_drain()
    assert gifts(coded, "donations_GBR1")[0]["received_amount"] == 0.0
    again = json.loads(cli("poll", "--source", "donations", "--json").stdout)["sources"]["donations"]
    assert again["refunds_queued"] == 0  # applied: not queued again


def _now_event(event_type: str, obj: dict, event_id: str) -> dict:
    import time

    return {**json.loads(samples.stripe_event(event_type, obj, event_id)), "created": int(time.time()) - 60}


def test_deliveries_the_platforms_failed_are_counted_and_replayed_once(coded, receiver, db, cli):
    assert cli("webhooks", "register", "--url", "https://sync.example.org").exit_code == 0
    lost = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    lost.update(id="HEAL1", email="heal@example.org", amount=12)
    coded.givebutter.record_delivery("transaction.succeeded", lost, failed=True)
    arrived = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    arrived.update(id="HEAL2", email="arrived@example.org")
    # failed at first, then delivered on Givebutter's retry: received, so never replayed
    first_try = coded.givebutter.record_delivery("transaction.succeeded", arrived, failed=True)
    give(receiver, arrived, event_id=first_try["payload"]["id"])
    coded.stripe.add_event(_now_event("payment_intent.succeeded", {"id": "pi_x"}, "evt_lost1"), delivered=False)
    coded.stripe.add_event(_now_event("payment_intent.succeeded", {"id": "pi_y"}, "evt_fine"), delivered=True)
    # another system's endpoint on the same Stripe account failed this one: not synctool's (types[])
    coded.stripe.add_event(_now_event("invoice.paid", {"id": "in_z"}, "evt_not_ours"), delivered=False)

    status = json.loads(cli("webhooks", "status", "--json").stdout)
    counts = {r["source"]: (r["failed"], r["not_received"]) for r in status["deliveries"]}
    assert counts["donations"] == (2, 1) and counts["payments"] == (1, 1), status["deliveries"]
    assert counts["mailing"] == (None, None) and status["ok"] is False
    assert "synctool webhooks heal --source donations" in cli("doctor").stdout

    dry = json.loads(cli("webhooks", "heal", "--dry-run", "--json").stdout)
    assert [r["action"] for r in dry["items"] if r["event_id"]].count("would replay") == 2
    healed = json.loads(cli("webhooks", "heal", "--json").stdout)
    assert (healed["replayed"], healed["skipped"]) == (2, 1), healed["items"]
    assert healed["requests"] == 3  # Givebutter: its webhooks, one page of activities; Stripe: one page of events
    run_drain()
    assert gifts(coded, "donations_HEAL1")[0]["received_amount"] == 12.0
    note = db.execute("SELECT note FROM deliveries WHERE event_id = 'evt_lost1'").fetchone()["note"]
    assert note.startswith("replayed by `webhooks heal`")
    again = json.loads(cli("webhooks", "heal", "--json").stdout)
    assert (again["replayed"], again["skipped"]) == (0, 3)  # run twice: nothing new
    assert len(gifts(coded, "donations_HEAL1")) == 1
    assert json.loads(cli("webhooks", "status", "--json").stdout)["not_received"] == 0
