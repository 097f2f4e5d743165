"""End to end: a delivery arrives at the receiver, drain runs, and the CRM fake holds exactly the right
gift or tag, once."""

from __future__ import annotations

import copy
import json

from synctool.fakes import samples
from synctool.platforms.runner import runner
from synctool.queue.worker import drain
from tests.conftest import TEST_SECRETS
from tests.flow_helpers import CUSTOMER, add_order, give, job, pos_event, run_drain
from tests.helpers import runtime


def test_donation_becomes_one_gift_by_webhook_repeat_and_poll(coded, receiver, db, cli):
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    coded.givebutter.add_transaction(txn)
    first = give(receiver, txn)
    summary = run_drain()
    assert summary.succeeded == 1 and summary.crm_requests == 3  # search, create constituent, create gift
    [gift] = coded.crm.gifts.values()
    assert gift["external_id"] == "donations_QiN7blzUhiwXBVBr" and gift["received_amount"] == 10.0
    assert gift["received_date"] == "2024-02-03" and gift["fund_id"] == 2398 and gift["campaign_id"] == 822
    assert gift["payment_type_id"] == 1509
    # sent as the reference's example does, by the field's and the value's names; the CRM resolved both
    sent = next(r["body"] for r in coded.crm.requests if r["method"] == "POST" and r["path"].endswith("/gifts"))
    assert sent["custom_fields"] == [{"name": "Referral Source", "values": [{"name": "A friend"}]}]
    assert [(f["key"], [v["id"] for v in f["values"]]) for f in gift["custom_fields"]] == [("referral_source", [12252])]
    assert "QiN7blzUhiwXBVBr" in gift["note"] and "Keep going" in gift["note"]
    [person] = coded.crm.constituents.values()
    assert (person["first_name"], person["last_name"]) == ("Ada", "Lovelace")
    assert job(db, first["job_id"])["crm_gift_id"] == str(gift["id"])

    second = give(receiver, txn)  # the same transaction in a new delivery
    assert second["status"] == "accepted"
    poll = json.loads(cli("poll", "--lookback", "3650d", "--json").stdout)
    assert poll["sources"]["donations"]["transactions_seen"] == 1 and poll["queued"] == 0  # already has a job
    summary = run_drain()
    assert summary.skipped == 1 and summary.crm_requests == 0
    assert len(coded.crm.gifts) == 1


def test_poll_queues_what_webhooks_missed_and_costs_two_requests_when_nothing_is_new(coded, db, cli):
    for n in range(3):
        txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
        txn.update(id=f"polled{n}", email=f"p{n}@example.org", created_at=f"2099-01-0{n + 1}T10:00:00+00:00")
        coded.givebutter.add_transaction(txn)
    failed = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    failed.update(id="declined", status="failed", created_at="2099-01-05T10:00:00+00:00")
    coded.givebutter.add_transaction(failed)
    result = json.loads(cli("poll", "--source", "donations", "--json").stdout)
    # new transactions, then changed ones (refunds), then the recurring plans (GET /v1/plans: one page)
    assert result["queued"] == 3 and result["requests"] == 3
    run_drain()
    assert sorted(g["external_id"] for g in coded.crm.gifts.values()) == [f"donations_polled{n}" for n in range(3)]
    coded.givebutter.transactions.clear()
    again = json.loads(cli("poll", "--source", "donations", "--json").stdout)
    assert again["queued"] == 0 and again["requests"] == 3


def test_poll_honours_429(coded, cli):
    coded.givebutter.throttle_next = 1
    result = cli("poll", "--source", "donations", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["requests"] == 4  # the 429, its retry, the refund read, the plans


def test_ticket_never_makes_a_second_gift(coded, receiver, db):
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    give(receiver, txn)
    ticket = {
        "id": "81347746A0020",
        "transaction_id": txn["id"],
        "first_name": "Ada",
        "last_name": "Lovelace",
        "email": txn["email"],
        "title": "General Admission",
        "price": 10,
    }
    t = give(receiver, ticket, event="ticket.created")
    run_drain()
    assert len(coded.crm.gifts) == 1
    assert job(db, t["job_id"])["status"] == "skipped" and "covered by transaction" in job(db, t["job_id"])["message"]


def test_lone_ticket_syncs_its_transaction(coded, receiver, db):
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn.update(id="TKTONLY123", email="guest@example.org")
    coded.givebutter.add_transaction(txn)
    t = give(
        receiver, {"id": "T-1", "transaction_id": "TKTONLY123", "email": "guest@example.org", "price": 10}, event="ticket.created"
    )
    run_drain()
    [gift] = coded.crm.gifts.values()
    assert gift["external_id"] == "donations_TKTONLY123" and "lone ticket" in job(db, t["job_id"])["message"]
    give(receiver, txn)  # its transaction.succeeded arrives late
    run_drain()
    assert len(coded.crm.gifts) == 1


def test_campaign_type_selects_the_default(coded, receiver, db):
    give(receiver, {"id": 5150, "code": "GALA26", "type": "event", "title": "Spring Gala"}, event="campaign.created")
    run_drain()
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn.update(id="GALA1", campaign_id=5150)
    give(receiver, txn)
    # a campaign whose webhook never came is fetched from Givebutter once
    coded.givebutter.campaigns[6160] = {"id": 6160, "code": "RUN26", "type": "event", "title": "Fun Run"}
    other = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    other.update(id="RUN1", campaign_id=6160, email="runner@example.org")
    give(receiver, other)
    run_drain()
    assert {(g["external_id"], g["fund_id"], g["campaign_id"]) for g in coded.crm.gifts.values()} == {
        ("donations_GALA1", 2399, 823),
        ("donations_RUN1", 2399, 823),
    }


def test_campaign_override_wins(coded, receiver, cli):
    assert cli("mappings", "overrides", "set", "118722", "--fund-id", "2401").exit_code == 0
    refused = cli("mappings", "overrides", "set", "118722", "--fund-id", "999")
    assert refused.exit_code == 2 and "unknown CRM fund id" in refused.output and "2398 (General)" in refused.output
    give(receiver, copy.deepcopy(samples.GIVEBUTTER_TRANSACTION))
    run_drain()
    [gift] = coded.crm.gifts.values()
    assert (gift["fund_id"], gift["campaign_id"]) == (2401, 822)  # campaign filled in from the default


def test_refund_lowers_its_gift_and_shows_in_the_sync_log(coded, receiver, db, cli):
    give(receiver, copy.deepcopy(samples.GIVEBUTTER_TRANSACTION))
    run_drain()
    [gift] = coded.crm.gifts.values()
    r = give(receiver, {"id": "rf_1", "transaction_id": "QiN7blzUhiwXBVBr", "amount": 4}, event="refund.created")
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "succeeded" and row["crm_gift_id"] == str(gift["id"])
    assert gift["received_amount"] == 6.0 and len(coded.crm.gifts) == 1
    shown = json.loads(cli("syncs", "show", r["job_id"], "--json").stdout)
    assert shown["entity_type"] == "refund" and "$10.00 -> $6.00" in shown["message"]


def test_pos_open_without_payment_skipped_then_completed_synced(coded, receiver, db, cli):
    assert cli("pos", "location-overrides", "set", "FPYCBCHYMXFK1", "--fund-id", "2402").exit_code == 0
    add_order(coded, "ORD1", "OPEN", customer=CUSTOMER)
    first = pos_event(receiver, samples.square_order_event("ORD1", state="OPEN", event_type="order.created"))
    run_drain()
    assert job(db, first["job_id"])["status"] == "skipped"
    assert job(db, first["job_id"])["message"] == "order is OPEN without a payment yet"
    assert coded.crm.gifts == {}

    order = add_order(
        coded,
        "ORD1",
        "COMPLETED",
        customer=CUSTOMER,
        cents=1999,
        tenders=[{"id": "t1", "type": "CARD", "amount_money": {"amount": 1999, "currency": "USD"}}],
    )
    pos_event(receiver, samples.square_order_event("ORD1", state="COMPLETED"))
    run_drain()
    [gift] = coded.crm.gifts.values()
    assert gift["external_id"] == "pos_order_ORD1" and gift["received_amount"] == 19.99
    assert gift["fund_id"] == 2402 and gift["payment_type_id"] == 1509 and gift["received_date"] == order["created_at"][:10]
    [person] = coded.crm.constituents.values()
    assert person["last_name"] == "Hopper"
    # the sync log shows what the order came to (learnt from the order itself, not the webhook)
    listed = json.loads(cli("syncs", "list", "--source", "pos", "--status", "succeeded", "--json").stdout)["items"]
    assert [r["amount"] for r in listed] == ["19.99"]

    # resync --force: the local mark is ignored, the CRM is searched, no second gift
    result = json.loads(cli("pos", "resync", "ORD1", "--force", "--json").stdout)
    assert result["status"] == "succeeded" and result["crm_gift_id"] == str(gift["id"])
    assert len(coded.crm.gifts) == 1
    plain = json.loads(cli("pos", "resync", "ORD1", "--json").stdout)
    assert plain["status"] == "skipped" and "already synced" in plain["message"]


def test_pos_sale_announced_only_by_payment_created(coded, receiver, db, cli):
    cli(
        "settings",
        "pos-default-constituent",
        "--email",
        "walkin@example.org",
        "--first-name",
        "Walk-in",
        "--last-name",
        "Customer",
    )
    add_order(
        coded,
        "POSAPP1",
        "COMPLETED",
        cents=500,
        tenders=[{"id": "t9", "type": "CASH", "amount_money": {"amount": 500, "currency": "USD"}}],
    )
    r = pos_event(receiver, samples.square_payment_event("PAY9", "POSAPP1", cents=500))
    run_drain()
    [gift] = coded.crm.gifts.values()
    assert gift["external_id"] == "pos_order_POSAPP1" and gift["received_amount"] == 5.0 and gift["payment_type_id"] == 1507
    assert "POS default constituent" in job(db, r["job_id"])["message"]
    [person] = coded.crm.constituents.values()
    assert person["last_name"] == "Customer"


def test_pos_without_customer_or_default_fails_clearly(coded, receiver, db):
    add_order(coded, "ANON1", "COMPLETED", tenders=[{"id": "t", "type": "CASH"}])
    r = pos_event(receiver, samples.square_order_event("ANON1"))
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "failed" and "pos-default-constituent" in row["last_error"]


def test_crm_outage_for_the_whole_drain_then_recovery(coded, receiver, db):
    coded.crm.faults.append({"mode": "500", "count": 10_000, "method": None, "path": None})
    ids = []
    for n in range(3):
        txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
        txn.update(id=f"OUT{n}", email=f"out{n}@example.org")
        ids.append(give(receiver, txn)["job_id"])
    summary = drain(runner(runtime()), max_seconds=0.5)
    assert summary.succeeded == 0 and coded.crm.gifts == {}
    assert {job(db, i)["status"] for i in ids} <= {"queued", "failed"}
    coded.crm.faults.clear()
    for i in ids:  # whatever ran out of attempts goes back, as an operator would do
        if job(db, i)["status"] == "failed":
            db.execute("UPDATE jobs SET status = 'queued', max_attempts = attempts + 3 WHERE id = ?", (i,))
    run_drain()
    assert {job(db, i)["status"] for i in ids} == {"succeeded"}
    assert sorted(g["external_id"] for g in coded.crm.gifts.values()) == ["donations_OUT0", "donations_OUT1", "donations_OUT2"]
    assert len(coded.crm.constituents) == 3


def post_mailing(receiver, body: bytes):
    r = receiver.post(
        f"/webhooks/mailing?secret={TEST_SECRETS['MAILING_WEBHOOK_SECRET']}",
        content=body,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_unsubscribe_applies_tag_rules_once(coded, receiver, db, cli):
    assert cli("mailing", "mappings", "set", "b7e21c0d94", "--label", "Newsletter").exit_code == 0
    assert cli("mailing", "tag-rules", "set", "b7e21c0d94", "unsubscribe", "--add", "12222", "--remove", "12221").exit_code == 0
    assert cli("mailing", "tag-rules", "set", "*", "cleaned", "--add", "12223").exit_code == 0
    assert cli("mailing", "tag-rules", "set", "*", "cleaned", "--add", "55555").exit_code == 2
    # Jane is in the CRM with the newsletter tag; a bounced address belongs to someone else
    lgl = coded.client("crm", headers={"Authorization": "Bearer " + coded.env()["CRM_API_KEY"]})
    c = lgl.post(
        "/constituents",
        json={"first_name": "Jane", "last_name": "Doe", "email_addresses": [{"address": "Jane.Doe@example.org"}]},
    ).json()
    coded.crm.keywords[c["id"]] = {12221}
    b = lgl.post(
        "/constituents", json={"last_name": "Bounce", "email_addresses": [{"address": "bounced.user@example.net"}]}
    ).json()
    r = post_mailing(receiver, samples.mailchimp_unsubscribe())
    post_mailing(receiver, samples.MAILCHIMP_CLEANED_WIRE)
    run_drain()
    assert coded.crm.keywords[c["id"]] == {12222}
    assert coded.crm.keywords[b["id"]] == {12223}
    assert job(db, r["job_id"])["status"] == "succeeded"
    # the same unsubscribe fired again later: harmless
    post_mailing(receiver, samples.mailchimp_unsubscribe(fired_at="2024-05-02 14:09:00"))
    run_drain()
    assert coded.crm.keywords[c["id"]] == {12222}


def test_unsubscribe_without_constituent_or_while_disabled(coded, receiver, db, cli):
    cli("mailing", "mappings", "set", "b7e21c0d94")
    cli("mailing", "tag-rules", "set", "*", "unsubscribe", "--add", "12222")
    nobody = post_mailing(receiver, samples.mailchimp_unsubscribe(email="nobody@example.org"))
    run_drain()
    row = job(db, nobody["job_id"])
    assert row["status"] == "skipped" and "no CRM constituent" in row["message"]
    assert cli("settings", "mailing-sync-enabled", "off").exit_code == 0
    before = coded.crm.stats()["requests"]
    off = post_mailing(receiver, samples.mailchimp_unsubscribe(email="x@example.org"))
    run_drain()
    assert job(db, off["job_id"])["message"].startswith("mailing sync is disabled")
    assert coded.crm.stats()["requests"] == before
    unmapped = post_mailing(receiver, samples.mailchimp_unsubscribe(list_id="zzz"))
    assert cli("settings", "mailing-sync-enabled", "on").exit_code == 0
    run_drain()
    assert "not mapped" in job(db, unmapped["job_id"])["message"]
