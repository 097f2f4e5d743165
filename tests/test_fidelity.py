"""What a live Givebutter, Square, Stripe and LGL account sends and answers, through the receiver and drain:
tribute dedications, fund designations, local gift dates, gift custom fields, refunds, delayed payments,
deleted constituents, and portal imports."""

from __future__ import annotations

import copy
import json

import pytest

from synctool.fakes import samples
from tests.flow_helpers import CUSTOMER, add_order, give, job, pos_event, run_drain


def transaction(**changes) -> dict:
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn.update(changes)
    return txn


def only_gift(world) -> dict:
    [gift] = world.crm.gifts.values()
    return gift


def test_dedication_becomes_the_gifts_tribute(coded, receiver):
    give(receiver, transaction(dedication=samples.GIVEBUTTER_DEDICATION))
    run_drain()
    gift = only_gift(coded)
    assert gift["tribute_name"] == "Memorial - General" and gift["tributee_name"] == "Rose Parks"
    assert gift["tribute_dedication"] == "In memory of Rose Parks"
    assert gift["tribute_recipient_name"] == "Ray Parks" and gift["tribute_recipient_email"] == "ray.parks@example.org"
    assert "in memory of Rose Parks (notify Ray Parks <ray.parks@example.org>)" in gift["note"]
    assert "{" not in gift["note"]


def test_honor_dedication_and_none(coded, receiver):
    give(receiver, transaction(id="HON1", dedication={"type": "in_honor_of", "name": "Ms. Frizzle", "recipient": None}))
    give(receiver, transaction(id="NONE1", dedication=None))
    run_drain()
    by_ext = {g["external_id"]: g for g in coded.crm.gifts.values()}
    assert by_ext["donations_HON1"]["tribute_name"] == "Honorary - General"
    assert "in honor of Ms. Frizzle" in by_ext["donations_HON1"]["note"]
    assert "tribute_name" not in by_ext["donations_NONE1"] and "dedication" not in by_ext["donations_NONE1"]["note"]


def test_fund_designation_wins_over_the_campaign_mapping(coded, receiver, cli):
    assert cli("mappings", "overrides", "set", "118722", "--fund-id", "2399", "--campaign-id", "823").exit_code == 0
    assert cli("mappings", "funds", "set", "BUILDING", "--fund-id", "2401").exit_code == 0
    assert cli("mappings", "funds", "set", "NOPE", "--fund-id", "99999").exit_code == 2
    assert json.loads(cli("mappings", "funds", "--json").stdout)[0]["fund_id"] == 2401
    give(receiver, transaction(id="FUND1", fund_id="fnd_8Kd2", fund_code="BUILDING"))
    give(receiver, transaction(id="CAMP1"))
    run_drain()
    by_ext = {g["external_id"]: g for g in coded.crm.gifts.values()}
    designated, plain = by_ext["donations_FUND1"], by_ext["donations_CAMP1"]
    assert designated["fund_id"] == 2401 and designated["campaign_id"] == 823  # the campaign still codes the campaign
    assert plain["fund_id"] == 2399 and "fund BUILDING" in designated["note"]


def test_new_years_eve_gift_is_dated_on_the_donors_calendar(coded, receiver, isolated, cli):
    # 23:30 on 31 December in California is 07:30 UTC on 1 January
    give(receiver, transaction(id="NYE1", transacted_at="2026-01-01T07:30:00+00:00", timezone="America/Los_Angeles"))
    give(receiver, transaction(id="NYE2", transacted_at="2026-01-01T07:30:00+00:00"))  # no zone: UTC unless configured
    run_drain()
    by_ext = {g["external_id"]: g for g in coded.crm.gifts.values()}
    assert by_ext["donations_NYE1"]["received_date"] == "2025-12-31"
    assert by_ext["donations_NYE2"]["received_date"] == "2026-01-01"
    (isolated / "config.yaml").write_text("timezone: America/Los_Angeles\n")
    give(receiver, transaction(id="NYE3", transacted_at="2026-01-01T07:30:00+00:00"))
    run_drain()
    assert {g["external_id"]: g for g in coded.crm.gifts.values()}["donations_NYE3"]["received_date"] == "2025-12-31"
    (isolated / "config.yaml").write_text("timezone: Mars/Olympus_Mons\n")
    bad = cli("syncs", "list")
    assert bad.exit_code == 2 and "timezone" in bad.output and "Mars/Olympus_Mons" in bad.output


def test_pos_order_is_dated_in_its_locations_time_zone(coded, receiver, db):
    order = add_order(coded, "NYEPOS", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}])
    order["created_at"] = "2026-01-01T07:30:00Z"  # the Front Desk is in Los Angeles: 23:30 on 31 December
    pos_event(receiver, samples.square_order_event("NYEPOS"))
    run_drain()
    assert only_gift(coded)["received_date"] == "2025-12-31"
    assert "America/Los_Angeles" in db.execute("SELECT value FROM caches WHERE kind = 'pos:locations'").fetchone()[0]


def test_custom_field_value_the_crm_does_not_offer_fails_the_job_clearly(coded, receiver, db, cli):
    assert "Referral Source" in cli("crm", "gift-fields").stdout
    refused = cli("mappings", "custom-fields", "set", "78", "--crm-field", "no_such_field")
    assert refused.exit_code == 2 and "referral_source" in refused.output
    fields = [{"id": 1, "field_id": 77, "title": "How did you hear about us?", "type": "text", "value": "A billboard"}]
    r = give(receiver, transaction(id="CF1", custom_fields=fields))
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "failed" and "'A billboard'" in row["last_error"] and "Social media" in row["last_error"]
    assert coded.crm.gifts == {}
    fields[0]["value"] = "social MEDIA"  # the CRM's own spelling is sent
    give(receiver, transaction(id="CF2", custom_fields=fields))
    run_drain()
    assert [v["name"] for v in only_gift(coded)["custom_fields"][0]["values"]] == ["Social media"]


def test_ticket_gift_carries_its_deductible_amount(coded, receiver):
    give(receiver, transaction(id="TIX1", amount=150, fair_market_value_amount=60))
    give(receiver, transaction(id="TIX2", amount=80, tax_deductible_amount="35.50"))
    give(receiver, transaction(id="PLAIN", amount=25, tax_deductible_amount=25))
    run_drain()
    by_ext = {g["external_id"]: g for g in coded.crm.gifts.values()}
    assert (by_ext["donations_TIX1"]["received_amount"], by_ext["donations_TIX1"]["deductible_amount"]) == (150.0, 90.0)
    assert (
        by_ext["donations_TIX2"]["deductible_amount"] == 35.5 and "deductible 35.50 of 80.00" in by_ext["donations_TIX2"]["note"]
    )
    assert by_ext["donations_PLAIN"]["deductible_amount"] == 25.0 and "deductible" not in by_ext["donations_PLAIN"]["note"]


def test_recurring_charge_is_coded_as_recurring_and_plan_alerts_reach_the_summary(coded, receiver, cli, db):
    assert (
        cli("mappings", "types", "set", "donations:recurring", "--fund-id", "2398", "--gift-category-id", "5940").exit_code == 0
    )
    parts = [{**samples.GIVEBUTTER_TRANSACTION["transactions"][0], "plan_id": "pln_77"}]
    give(receiver, transaction(id="MONTH3", transactions=parts))
    give(receiver, transaction(id="ONCE"))
    run_drain()
    by_ext = {g["external_id"]: g for g in coded.crm.gifts.values()}
    monthly = by_ext["donations_MONTH3"]
    assert monthly["gift_category_name"] == "Recurring" and "recurring plan pln_77, charge MONTH3" in monthly["note"]
    assert monthly["campaign_id"] == 822  # the campaign's default fills what the recurring default leaves
    assert by_ext["donations_ONCE"].get("gift_category_id") in (None, 0) and "recurring" not in by_ext["donations_ONCE"]["note"]
    plan = {
        "id": "pln_77",
        "first_name": "Ada",
        "last_name": "Lovelace",
        "email": "ada@example.org",
        "amount": 10,
        "frequency": "monthly",
    }
    r = give(receiver, plan, event="plan.canceled")
    give(receiver, {**plan, "id": "pln_78"}, event="plan.failed")
    requests = len(coded.crm.requests)
    run_drain()
    assert job(db, r["job_id"])["status"] == "succeeded" and len(coded.crm.requests) == requests  # no CRM write
    mail = cli("alerts", "summary", "--dry-run").stdout
    assert "recurring plan pln_77 canceled: Ada Lovelace <ada@example.org> (10.00 monthly)" in mail
    assert "recurring plan pln_78 failed to charge" in mail


def test_fees_go_to_the_note_and_a_mapped_gift_field(coded, receiver, cli):
    assert cli("crm", "refresh").exit_code == 0
    assert cli("mappings", "custom-fields", "set", "fee_covered", "--crm-field", "fee_covered").exit_code == 0
    give(receiver, transaction(id="FEE1", amount=10, fee=0.61, fee_covered=0.61))
    give(receiver, transaction(id="FEE2", amount=10, fee=0.61, fee_covered=0.61))
    run_drain()
    by_ext = {g["external_id"]: g for g in coded.crm.gifts.values()}
    gift = by_ext["donations_FEE1"]
    assert gift["received_amount"] == 10.0 and "donor covered fee 0.61; platform fee 0.61" in gift["note"]
    [field] = [f for f in gift["custom_fields"] if f["key"] == "fee_covered"]
    assert [v["name"] for v in field["values"]] == ["0.61"]
    # the value was added to the CRM's field once, then reused from the cache
    added = [r for r in coded.crm.requests if r["method"] == "POST" and r["path"].endswith("/keywords")]
    assert len(added) == 1 and [v["name"] for v in by_ext["donations_FEE2"]["custom_fields"][-1]["values"]] == ["0.61"]


@pytest.mark.parametrize("gone_status", [404, 422])
def test_a_constituent_deleted_in_the_crm_is_matched_again_once(coded, receiver, db, gone_status):
    give(receiver, transaction(id="DEL1"))
    run_drain()
    first = only_gift(coded)["constituent_id"]
    del coded.crm.constituents[first]
    coded.crm.gone_status = gone_status  # LGL documents no 404: a 422 naming the constituent means the same
    r = give(receiver, transaction(id="DEL2"))
    run_drain()
    row = job(db, r["job_id"])
    assert row["status"] == "succeeded"
    again = {g["external_id"]: g for g in coded.crm.gifts.values()}["donations_DEL2"]["constituent_id"]
    assert again != first and again in coded.crm.constituents
    assert db.execute("SELECT count(*) FROM crm_constituents WHERE id = ?", (first,)).fetchone()[0] == 0


def test_other_422s_are_not_taken_for_a_deleted_constituent():
    from synctool.crm.constituents import is_gone
    from synctool.errors import RemoteError

    assert is_gone(RemoteError(422, "CRM answered 422: Validation Failed: Constituent not found"))
    assert is_gone(RemoteError(400, "CRM answered 400: constituent does not exist"))
    assert not is_gone(RemoteError(422, "CRM answered 422: Validation Failed: External Gift ID already exists"))
    assert not is_gone(RemoteError(422, "CRM answered 422: received_amount can't be blank"))
    assert not is_gone(RemoteError(401, "CRM answered 401: invalid_token"))


@pytest.mark.off_contract  # the fake serves an order Square would never send
def test_a_payload_that_does_not_fit_fails_its_job_naming_the_field(coded, receiver, db):
    bad = give(receiver, transaction(id="BAD1", transactions="not a list"))  # the refunded parts: strict
    no_amount = transaction(id="BAD2")
    del no_amount["amount"]
    missing = give(receiver, no_amount)
    order = add_order(coded, "BADPOS", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}])
    order["total_money"] = {"amount": "twelve", "currency": "USD"}
    pos = pos_event(receiver, samples.square_order_event("BADPOS"))
    run_drain()
    errors = {k: job(db, r["job_id"]) for k, r in (("bad", bad), ("missing", missing), ("pos", pos))}
    assert all(row["status"] == "failed" for row in errors.values())
    assert "the Givebutter transaction does not fit: transactions: expected a list" in errors["bad"]["last_error"]
    assert "amount: is required" in errors["missing"]["last_error"]
    assert "Square order BADPOS does not fit: total_money.amount" in errors["pos"]["last_error"]
    assert coded.crm.gifts == {} and all("Traceback" not in (r["last_error"] or "") for r in errors.values())
