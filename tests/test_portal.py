"""The member portal: records, Stripe payments and the five CRM handlers, through the receiver and drain."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from synctool import store
from synctool.fakes import samples
from synctool.platforms.runner import runner
from synctool.platforms.stripe.webhook import sign
from synctool.queue import jobs
from synctool.queue.worker import drain
from synctool.web.receiver import create_app
from tests import helpers
from tests.conftest import TEST_SECRETS
from tests.flow_helpers import run_drain as run
from tests.helpers import runtime


@pytest.fixture
def portal(world, cli, env):
    env["CRM_GROUP_ID_SCHOLARSHIP_FULL"] = "701"
    env["CRM_GROUP_ID_SCHOLARSHIP_PARTIAL"] = "702"
    assert cli("crm", "refresh").exit_code == 0
    for args in (
        ["funds", "set", "membership", "--fund-id", "2400", "--campaign-name", "Membership Drive"],
        ["funds", "set", "language_classes", "--fund-id", "2401"],
        ["funds", "set", "events", "--fund-id", "2399"],
        ["funds", "set", "donations", "--fund-id", "2398"],
        ["gateways", "set", "stripe", "--payment-type-id", "1509"],
        ["levels", "set", "*", "--membership-level-id", "41"],
        ["levels", "set", "prod-family", "--membership-level-id", "42"],
    ):
        result = cli("portal", "mappings", *args)
        assert result.exit_code == 0, result.output
    with TestClient(create_app(runtime())) as client:
        client.world = world
        yield client


def push(client, kind: str, data: dict, push_id: str | None = None):
    body = json.dumps(
        {
            "id": push_id or f"{kind}-{data['id']}-{json.dumps(data, sort_keys=True).__hash__()}",
            "type": f"{kind}.upsert",
            "data": data,
        }
    ).encode()
    r = client.post(
        "/webhooks/portal", content=body, headers={"Synctool-Signature": sign(body, TEST_SECRETS["PORTAL_WEBHOOK_SECRET"])}
    )
    assert r.status_code == 200, r.text
    return r.json()


def stripe(client, event_type: str, obj: dict, event_id: str | None = None):
    body = samples.stripe_event(event_type, obj, event_id)
    r = client.post(
        "/webhooks/payments", content=body, headers={"Stripe-Signature": sign(body, TEST_SECRETS["PAYMENTS_WEBHOOK_SECRET"])}
    )
    assert r.status_code == 200, r.text
    return r.json()


def portal_db():

    return store.connect(helpers.CURRENT["env"]["SYNCTOOL_DB"])


def checkout(client, payment_id: str, user_id: str, amount: int, event_id: str | None = None, **meta):
    return stripe(client, "checkout.session.completed", samples.stripe_session(payment_id, user_id, amount, **meta), event_id)


def seed_user(client, user_id="u1", email="pat@example.org", **extra):
    push(
        client,
        "user",
        {
            "id": user_id,
            "email": email,
            "first_name": "Pat",
            "last_name": "Member",
            "phone": "+15105550100",
            "billing_address_1": "1 Main St",
            "billing_city": "Oakland",
            "billing_state": "CA",
            "billing_postcode": "94607",
            "billing_country": "US",
            **extra,
        },
    )


def test_cart_becomes_one_gift_per_category_group(portal, db):
    seed_user(portal)
    for pid, cat in (
        ("prod-family", "membership"),
        ("prod-addon", "family_addon"),
        ("prod-class", "class"),
        ("prod-gift", "donation"),
    ):
        push(portal, "product", {"id": pid, "category": cat, "name": pid})
    push(
        portal,
        "payment",
        {
            "id": "pay1",
            "user_id": "u1",
            "type": "cart",
            "status": "pending",
            "gateway": "stripe",
            "amount_cents": 23500,
            "items": [
                {"id": "i1", "product_id": "prod-family", "amount_cents": 10000},
                {"id": "i2", "product_id": "prod-addon", "amount_cents": 2500},
                {"id": "i3", "product_id": "prod-class", "amount_cents": 8000},
                {"id": "i4", "product_id": "prod-gift", "amount_cents": 3000},
            ],
        },
    )
    checkout(portal, "pay1", "u1", 23500)
    run()
    gifts = {g["external_id"]: g for g in portal.world.crm.gifts.values()}
    assert set(gifts) == {"pay1-membership", "pay1-language_classes", "pay1-donations"}
    assert (gifts["pay1-membership"]["fund_id"], gifts["pay1-membership"]["received_amount"]) == (2400, 125.0)
    assert gifts["pay1-membership"]["campaign_name"] == "Membership Drive"
    assert (gifts["pay1-language_classes"]["fund_id"], gifts["pay1-language_classes"]["received_amount"]) == (2401, 80.0)
    assert (gifts["pay1-donations"]["fund_id"], gifts["pay1-donations"]["received_amount"]) == (2398, 30.0)
    assert {g["payment_type_id"] for g in gifts.values()} == {1509}
    from synctool.platforms.portal import records as portal_records

    record = portal_records.get(db, "payment", "pay1")
    assert record["status"] == "succeeded" and record["payment_intent_id"] == "pi_pay1"
    assert record["crm_gift_id"] == str(gifts["pay1-membership"]["id"]) and len(record["crm_gift_ids"]) == 3
    [logged] = db.execute("SELECT amount FROM jobs WHERE entity_type = 'payment' AND status = 'succeeded'").fetchall()
    assert logged["amount"] == "235.00"  # the sync log's amount column: the whole payment


@pytest.mark.parametrize(
    "ptype,category,fund",
    [
        ("membership", None, 2400),
        ("donation", None, 2398),
        ("enrollment", "class", 2401),
        ("enrollment", "event", 2399),
        ("enrollment", "other", 2400),
    ],
)
def test_routing_rows(portal, ptype, category, fund):
    seed_user(portal)
    data = {"id": "pay2", "user_id": "u1", "type": ptype, "status": "pending", "gateway": "stripe", "amount_cents": 4000}
    if category:
        push(portal, "product", {"id": "prod-x", "category": category})
        push(portal, "enrollment", {"id": "enr1", "user_id": "u1", "product_id": "prod-x", "status": "pending"})
        data["enrollment_id"] = "enr1"
    push(portal, "payment", data)
    checkout(portal, "pay2", "u1", 4000)
    run()
    rows = [tuple(r) for r in portal_db().execute("SELECT target, entity_type, entity_id, status, message, last_error FROM jobs")]
    assert len(portal.world.crm.gifts) == 1, rows
    [gift] = portal.world.crm.gifts.values()
    assert gift["external_id"] == "pay2" and gift["fund_id"] == fund and gift["received_amount"] == 40.0


def test_membership_checkout_ends_the_old_membership_and_costs_few_requests(portal, db):
    seed_user(portal)
    # the member is made first (search + create): a user job sharing a drain with the payment's may lose the person's
    # lock to it, then sync the contact details on the constituent the payment made, 5 requests more
    run()
    push(
        portal,
        "membership",
        {
            "id": "m1",
            "user_id": "u1",
            "product_id": "prod-family",
            "status": "pending",
            "start_date": "2026-01-01",
            "renewal_date": "2026-12-31",
        },
    )
    push(
        portal,
        "payment",
        {
            "id": "pay3",
            "user_id": "u1",
            "type": "membership",
            "status": "pending",
            "gateway": "stripe",
            "amount_cents": 6000,
            "membership_id": "m1",
        },
    )
    before = portal.world.crm.stats()["requests"]
    checkout(portal, "pay3", "u1", 6000, portal_membership_id="m1")
    run()
    spent = portal.world.crm.stats()["requests"] - before
    crm = portal.world.crm
    [first] = crm.memberships.values()
    assert first["membership_level_id"] == 42 and first["date_start"] == "2026-01-01" and "is_current" not in first
    # a known member: the gift, list + create membership
    assert spent == 3, [(r["method"], r["path"], r["status"]) for r in crm.requests[-spent:]]
    # a second membership ends the first the day before it starts
    push(
        portal,
        "membership",
        {
            "id": "m2",
            "user_id": "u1",
            "level": "Individual",
            "status": "active",
            "start_date": "2026-07-01",
            "renewal_date": "2027-06-30",
        },
    )
    run()
    ms = sorted(crm.memberships.values(), key=lambda m: m["id"])
    assert ms[0]["finish_date"] == "2026-06-30" and ms[1]["date_start"] == "2026-07-01" and ms[1]["membership_level_id"] == 41


@pytest.mark.parametrize(
    "synced_at",
    # the old membership crosses a year's end; the sync runs on its last evening (already the new year in UTC),
    # just after midnight, and long after both memberships began: the finish date is the same each time
    ["2026-12-31T19:30:00-05:00", "2027-01-01T00:30:00-05:00", "2028-02-29T12:00:00+00:00"],
)
def test_a_new_membership_ends_the_old_one_the_day_before_it_starts_whatever_the_day(portal, db, synced_at):
    import time_machine

    with time_machine.travel(synced_at, tick=True):
        seed_user(portal)
        run()
        memberships = [
            {"id": "over", "start_date": "2026-01-01", "renewal_date": "2026-06-30"},  # over before the new one: kept
            {"id": "old", "start_date": "2026-07-01", "renewal_date": "2027-06-30"},
            {"id": "same-day", "start_date": "2027-01-01", "renewal_date": "2027-03-31"},  # never before its start
            {"id": "new", "start_date": "2027-01-01", "renewal_date": "2027-12-31"},
        ]
        for m in memberships:
            push(portal, "membership", {**m, "user_id": "u1", "level": "Individual", "status": "active"})
            run()
    finish = {m["date_start"] + ".." + str(m["finish_date"]) for m in portal.world.crm.memberships.values()}
    assert finish == {"2026-01-01..2026-06-30", "2026-07-01..2026-12-31", "2027-01-01..2027-01-01", "2027-01-01..2027-12-31"}


def test_full_scholarship_membership_lands_in_the_group_and_zero_dollar_payment_still_syncs(portal, db):
    seed_user(portal)
    push(
        portal,
        "membership",
        {
            "id": "m9",
            "user_id": "u1",
            "status": "pending",
            "subsidy_tier": "full",
            "start_date": "2026-02-01",
            "renewal_date": "2027-01-31",
        },
    )
    push(
        portal,
        "payment",
        {
            "id": "pay9",
            "user_id": "u1",
            "type": "membership",
            "status": "succeeded",
            "gateway": "scholarship",
            "amount_cents": 0,
            "membership_id": "m9",
            "scholarship": True,
        },
    )
    push(
        portal,
        "membership",
        {
            "id": "m9",
            "user_id": "u1",
            "status": "active",
            "subsidy_tier": "full",
            "start_date": "2026-02-01",
            "renewal_date": "2027-01-31",
        },
    )
    run()
    crm = portal.world.crm
    [gift] = crm.gifts.values()
    assert gift["received_amount"] == 0.0 and gift["external_id"] == "pay9"
    assert [g["group_id"] for g in crm.group_memberships.values()] == [701]
    assert len(crm.memberships) == 1


def test_user_whose_crm_email_changed_is_rematched(portal, db, cli):
    seed_user(portal)
    run()
    from synctool.platforms.portal import records as portal_records

    first = portal_records.get(db, "user", "u1")["crm_constituent_id"]
    crm = portal.world.crm
    row = next(r for r in crm.contacts["email_addresses"].values() if r["item_id"] == int(first))
    row["address"] = "someone.else@example.org"  # changed in the CRM by staff
    result = json.loads(cli("portal", "sync", "user", "u1", "--json").stdout)
    assert result["status"] == "succeeded"
    second = portal_records.get(db, "user", "u1")["crm_constituent_id"]
    assert second != first and len(crm.constituents) == 2
    # linked and still matching: profile and contacts are updated in place (delete-then-add)
    push(
        portal,
        "user",
        {"id": "u1", "email": "pat@example.org", "first_name": "Patricia", "last_name": "Member", "phone": "+15105550199"},
    )
    run()
    assert crm.constituents[int(second)]["first_name"] == "Patricia"
    assert [p["number"] for p in crm.contacts["phone_numbers"].values() if p["item_id"] == int(second)] == ["+15105550199"]


def test_replaying_every_stripe_event_twice_changes_nothing(portal, db):
    seed_user(portal)
    push(
        portal,
        "payment",
        {"id": "pay5", "user_id": "u1", "type": "donation", "status": "pending", "gateway": "stripe", "amount_cents": 2500},
    )
    meta = {"portal_payment_id": "pay5", "portal_user_id": "u1"}
    bodies = [
        samples.stripe_event(
            "checkout.session.completed",
            {
                "id": "cs_5",
                "object": "checkout.session",
                "amount_total": 2500,
                "payment_status": "paid",
                "status": "complete",
                "payment_intent": "pi_pay5",
                "metadata": meta,
            },
            "evt_a",
        ),
        samples.stripe_event(
            "payment_intent.succeeded",
            {
                "id": "pi_pay5",
                "object": "payment_intent",
                "status": "succeeded",
                "amount": 2500,
                "amount_received": 2500,
                "metadata": meta,
            },
            "evt_b",
        ),
    ]

    def send(body: bytes) -> dict:
        r = portal.post(
            "/webhooks/payments", content=body, headers={"Stripe-Signature": sign(body, TEST_SECRETS["PAYMENTS_WEBHOOK_SECRET"])}
        )
        assert r.status_code == 200
        return r.json()

    assert [send(b)["status"] for b in bodies] == ["accepted", "accepted"]
    run()
    crm = portal.world.crm
    snapshot = (len(crm.gifts), len(crm.constituents), db.execute("SELECT count(*) FROM jobs").fetchone()[0])
    assert snapshot[0] == 1
    assert [send(b) for b in bodies] == [{"status": "duplicate"}, {"status": "duplicate"}]
    run()
    assert (len(crm.gifts), len(crm.constituents), db.execute("SELECT count(*) FROM jobs").fetchone()[0]) == snapshot
    checkout(portal, "pay5", "u1", 2500, event_id="evt_c")  # a genuinely new event for the same payment
    run()
    assert (len(crm.gifts), len(crm.constituents)) == snapshot[:2]


def test_unpaid_checkout_changes_nothing_and_flags_gate_jobs(portal, db, cli):
    seed_user(portal)
    push(portal, "payment", {"id": "pay6", "user_id": "u1", "type": "donation", "status": "pending", "amount_cents": 100})
    r = stripe(
        portal,
        "checkout.session.completed",
        {
            "id": "cs_6",
            "payment_status": "unpaid",
            "status": "complete",
            "metadata": {"portal_payment_id": "pay6", "portal_user_id": "u1"},
        },
    )
    run()
    from synctool.platforms.portal import records as portal_records

    assert portal_records.get(db, "payment", "pay6")["status"] == "pending"
    assert "not paid" in jobs.get(db, r["job_id"])["message"]
    assert cli("portal", "flags", "--no-sync-on-payment").exit_code == 0
    checkout(portal, "pay6", "u1", 100)
    run()
    assert portal.world.crm.gifts == {}
    assert cli("portal", "flags", "--sync-on-payment").exit_code == 0


def test_payment_rules_skip_and_force(portal, db, cli):
    seed_user(portal)
    push(portal, "payment", {"id": "pay7", "user_id": "u1", "type": "donation", "status": "failed", "amount_cents": 100})
    run()
    result = json.loads(cli("portal", "sync", "payment", "pay7", "--json").stdout)
    assert result["status"] == "skipped" and "only succeeded" in result["message"]
    push(portal, "payment", {"id": "pay7", "user_id": "u1", "type": "donation", "status": "succeeded", "amount_cents": 100})
    run()
    assert len(portal.world.crm.gifts) == 1
    skipped = json.loads(cli("portal", "sync", "payment", "pay7", "--json").stdout)
    assert skipped["status"] == "skipped" and "already CRM gift" in skipped["message"]
    forced = json.loads(cli("portal", "sync", "payment", "pay7", "--force", "--json").stdout)
    assert forced["status"] == "succeeded" and len(portal.world.crm.gifts) == 1


def test_enrollment_is_a_success_marker_only(portal, db):
    seed_user(portal)
    run()
    before = portal.world.crm.stats()["requests"]
    push(portal, "enrollment", {"id": "enr5", "user_id": "u1", "status": "paid"})
    run()
    from synctool.platforms.portal import records as portal_records

    assert portal_records.get(db, "enrollment", "enr5")["crm_synced_at"]
    assert portal.world.crm.stats()["requests"] == before


def test_relationships(portal, db, cli):
    seed_user(portal)
    seed_user(portal, "u2", "kid@example.org")
    push(portal, "family_link", {"id": "f1", "primary_user_id": "u1", "member_user_id": "u2"})
    run()
    crm = portal.world.crm
    [rel] = crm.relationships.values()
    assert rel["name"] == "Family" and "relationship_type_id" not in rel and rel["share_address"] == 1
    assert cli("portal", "mappings", "relationship-types", "set", "default", "--id", "9").exit_code == 0
    assert cli("portal", "mappings", "relationship-types", "set", "default", "--id", "77").exit_code == 2
    push(portal, "family_link", {"id": "f2", "primary_user_id": "u2", "member_user_id": "u1"})
    push(portal, "family_link", {"id": "f3", "primary_user_id": "u1", "member_user_id": "u2", "crm_relationship_type_id": "3"})
    run()
    types = sorted(r.get("relationship_type_id") or 0 for r in crm.relationships.values())
    assert types == [0, 3, 9]
    result = json.loads(cli("portal", "sync", "relationship", "f1", "--json").stdout)
    assert result["status"] == "skipped" and len(crm.relationships) == 3


def test_import_show_links(portal, db, cli, tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"type": "user", "data": {"id": "u7", "email": "seven@example.org", "last_name": "Seven"}}),
                json.dumps({"type": "user", "data": {"id": "u8", "email": "no-at-sign"}}),
                "{not json",
                json.dumps({"type": "payment", "data": {"id": "p7", "user_id": "u7", "type": "cart", "amount_cents": -5}}),
                json.dumps({"type": "widget", "data": {"id": "w"}}),
                json.dumps(
                    {"type": "payment.upsert", "data": {"id": "p8", "user_id": "u7", "type": "donation", "amount_cents": 500}}
                ),
            ]
        )
        + "\n"
    )
    result = cli("portal", "import", str(path), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["loaded"] == {"user": 1, "payment": 1}
    assert [e["line"] for e in report["errors"]] == [2, 3, 4, 5]
    assert "email" in report["errors"][0]["error"] and "amount_cents" in report["errors"][2]["error"]
    shown = json.loads(cli("portal", "show", "user", "u7").stdout)
    assert shown["email"] == "seven@example.org" and shown["crm_constituent_id"] is None
    assert cli("portal", "show", "user", "nope").exit_code == 3
    json.loads(cli("portal", "sync", "user", "u7", "--json").stdout)
    links = json.loads(cli("portal", "links", "--entity", "user", "--json").stdout)
    assert links[0]["id"] == "u7" and links[0]["crm_constituent_id"]


def test_scenarios_refused_in_production(portal, db, cli):
    refused = cli("portal", "scenarios", "create", "smoke")
    assert refused.exit_code == 4 and "production" in refused.output
    cli("crm", "environment", "sandbox")
    monkey_url = portal.world.env()["CRM_API_BASE_URL"]
    cli("crm", "config", "--base-url", monkey_url)
    created = json.loads(cli("portal", "scenarios", "create", "smoke").stdout)
    assert len(created["records"]) == 8
    assert json.loads(cli("portal", "scenarios", "delete", "smoke").stdout)["removed"] == 8


def test_cms_and_messaging_jobs_are_left_for_their_processors(db, cli):
    with store.atomic(db):
        a = jobs.enqueue(db, source="portal", target="cms", entity_type="page", entity_id="1")
        b = jobs.enqueue(db, source="portal", target="messaging", entity_type="email", entity_id="2")
    drain(runner(runtime()), max_seconds=2)
    listed = json.loads(cli("jobs", "list", "--status", "pending", "--json").stdout)
    assert {r["id"] for r in listed} == {a, b} and {r["target"] for r in listed} == {"cms", "messaging"}


def test_delayed_payment_settles_later_or_fails(portal, db):
    from synctool.platforms.portal import records as portal_records

    seed_user(portal)
    push(portal, "payment", {"id": "ach1", "user_id": "u1", "type": "donation", "status": "pending", "amount_cents": 5000})
    push(portal, "payment", {"id": "ach2", "user_id": "u1", "type": "donation", "status": "pending", "amount_cents": 7000})
    for pid, cents in (("ach1", 5000), ("ach2", 7000)):  # ACH: the session completes before the money moves
        stripe(
            portal,
            "checkout.session.completed",
            samples.stripe_session(pid, "u1", cents, payment_status="unpaid", method="us_bank_account"),
        )
    run()
    assert portal.world.crm.gifts == {}
    settled = stripe(
        portal, "checkout.session.async_payment_succeeded", samples.stripe_session("ach1", "u1", 5000, method="us_bank_account")
    )
    failed = stripe(
        portal,
        "checkout.session.async_payment_failed",
        samples.stripe_session("ach2", "u1", 7000, payment_status="unpaid", method="us_bank_account"),
    )
    run()
    [gift] = portal.world.crm.gifts.values()
    assert gift["external_id"] == "ach1" and gift["received_amount"] == 50.0
    assert jobs.get(db, settled["job_id"])["status"] == "succeeded"
    assert portal_records.get(db, "payment", "ach2")["status"] == "failed"
    assert "no gift" in jobs.get(db, failed["job_id"])["message"]
    # a later push of the older, pending state does not undo the failure, nor queue a gift
    push(portal, "payment", {"id": "ach2", "user_id": "u1", "type": "donation", "status": "pending", "amount_cents": 7000})
    run()
    assert len(portal.world.crm.gifts) == 1 and portal_records.get(db, "payment", "ach2")["status"] == "failed"


def test_payment_intent_without_portal_ids_says_where_they_come_from(portal, db):
    r = stripe(
        portal,
        "payment_intent.succeeded",
        {"id": "pi_x", "object": "payment_intent", "amount": 900, "amount_received": 900, "status": "succeeded", "metadata": {}},
    )
    run()
    row = jobs.get(db, r["job_id"])
    assert row["status"] == "skipped" and "payment_intent_data.metadata" in row["message"]


def test_import_takes_the_same_path_as_a_push(portal, db, cli, tmp_path):
    from synctool.platforms.portal import records as portal_records

    seed_user(portal)
    checkout(portal, "imp1", "u1", 1200)  # Stripe settled it before the portal's export was imported
    run()
    assert len(portal.world.crm.gifts) == 1
    path = tmp_path / "export.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "type": "payment",
                    "data": {"id": "imp1", "user_id": "u1", "type": "donation", "status": "pending", "amount_cents": 1200},
                },
                {"type": "user", "data": {"id": "u9", "email": "nine@example.org", "first_name": "Nia", "last_name": "Nine"}},
                {
                    "type": "payment",
                    "data": {"id": "imp2", "user_id": "u9", "type": "donation", "status": "succeeded", "amount_cents": 3000},
                },
                {"type": "family_link", "data": {"id": "fl9", "primary_user_id": "u1", "member_user_id": "u9"}},
            ]
        )
        + "\n"
    )
    report = json.loads(cli("portal", "import", str(path), "--json").stdout)
    assert report["errors"] == [] and report["queued"] == 3  # user u9, payment imp2, relationship fl9
    assert portal_records.get(db, "payment", "imp1")["status"] == "succeeded"  # pending does not undo settled
    run()
    gifts = {g["external_id"]: g for g in portal.world.crm.gifts.values()}
    assert set(gifts) == {"imp1", "imp2"} and gifts["imp2"]["received_amount"] == 30.0
    assert len(portal.world.crm.relationships) >= 1


def cart(client, payment_id: str = "cart1") -> None:
    seed_user(client)
    push(client, "product", {"id": "prod-family", "category": "membership", "name": "Family"})
    push(client, "product", {"id": "prod-gift", "category": "donation", "name": "Gift"})
    push(
        client,
        "payment",
        {
            "id": payment_id,
            "user_id": "u1",
            "type": "cart",
            "status": "pending",
            "gateway": "stripe",
            "amount_cents": 15000,
            "items": [
                {"id": "i1", "product_id": "prod-family", "amount_cents": 10000},
                {"id": "i2", "product_id": "prod-gift", "amount_cents": 5000},
            ],
        },
    )
    checkout(client, payment_id, "u1", 15000)
    run()


def test_stripe_refund_of_a_single_payment_by_its_payment_intent(portal, db):
    seed_user(portal)
    checkout(portal, "pay9", "u1", 6000, portal_payment_type="donation")
    run()
    [gift] = portal.world.crm.gifts.values()
    assert gift["received_amount"] == 60.0
    # no portal ids in the charge's metadata: its payment intent leads to the payment
    r = stripe(portal, "charge.refunded", samples.stripe_charge("ch_9", 6000, 1500, payment_intent="pi_pay9", refund_id="re_9"))
    run()
    row = db.execute("SELECT * FROM jobs WHERE id = ?", (r["job_id"],)).fetchone()
    assert row["status"] == "succeeded", row["last_error"]
    assert gift["received_amount"] == 45.0 and "via Stripe, refund re_9" in gift["note"]
    # the running total grows to the whole charge: the rest is refunded; the same event again adds nothing
    full = samples.stripe_charge("ch_9", 6000, 6000, payment_intent="pi_pay9")
    stripe(portal, "charge.refunded", full)
    run()
    assert gift["received_amount"] == 0.0
    again = stripe(portal, "charge.refunded", full)
    run()
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (again["job_id"],)).fetchone()[0] == "skipped"


def test_stripe_refund_of_a_cart_spreads_in_proportion_or_is_flagged(portal, db):
    cart(portal)
    gifts = {g["external_id"]: g for g in portal.world.crm.gifts.values()}
    assert (gifts["cart1-membership"]["received_amount"], gifts["cart1-donations"]["received_amount"]) == (100.0, 50.0)
    # 30 of 150: 20 from the 100 gift, 10 from the 50 gift, exactly
    stripe(portal, "charge.refunded", samples.stripe_charge("ch_c", 15000, 3000, portal_payment_id="cart1"))
    run()
    assert (gifts["cart1-membership"]["received_amount"], gifts["cart1-donations"]["received_amount"]) == (80.0, 40.0)
    # 10 more (40 in all) does not split to the cent (26.666... / 13.333...): a person decides
    r = stripe(portal, "charge.refunded", samples.stripe_charge("ch_c", 15000, 4000, portal_payment_id="cart1"))
    run()
    row = db.execute("SELECT status, last_error FROM jobs WHERE id = ?", (r["job_id"],)).fetchone()
    assert row["status"] == "failed" and "cannot be split" in row["last_error"] and "membership 100.00" in row["last_error"]
    assert (gifts["cart1-membership"]["received_amount"], gifts["cart1-donations"]["received_amount"]) == (80.0, 40.0)


def test_stripe_refund_before_the_payment_synced_waits_for_it(portal, db):
    seed_user(portal)
    push(portal, "payment", {"id": "pay5", "user_id": "u1", "type": "donation", "status": "pending", "amount_cents": 2000})
    r = stripe(portal, "charge.refunded", samples.stripe_charge("ch_5", 2000, 2000, portal_payment_id="pay5"))
    checkout(portal, "pay5", "u1", 2000)
    run()
    row = db.execute("SELECT status, message FROM jobs WHERE id = ?", (r["job_id"],)).fetchone()
    [gift] = portal.world.crm.gifts.values()
    assert row["status"] == "succeeded", row["message"]
    assert gift["received_amount"] == 0.0
