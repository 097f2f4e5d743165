"""Stripe donations (``synctool/platforms/stripe_donations``): a Stripe payment the member portal did not make
becomes one CRM gift while ``platforms:`` names stripe-donations; its events come on Stripe's endpoint
(``/webhooks/payments``), claimed from Stripe's adapter (``Platform.claims``). Through the receiver, drain and the
CLI against the fakes (Stripe's fake serves both platforms; every exchange is held to tests/specs/stripe.json)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from synctool.platforms.stripe import fake as stripe_fake
from synctool.platforms.stripe.webhook import sign
from tests.conftest import TEST_SECRETS
from tests.flow_helpers import job, run_drain
from tests.test_portal import portal  # noqa: F401  (a fixture)

ROLE = "stripe-donations"
IN_USE = "platforms: [givebutter, square, mailchimp, stripe, portal, stripe-donations]\n"
#: 2025-11-24 16:00 UTC: 08:00 in Los Angeles
CREATED = 1_764_000_000


@pytest.fixture
def donations(world, isolated, cli):
    """stripe-donations in use beside the five, the CRM's lists read and a default fund mapped."""
    (isolated / "config.yaml").write_text(IN_USE + "timezone: America/Los_Angeles\nstripe-donations:\n  default_fund_id: 2398\n")
    assert cli("crm", "refresh").exit_code == 0
    return world.fakes[ROLE]


def post(receiver, kind: str, obj: dict, event_id: str | None = None, secret: str | None = None):
    event = stripe_fake.event_of(kind, obj)
    if event_id:
        event["id"] = event_id
    body = json.dumps(event).encode()
    headers = {
        "Stripe-Signature": sign(body, secret or TEST_SECRETS["PAYMENTS_WEBHOOK_SECRET"]),
        "Content-Type": "application/json",
    }
    return receiver.post("/webhooks/payments", content=body, headers=headers)


def gifts_of(world, external_id: str) -> list[dict]:
    return [g for g in world.crm.gifts.values() if g["external_id"] == external_id]


def test_a_signed_charge_becomes_one_gift_with_its_donor_fee_and_local_day(donations, world, receiver, db):
    charge = stripe_fake.add_charge(donations, 5000, email="ada@example.org", name="Ada Lovelace", created=CREATED)
    r = post(receiver, "charge.succeeded", charge)
    assert r.status_code == 200 and r.json()["status"] == "accepted"
    row = job(db, r.json()["job_id"])
    assert (row["source"], row["entity_type"], row["external_id"]) == (ROLE, "gift", f"stripe_{charge['payment_intent']}")
    run_drain()
    row = job(db, r.json()["job_id"])
    assert row["status"] == "succeeded", row["last_error"]
    [gift] = gifts_of(world, f"stripe_{charge['payment_intent']}")
    assert gift["received_amount"] == 50.0 and gift["fund_id"] == 2398
    assert gift["received_date"] == "2025-11-24"
    assert "Stripe fee 1.75 USD, net 48.25" in gift["note"]
    donor = world.crm.constituents[int(gift["constituent_id"])] if isinstance(next(iter(world.crm.constituents)), int) else None
    assert donor is None or donor["last_name"] == "Lovelace"


def refund_event(receiver, charge: dict, event_id: str | None = None):
    return post(receiver, "charge.refunded", json.loads(json.dumps(charge)), event_id)


def test_a_partial_then_a_full_refund_lower_the_gift_and_a_replay_changes_nothing(donations, world, receiver, db):
    charge = stripe_fake.add_charge(donations, 10000, created=CREATED)
    post(receiver, "charge.succeeded", charge)
    run_drain()
    [gift] = gifts_of(world, f"stripe_{charge['payment_intent']}")
    stripe_fake.refund_charge(donations, charge, 2500)
    first = refund_event(receiver, charge, "evt_refund_1")
    run_drain()
    assert job(db, first.json()["job_id"])["status"] == "succeeded", job(db, first.json()["job_id"])["last_error"]
    assert gift["received_amount"] == 75.0 and "via Stripe" in gift["note"]
    assert refund_event(receiver, charge, "evt_refund_1").json()["status"] == "duplicate"
    stripe_fake.refund_charge(donations, charge, 7500)
    refund_event(receiver, charge, "evt_refund_2")
    run_drain()
    assert gift["received_amount"] == 0.0
    again = refund_event(receiver, charge, "evt_refund_3")  # the same total, another event: nothing left to apply
    run_drain()
    assert job(db, again.json()["job_id"])["status"] == "skipped"
    assert gift["received_amount"] == 0.0


def test_a_lost_dispute_takes_its_money_back_and_a_won_one_changes_nothing(donations, world, receiver, db):
    charge = stripe_fake.add_charge(donations, 4000, created=CREATED)
    post(receiver, "charge.succeeded", charge)
    run_drain()
    [gift] = gifts_of(world, f"stripe_{charge['payment_intent']}")
    dispute = {"id": "dp_1", "object": "dispute", "amount": 4000, "charge": charge["id"], "currency": "usd",
               "payment_intent": charge["payment_intent"], "status": "won", "created": CREATED + 86400}  # fmt: skip
    won = post(receiver, "charge.dispute.closed", dispute)
    assert job(db, won.json()["job_id"])["status"] == "skipped"
    lost = post(receiver, "charge.dispute.closed", {**dispute, "id": "dp_2", "status": "lost"})
    run_drain()
    assert job(db, lost.json()["job_id"])["status"] == "succeeded", job(db, lost.json()["job_id"])["last_error"]
    assert gift["received_amount"] == 0.0


def test_three_events_of_one_payment_link_payment_make_one_gift_coded_by_the_link(donations, world, receiver, db, cli):
    assert cli("mappings", "overrides", "set", "plink_spring", "--fund-id", "2399").exit_code == 0
    assert cli("mappings", "payments", "set", "stripe-donations:card", "--payment-type-id", "1509").exit_code == 0
    charge = stripe_fake.add_charge(donations, 2500, payment_link="plink_spring", price="price_25", created=CREATED)
    [session] = donations.sessions
    ids = []
    # one drain per event: the second finds the gift the first made (two jobs of one gift at once are the queue's
    # concern, tested there)
    for kind, obj in (("checkout.session.completed", session), ("charge.succeeded", charge), ("payment_intent.succeeded",
                      {"id": charge["payment_intent"], "object": "payment_intent", "metadata": {}, "status": "succeeded"})):  # fmt: skip
        ids.append(post(receiver, kind, obj).json()["job_id"])
        run_drain()
    [gift] = gifts_of(world, f"stripe_{charge['payment_intent']}")
    assert gift["fund_id"] == 2399 and gift["payment_type_id"] == 1509 and "via plink_spring, price_25" in gift["note"]
    rows = [job(db, i) for i in ids]
    assert [r["source"] for r in rows] == [ROLE, ROLE, "payments"]  # payment_intent.succeeded stays Stripe's
    assert {r["status"] for r in rows[:2]} == {"succeeded"} and "already in the CRM" in rows[1]["message"]


def test_the_portals_payments_stay_the_portals(donations, world, receiver, db):
    marked = stripe_fake.add_charge(donations, 3000, metadata={"portal_payment_id": "pay_9"})
    r = post(receiver, "charge.succeeded", marked)
    assert job(db, r.json()["job_id"])["source"] == "payments"  # not claimed: skipped as before
    # a portal session that left its payment intent unmarked: the job reads the session, and skips
    unmarked = stripe_fake.add_charge(donations, 3000, price="price_membership")
    donations.sessions[-1]["metadata"] = {"portal_payment_id": "pay_10"}
    r = post(receiver, "charge.succeeded", unmarked)
    run_drain()
    row = job(db, r.json()["job_id"])
    assert row["status"] == "skipped" and "member portal" in row["message"]
    assert world.crm.gifts == {}


def test_without_stripe_donations_in_use_nothing_changes(world, receiver, db):
    charge = stripe_fake.add_charge(world.fakes[ROLE], 5000)
    r = post(receiver, "charge.succeeded", charge)
    row = job(db, r.json()["job_id"])
    assert (row["source"], row["entity_type"], row["status"]) == ("payments", "event", "skipped")


def test_a_forged_or_other_platforms_signature_stores_nothing(donations, receiver, db):
    charge = stripe_fake.add_charge(donations, 5000)
    assert post(receiver, "charge.succeeded", charge, secret="whsec_forged").status_code == 401
    assert post(receiver, "charge.succeeded", charge, secret=TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]).status_code == 401
    assert db.execute("SELECT COUNT(*) FROM deliveries").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"amount": "fifty"}, "amount"),
        ({"currency": "dollars"}, "currency"),
        ({"amount": 10**12}, "amount"),
        ({"billing_details": {"name": None, "email": None}, "receipt_email": None}, "names no donor"),
    ],
    ids=["wrong type", "unknown currency", "huge", "missing donor"],
)
@pytest.mark.off_contract  # Stripe's record broken on purpose
def test_a_bad_charge_ends_as_a_clear_failure(donations, world, receiver, db, change, words):
    charge = stripe_fake.add_charge(donations, 5000)
    charge.update(change)  # Stripe's record of it, as the job reads it
    r = post(receiver, "charge.succeeded", charge)
    assert r.status_code == 200
    run_drain()
    row = job(db, r.json()["job_id"])
    assert row["status"] == "failed" and words in row["last_error"], row["last_error"]
    assert world.crm.gifts == {}


def test_the_poll_finds_a_lost_webhook_and_queues_nothing_twice(donations, world, receiver, db, cli):
    seen = stripe_fake.add_charge(donations, 1000, created=CREATED)
    post(receiver, "charge.succeeded", seen)
    lost = stripe_fake.add_charge(donations, 2000, created=CREATED + 60)
    stripe_fake.add_charge(donations, 3000, created=CREATED + 120, metadata={"portal_payment_id": "pay_1"})
    result = cli("poll", "--source", ROLE, "--lookback", "30000d", "--json")
    assert result.exit_code == 0, result.output
    assert db.execute("SELECT COUNT(*) FROM jobs WHERE source = ? AND entity_type = 'gift'", (ROLE,)).fetchone()[0] == 2
    run_drain()
    assert len(gifts_of(world, f"stripe_{lost['payment_intent']}")) == 1
    assert cli("poll", "--source", ROLE, "--lookback", "30000d").exit_code == 0
    assert db.execute("SELECT COUNT(*) FROM jobs WHERE source = ? AND entity_type = 'gift'", (ROLE,)).fetchone()[0] == 2


def test_reconcile_matches_every_charge_and_lists_a_deleted_gift_and_payouts_add_up(donations, world, receiver, db, cli):
    kept = stripe_fake.add_charge(donations, 5000, created=CREATED)
    gone = stripe_fake.add_charge(donations, 2000, created=CREATED + 60)
    refunded = stripe_fake.add_charge(donations, 3000, created=CREATED + 120)
    for charge in (kept, gone, refunded):
        post(receiver, "charge.succeeded", charge)
    run_drain()
    stripe_fake.refund_charge(donations, refunded, 1000)
    refund_event(receiver, refunded)
    run_drain()
    [deleted] = gifts_of(world, f"stripe_{gone['payment_intent']}")
    del world.crm.gifts[deleted["id"]]
    result = cli("reconcile", "--from", "2025-11-01", "--to", "2025-11-30", "--source", ROLE, "--json")
    report = json.loads(result.stdout)
    statuses = {i["external_id"]: i["status"] for i in report["items"]}
    assert statuses[f"stripe_{kept['payment_intent']}"] == "matched"
    assert statuses[f"stripe_{refunded['payment_intent']}"] == "matched"
    assert statuses[f"stripe_{gone['payment_intent']}"] != "matched"
    stripe_fake.pay_out(donations, CREATED + 3 * 86400, [kept, refunded])
    result = cli("reconcile", "payouts", "--from", "2025-11-01", "--to", "2025-11-30", "--source", ROLE, "--json")
    assert result.exit_code == 0, result.output
    [payout] = json.loads(result.stdout)["payouts"]
    assert (Decimal(payout["gross"]), Decimal(payout["refunds"])) == (Decimal("80.00"), Decimal("10.00"))
    assert not payout["problem"] and payout["with_gift"] == 2


@pytest.fixture
def beside_the_portal(world, isolated):
    """stripe-donations in use beside the portal (the ``portal`` fixture's receiver reads this config)."""
    (isolated / "config.yaml").write_text(IN_USE)
    return world.fakes[ROLE]


def test_a_refund_of_the_portals_unmarked_charge_goes_back_to_the_portal(beside_the_portal, portal, db):  # noqa: F811
    from synctool.fakes import samples
    from tests.test_portal import checkout, run, seed_user, stripe

    seed_user(portal)
    checkout(portal, "pay9", "u1", 6000, portal_payment_type="donation")
    stripe_fake.add_session(beside_the_portal, samples.stripe_session("pay9", "u1", 6000))  # Stripe holds it too
    run()
    [gift] = portal.world.crm.gifts.values()
    # no portal ids on the charge: claimed as a donation's refund, then handed back, found by its session
    r = stripe(portal, "charge.refunded", samples.stripe_charge("ch_9", 6000, 1500, payment_intent="pi_pay9", refund_id="re_9"))
    run()
    row = job(db, r["job_id"])
    assert row["source"] == ROLE and row["status"] == "skipped" and "handed to the portal" in row["message"]
    run()
    assert gift["received_amount"] == 45.0 and "via Stripe, refund re_9" in gift["note"]


def test_webhooks_register_adds_the_donations_events_to_stripes_endpoint(donations, world, cli):
    assert world.fakes[ROLE] is world.fakes["payments"]  # one account, one fake
    result = cli("webhooks", "register", "--url", "https://sync.example.org", "--json")
    assert result.exit_code == 0, result.output
    [endpoint] = donations.endpoints.values()
    assert endpoint["url"] == "https://sync.example.org/webhooks/payments"
    assert {"charge.succeeded", "invoice.paid", "charge.dispute.closed", "checkout.session.completed"} <= set(
        endpoint["enabled_events"]
    )
    again = json.loads(cli("webhooks", "register", "--url", "https://sync.example.org", "--json").stdout)
    assert {r["source"]: r["action"] for r in again["registered"]}[ROLE] == "unchanged"


def test_a_subscriptions_paid_invoice_is_one_gift_coded_recurring(donations, world, receiver, db, cli):
    assert cli("mappings", "types", "set", "stripe-donations:recurring", "--fund-id", "2399").exit_code == 0
    sub = stripe_fake.add_subscription(donations, 2500, email="rita@example.org")
    invoice, charge = stripe_fake.pay_invoice(donations, sub, created=CREATED)
    paid = post(receiver, "invoice.paid", invoice)
    post(receiver, "charge.succeeded", charge)
    run_drain()
    assert job(db, paid.json()["job_id"])["status"] == "succeeded", job(db, paid.json()["job_id"])["last_error"]
    [gift] = gifts_of(world, f"stripe_{charge['payment_intent']}")
    assert gift["fund_id"] == 2399 and f"recurring: subscription {sub['id']}" in gift["note"]


def test_payment_links_and_products_are_kept_by_name_for_the_mappings_page(donations, receiver, db):
    charge = stripe_fake.add_charge(donations, 2500, payment_link="plink_spring", price="price_25", product="prod_gift")
    post(receiver, "charge.succeeded", charge)
    run_drain()
    names = {
        r[0]: json.loads(r[1])["title"]
        for r in db.execute("SELECT key, value FROM caches WHERE kind = ?", (f"{ROLE}:campaigns",))
    }
    assert names == {"price_25": "Donation", "prod_gift": "Donation", "plink_spring": "Payment Link Donation"}


GROUP, CALL = 704, 2183  # the LGL fake's "Monthly Donors" group and its "Call" contact report type


def shown(cli, sub_id: str) -> dict:
    result = cli("plans", "show", f"{ROLE}:{sub_id}", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_recurring_donor_joins_the_group_and_a_failed_then_canceled_plan_gets_its_reports(donations, world, receiver, cli):
    assert (
        cli(
            "mappings", "plans", "set", "--group", str(GROUP), "--report-type", str(CALL), "--team-member", "tom@example.org"
        ).exit_code
        == 0
    )
    sub = stripe_fake.add_subscription(donations, 2500, email="rita@example.org", customer="cus_rita")
    post(receiver, "customer.subscription.created", stripe_fake.public(sub))
    invoice, charge = stripe_fake.pay_invoice(donations, sub, created=CREATED)
    post(receiver, "charge.succeeded", charge)
    run_drain()
    plan = shown(cli, sub["id"])
    assert (plan["status"], plan["amount"], plan["frequency"]) == ("active", "25.00", "monthly")
    [gift] = gifts_of(world, f"stripe_{charge['payment_intent']}")
    assert [c["crm_gift_id"] for c in plan["charges"]] == [str(gift["id"])]
    member = [m for m in world.crm.group_memberships.values() if m["group_id"] == GROUP]
    assert [str(m["constituent_id"]) for m in member] == [str(gift["constituent_id"])]
    sub["status"] = "past_due"
    post(receiver, "invoice.payment_failed", {**invoice, "paid": False, "status": "open"})
    run_drain()
    assert shown(cli, sub["id"])["status"] == "failed"
    sub["status"] = "canceled"
    post(receiver, "customer.subscription.deleted", stripe_fake.public(sub))
    run_drain()
    assert shown(cli, sub["id"])["status"] == "canceled"
    reports = [r for r in world.crm.contact_reports.values() if str(r["constituent_id"]) == str(gift["constituent_id"])]
    assert len(reports) == 2 and "Stripe recurring plan" in reports[0]["text"], reports


def test_the_poll_finds_a_subscription_whose_events_were_lost(donations, cli, db):
    sub = stripe_fake.add_subscription(donations, 1000)
    assert cli("poll", "--source", ROLE).exit_code == 0
    run_drain()
    assert shown(cli, sub["id"])["status"] == "active"
    assert cli("poll", "--source", ROLE).exit_code == 0  # unchanged: nothing queued
    assert db.execute("SELECT COUNT(*) FROM jobs WHERE entity_type = 'plan'").fetchone()[0] == 1
    sub["status"] = "canceled"
    assert cli("poll", "--source", ROLE).exit_code == 0
    run_drain()
    assert shown(cli, sub["id"])["status"] == "canceled"


DOCUMENTED = Path(__file__).parent / "data" / "stripe_donations"
REAL = Path(__file__).parent / "data" / "real_bodies" / "stripe"


def real(name: str) -> dict:
    return json.loads((DOCUMENTED / name).read_text())


def test_stripes_documented_objects_are_claimed_as_the_donations_read_them():
    """Stripe's own fixtures (tests/data/stripe_donations/README.md), in the newest API version's shape."""
    from synctool.platforms.stripe_donations import webhook
    from synctool.platforms.stripe_donations.models import Charge, Subscription

    charge = real("charge.json")
    gift = webhook.job_of("charge.succeeded", charge)
    assert (gift.entity_type, gift.external_id, gift.amount) == ("gift", f"stripe_{charge['id']}", "1.00")
    assert Charge.model_validate(charge).payment == charge["id"]  # no payment intent: the charge's own id
    assert webhook.job_of("checkout.session.completed", real("checkout-session.json")).external_id == (
        "stripe_pi_1PgafyB7WZ01zgkWSjxsAJo3"
    )
    invoice = real("invoice.json")  # the newest shape: its subscription under parent, no charge
    assert webhook.job_of("invoice.payment_failed", invoice).entity_id == "subscription"
    assert webhook.job_of("invoice.paid", invoice).status == "skipped"
    assert Subscription.model_validate(real("subscription.json")).status == "active"
    dispute = webhook.job_of("charge.dispute.closed", real("dispute.json"))
    assert dispute.status == "skipped" and "warning_needs_response" in dispute.message


def test_the_conformance_kit_passes_and_the_strict_fields_are_these():
    from synctool.platform import strict_fields
    from synctool.platforms.stripe_donations import PLATFORM
    from synctool.platforms.stripe_donations.models import Charge, Dispute, Invoice
    from synctool.testing import check_platform

    assert {"claims.payments", "poll", "expected", "payouts", "plans", "registration"} <= set(check_platform(PLATFORM))
    assert strict_fields(Charge) == {"id", "amount", "amount_refunded", "currency", "status", "created", "payment_intent",
                                     "invoice", "metadata"}  # fmt: skip
    assert strict_fields(Invoice) >= {"id", "amount_paid", "currency", "subscription", "charge"}
    assert strict_fields(Dispute) >= {"id", "charge", "amount", "currency", "status"}


@pytest.mark.parametrize(
    ("name", "job"),
    [
        ("webhook-charge-succeeded.json", ("gift", "stripe_ch_1CeLZkBrSjgsps2DCNBQmnLA", "queued")),
        ("webhook-checkout-session-completed.json", ("gift", None, None)),
        ("webhook-invoice-paid.json", ("gift", None, None)),
        ("webhook-invoice-payment-failed.json", None),  # a one-off invoice's: no subscription, no plan
        ("webhook-charge-updated.json", None),
    ],
)
def test_bodies_stripe_really_sent_are_claimed_or_left(name, job):
    """GITPAY's recorded events (tests/data/real_bodies/README.md), through Stripe's adapter, then the claim."""
    from synctool.platforms.stripe.webhook import parse_webhook
    from synctool.platforms.stripe_donations.webhook import claim

    taken = claim(parse_webhook((REAL / name).read_bytes()))
    if job is None:
        assert taken is None
        return
    assert taken is not None and taken.job.entity_type == job[0]
    if job[1]:
        assert (taken.job.external_id, taken.job.status) == job[1:]


@pytest.mark.sqlite_only(
    "doctor runs the platforms' own rows on SQLite only while doctor on PostgreSQL is in progress (issue 59)"
)
def test_doctor_fails_stripe_donations_without_stripes_endpoint(world, isolated, cli):
    (isolated / "config.yaml").write_text("platforms: [givebutter, stripe-donations]\n")
    result = cli("doctor", "--json")
    rows = {c["check"]: c for c in json.loads(result.stdout)}
    assert rows["stripe-donations endpoint"]["status"] == "fail" and "add stripe" in rows["stripe-donations endpoint"]["fix"]


def test_a_charge_in_another_currency_is_held_for_a_person(donations, world, receiver, db):
    charge = stripe_fake.add_charge(donations, 7416, currency="cad")
    r = post(receiver, "charge.succeeded", charge)
    run_drain()
    row = job(db, r.json()["job_id"])
    assert row["status"] == "review" and row["message"].startswith("held: 74.16 CAD in a USD organisation"), row["message"]
    assert world.crm.gifts == {}


def test_backfill_queues_the_charges_synctool_never_saw(donations, world, cli, db):
    stripe_fake.add_charge(donations, 1200, created=CREATED)
    stripe_fake.add_charge(donations, 3400, created=CREATED + 86400)
    result = cli("backfill", "--since", "2025-11-01", "--until", "2025-11-30", "--source", ROLE, "--json")
    assert result.exit_code == 0, result.output
    run_drain()
    assert sorted(g["received_amount"] for g in world.crm.gifts.values()) == [12.0, 34.0]
    again = cli("backfill", "--since", "2025-11-01", "--until", "2025-11-30", "--source", ROLE, "--json")
    assert again.exit_code == 0 and db.execute("SELECT COUNT(*) FROM jobs WHERE source = ?", (ROLE,)).fetchone()[0] == 2


def test_the_poll_finds_a_lost_dispute_whose_webhook_never_came(donations, world, receiver, cli):
    charge = stripe_fake.add_charge(donations, 4000, created=CREATED)
    post(receiver, "charge.succeeded", charge)
    run_drain()
    dispute = {"id": "dp_lost", "object": "dispute", "amount": 4000, "charge": charge["id"], "currency": "usd",
               "payment_intent": charge["payment_intent"], "status": "lost", "created": CREATED + 86400, "metadata": {}}  # fmt: skip
    donations.add_event(stripe_fake.event_of("charge.dispute.closed", dispute), delivered=False)
    assert cli("poll", "--source", ROLE, "--lookback", "30000d").exit_code == 0
    assert cli("poll", "--source", ROLE, "--lookback", "30000d").exit_code == 0  # once
    run_drain()
    [gift] = gifts_of(world, f"stripe_{charge['payment_intent']}")
    assert gift["received_amount"] == 0.0
