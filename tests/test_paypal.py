"""PayPal as a platform package (issue 60): its signed webhooks, a donation as one gift, refunds, reversals and
lost disputes, subscriptions' payments, the backup poll, reconcile, backfill, payouts, registration and heal, its
fake held to PayPal's own OpenAPI files (``tests/specs/paypal.json``), through the receiver, the CLI and drain."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from synctool.platform import strict_fields
from synctool.platforms.paypal import PLATFORM, certs
from synctool.platforms.paypal.fake import FakePayPal
from synctool.platforms.paypal.models import Donation, RefundData
from tests import helpers
from tests.flow_helpers import run_drain

WEBHOOK_ID = "8PT597110X687430LKGECATA"
CLIENT_ID = "AcLientId0123"


def config(isolated, extra: str = "") -> None:
    (isolated / "config.yaml").write_text(
        "platforms: [givebutter, paypal]\n"
        "paypal:\n"
        "  cert_url_prefixes: ['http://paypal.fake.invalid/v1/notifications/certs/']\n"
        "  default_fund_id: 2398\n"
        "  timezone: America/Los_Angeles\n" + extra
    )


@pytest.fixture
def paypal(world, env, isolated, cli) -> FakePayPal:
    """PayPal in use beside Givebutter, its fake answering, its app's credentials and webhook id set; the CRM's
    funds read."""
    config(isolated)
    env.update(PAYPAL_CLIENT_ID=CLIENT_ID, PAYPAL_WEBHOOK_ID=WEBHOOK_ID)
    assert cli("crm", "refresh").exit_code == 0
    return world.fakes["paypal"]


@pytest.fixture
def receiver(paypal):
    """The receiver, built after the config names PayPal."""
    from synctool.web.receiver import create_app

    with TestClient(create_app(helpers.runtime())) as client:
        yield client


def deliver(receiver, paypal: FakePayPal, body: bytes, **sign) -> dict:
    answer = receiver.post("/webhooks/paypal", content=body, headers=paypal.sign(body, WEBHOOK_ID, **sign))
    assert answer.status_code == 200, answer.text
    return answer.json()


def made(world, external_id: str) -> list[dict]:
    return [g for g in world.crm.gifts.values() if g["external_id"] == external_id]


def out(result) -> dict:
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_it_keeps_the_platform_contract():
    from synctool.testing import check_platform

    hooks = {"webhook.adapter", "client", "poll", "expected", "payouts", "missed", "refetch", "checks", "registration",
             "handlers", "fake", "config"}  # fmt: skip
    assert hooks <= set(check_platform(PLATFORM))


def test_the_fields_that_decide_money_are_strict():
    assert strict_fields(Donation) == {"id", "amount", "amount.currency_code", "amount.value", "payer",
                                       "payer.email_address"}  # fmt: skip
    assert strict_fields(RefundData) == {"id", "payment_id", "amount", "amount.currency_code", "amount.value"}


def test_a_signed_donation_is_one_gift_coded_by_paypal_s_own_keys(paypal, receiver, world, cli):
    assert cli("mappings", "types", "set", "paypal:default", "--fund-id", "2399").exit_code == 0
    assert cli("mappings", "overrides", "set", "paypal:custom:spring-appeal", "--fund-id", "2400").exit_code == 0
    assert cli("mappings", "payments", "set", "paypal:paypal", "--payment-type-id", "1509").exit_code == 0
    capture = paypal.donate("25.00", "ida@example.org", custom_id="spring-appeal", item="Spring appeal")
    body = paypal.event("PAYMENT.CAPTURE.COMPLETED", capture)
    assert deliver(receiver, paypal, body)["status"] == "accepted"
    assert deliver(receiver, paypal, body)["status"] == "duplicate"  # PayPal's retry of the same event
    run_drain()
    [gift] = made(world, f"paypal_{capture['id']}")
    assert (gift["received_amount"], gift["fund_id"], gift["payment_type_id"]) == (25.0, 2400, 1509)
    fee = capture["seller_receivable_breakdown"]["paypal_fee"]["value"]
    assert f"PayPal fee {fee}" in gift["note"] and "Spring appeal" in gift["note"]
    person = world.crm.constituents[int(gift["constituent_id"])] if "constituent_id" in gift else None
    assert person is None or person["first_name"] == "Ida"


def stored(db) -> int:
    return db.execute("SELECT COUNT(*) FROM deliveries WHERE source = 'paypal'").fetchone()[0]


def test_forged_replayed_foreign_and_unsigned_deliveries_are_refused_and_nothing_stored(paypal, receiver, db):
    from cryptography.hazmat.primitives.asymmetric import rsa

    capture = paypal.donate("25.00", "ida@example.org")
    body = paypal.event("PAYMENT.CAPTURE.COMPLETED", capture)
    headers = paypal.sign(body, WEBHOOK_ID)

    def post(content: bytes, **changed: str) -> int:
        return receiver.post("/webhooks/paypal", content=content, headers={**headers, **changed}).status_code

    assert post(body.replace(b"25.00", b"95.00")) == 401  # the body changed after signing
    other_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    forged = paypal.sign(body, WEBHOOK_ID, key=other_key)
    assert post(body, **{"PAYPAL-TRANSMISSION-SIG": forged["PAYPAL-TRANSMISSION-SIG"]}) == 401  # another key
    assert post(body, **{k: v for k, v in paypal.sign(body, "OTHERWEBHOOK").items() if k.startswith("PAYPAL")}) == 401
    old = paypal.sign(body, WEBHOOK_ID, at=datetime.now(UTC) - timedelta(hours=1))
    assert post(body, **{k: v for k, v in old.items() if k.startswith("PAYPAL")}) == 401  # a replay of an old delivery
    assert post(body, **{"PAYPAL-AUTH-ALGO": "SHA1withRSA"}) == 401
    assert post(body, **{"PAYPAL-TRANSMISSION-SIG": "%%%"}) == 401
    # a certificate URL no one named is refused without being fetched (a secret never leaves for it, nor a request)
    for url in ("https://evil.example/v1/notifications/certs/CERT-1", "http://paypal.fake.invalid/v1/notifications/certs/../x",
                "https://api.paypal.com.evil.example/v1/notifications/certs/CERT-1", "file:///etc/passwd"):  # fmt: skip
        assert post(body, **{"PAYPAL-CERT-URL": url}) == 401
    # Givebutter's signature on PayPal's route: no PayPal headers at all
    answer = receiver.post("/webhooks/paypal", content=body, headers={"Signature": "demo-gb-signing-secret"})
    assert answer.status_code == 401 and "PAYPAL-TRANSMISSION-ID" in answer.json()["error"]
    assert stored(db) == 0
    assert post(body) == 200 and stored(db) == 1


def test_without_a_webhook_id_deliveries_are_refused_with_a_503(world, env, isolated, cli, db):
    from synctool.web.receiver import create_app

    config(isolated)
    env.update(PAYPAL_CLIENT_ID=CLIENT_ID)
    paypal = world.fakes["paypal"]
    body = paypal.event("PAYMENT.CAPTURE.COMPLETED", paypal.donate("5.00", "ida@example.org"))
    with TestClient(create_app(helpers.runtime())) as receiver:
        answer = receiver.post("/webhooks/paypal", content=body, headers=paypal.sign(body, WEBHOOK_ID))
    assert answer.status_code == 503 and "PAYPAL_WEBHOOK_ID" in answer.text
    assert stored(db) == 0


def test_an_organisation_not_using_paypal_sees_nothing_of_it(world, isolated, cli):
    from synctool.web.receiver import create_app

    with TestClient(create_app(helpers.runtime())) as receiver:
        assert receiver.post("/webhooks/paypal", content=b"{}").status_code == 404
    listed = {p["name"]: p for p in out(cli("platforms", "--json"))}
    assert listed["paypal"]["in_use"] is False and listed["givebutter"]["in_use"] is True
    checks = [c["check"] for c in out(cli("doctor", "--json"))]
    assert not [c for c in checks if "paypal" in c.lower()]


def test_the_api_verification_asks_paypal(world, env, isolated, cli, db):
    from synctool.web.receiver import create_app

    config(isolated, "  verification: api\n")
    env.update(PAYPAL_CLIENT_ID=CLIENT_ID, PAYPAL_WEBHOOK_ID=WEBHOOK_ID)
    paypal = world.fakes["paypal"]
    body = paypal.event("PAYMENT.CAPTURE.COMPLETED", paypal.donate("5.00", "ida@example.org"))
    with TestClient(create_app(helpers.runtime())) as receiver:
        good = receiver.post("/webhooks/paypal", content=body, headers=paypal.sign(body, WEBHOOK_ID))
        bad = receiver.post("/webhooks/paypal", content=body, headers=paypal.sign(body, "OTHERWEBHOOK"))
    assert (good.status_code, bad.status_code) == (200, 401)
    assert any(e["path"] == "/v1/notifications/verify-webhook-signature" for e in world.recorders["paypal"].exchanges)


@pytest.mark.parametrize(
    "resource, why",
    [
        ({"id": "C1", "amount": {"currency_code": "USD", "value": "ten"}}, "amount"),
        (
            {
                "id": "C1",
                "amount": {"currency_code": "USD", "value": "10.00"},
                "supplementary_data": {"related_ids": {"order_id": "NOPE"}},
            },
            "404",
        ),
        ({"id": "C1", "amount": {"value": "10.00"}}, "currency_code"),
        ({"id": "C1", "amount": {"currency_code": "XX", "value": "10.00"}}, "currency_code"),
    ],
)
def test_bad_bodies_end_as_clear_failures_in_the_sync_log(paypal, receiver, cli, resource, why):
    body = paypal.event("PAYMENT.CAPTURE.COMPLETED", resource)
    assert deliver(receiver, paypal, body)["status"] == "accepted"
    run_drain()
    [job] = out(cli("syncs", "list", "--source", "paypal", "--json"))["items"]
    assert job["status"] == "failed" and why in (job["last_error"] or ""), job


def test_bodies_the_receiver_refuses(paypal, receiver, db):
    for body in (b"[]", b"not json", b'{"id": "WH-1"}', b'{"id": "WH-1", "event_type": "PAYMENT.CAPTURE.COMPLETED"}',
                 b'{"id": "WH-1", "event_type": "PAYMENT.CAPTURE.COMPLETED", "resource": {"amount": 1}}',
                 b'{"id": "WH-1", "event_type": "PAYMENT.CAPTURE.REFUNDED", "resource": {"id": "R1"}}'):  # fmt: skip
        answer = receiver.post("/webhooks/paypal", content=body, headers=paypal.sign(body, WEBHOOK_ID))
        assert answer.status_code == 400, body
    huge = b'{"id": "WH-2", "pad": "' + b"x" * 2_000_000 + b'"}'
    assert receiver.post("/webhooks/paypal", content=huge, headers=paypal.sign(huge, WEBHOOK_ID)).status_code == 413
    assert stored(db) == 0


def test_other_events_are_stored_and_skipped_saying_which(paypal, receiver, cli):
    body = paypal.event("CHECKOUT.ORDER.APPROVED", {"id": "9OAPPROVED"}, resource_type="checkout-order")
    assert deliver(receiver, paypal, body)["status"] == "accepted"
    [job] = out(cli("syncs", "list", "--source", "paypal", "--json"))["items"]
    assert job["status"] == "skipped" and "CHECKOUT.ORDER.APPROVED" in (job["message"] or job.get("last_error") or "")


def refund_event(paypal: FakePayPal, capture_id: str, amount: str, *, reversal: bool = False) -> bytes:
    refund = paypal.refund(capture_id, amount, reversal=reversal)
    kind = "PAYMENT.CAPTURE.REVERSED" if reversal else "PAYMENT.CAPTURE.REFUNDED"
    return paypal.event(kind, refund, resource_type="refund")


def test_a_partial_then_a_full_refund_lower_then_delete_the_gift_once(paypal, receiver, world, cli):
    assert cli("settings", "refund-policy", "adjust").exit_code == 0
    capture = paypal.donate("50.00", "ida@example.org")
    deliver(receiver, paypal, paypal.event("PAYMENT.CAPTURE.COMPLETED", capture))
    partial = refund_event(paypal, capture["id"], "20.00")
    deliver(receiver, paypal, partial)
    run_drain()
    [gift] = made(world, f"paypal_{capture['id']}")
    assert gift["received_amount"] == 30.0 and "via PayPal, refund" in gift["note"]
    deliver(receiver, paypal, partial)  # the same event again: a duplicate
    deliver(receiver, paypal, refund_event(paypal, capture["id"], "30.00"))
    run_drain()
    applied = out(cli("refunds", "list", "--source", "paypal", "--json"))["items"]
    assert sorted(r["amount_after"] for r in applied) == ["0.00", "30.00"]


def test_a_reversal_and_its_lost_dispute_take_the_money_back_once(paypal, receiver, world, cli):
    capture = paypal.donate("40.00", "ida@example.org")
    deliver(receiver, paypal, paypal.event("PAYMENT.CAPTURE.COMPLETED", capture))
    won = {"dispute_id": "PP-D-1", "disputed_transactions": [{"seller_transaction_id": capture["id"]}],
           "dispute_outcome": {"outcome_code": "RESOLVED_SELLER_FAVOUR"}, "dispute_amount": capture["amount"]}  # fmt: skip
    assert deliver(receiver, paypal, paypal.event("CUSTOMER.DISPUTE.RESOLVED", won, resource_type="dispute"))
    deliver(receiver, paypal, refund_event(paypal, capture["id"], "15.00", reversal=True))
    lost = {**won, "dispute_id": "PP-D-2", "dispute_outcome": {"outcome_code": "RESOLVED_BUYER_FAVOUR",
            "amount_refunded": {"currency_code": "USD", "value": "15.00"}}}  # fmt: skip
    deliver(receiver, paypal, paypal.event("CUSTOMER.DISPUTE.RESOLVED", lost, resource_type="dispute"))
    run_drain()
    assert made(world, f"paypal_{capture['id']}")[0]["received_amount"] == 25.0
    jobs = {j["entity_id"]: j["status"] for j in out(cli("syncs", "list", "--source", "paypal", "--json"))["items"]}
    assert jobs["PP-D-1"] == "skipped"


def test_a_subscription_payment_is_a_recurring_gift_with_its_subscriber(paypal, receiver, world, cli):
    assert cli("mappings", "types", "set", "paypal:recurring", "--fund-id", "2400").exit_code == 0
    subscription = paypal.subscribe("15.00", "ada@example.org")
    sale = paypal.charge(subscription["id"])
    deliver(receiver, paypal, paypal.event("PAYMENT.SALE.COMPLETED", sale, resource_type="sale"))
    run_drain()
    [gift] = made(world, f"paypal_{sale['id']}")
    assert gift["fund_id"] == 2400 and subscription["id"] in gift["note"]


def test_the_poll_finds_a_lost_webhook_and_makes_no_second_gift(paypal, receiver, world, cli):
    seen = paypal.donate("25.00", "ida@example.org")
    deliver(receiver, paypal, paypal.event("PAYMENT.CAPTURE.COMPLETED", seen))
    lost = paypal.donate("10.00", "ida@example.org")  # its webhook never came
    paypal.refund(lost["id"], "4.00")
    polled = out(cli("poll", "--source", "paypal", "--json"))["sources"]["paypal"]
    assert (polled["status"], polled["seen"], polled["queued"], polled["refunds_queued"]) == ("ok", 2, 2, 1)
    assert out(cli("poll", "--source", "paypal", "--json"))["sources"]["paypal"]["queued"] == 0
    run_drain()
    assert len(made(world, f"paypal_{seen['id']}")) == 1
    [found] = made(world, f"paypal_{lost['id']}")
    assert found["received_amount"] == 6.0


def test_reconcile_backfill_and_payouts(paypal, receiver, world, cli):
    kept, gone = paypal.donate("25.00", "ida@example.org"), paypal.donate("30.00", "ida@example.org")
    never = paypal.donate("12.00", "ida@example.org")
    for capture in (kept, gone):
        deliver(receiver, paypal, paypal.event("PAYMENT.CAPTURE.COMPLETED", capture))
    paypal.withdraw("40.00")
    run_drain()
    deleted = made(world, f"paypal_{gone['id']}")[0]
    del world.crm.gifts[deleted["id"]]  # a person deleted it in the CRM
    report = out(cli("reconcile", "--from", "7d", "--source", "paypal", "--json"))
    status = {i["external_id"]: i["status"] for i in report["items"]}
    assert status == {f"paypal_{kept['id']}": "matched", f"paypal_{gone['id']}": "missing", f"paypal_{never['id']}": "missing"}
    dry = out(cli("backfill", "--since", "7d", "--source", "paypal", "--dry-run", "--json"))
    assert dry["new"] == 1
    deposits = out(cli("reconcile", "payouts", "--from", "7d", "--source", "paypal", "--json"))
    assert "40.00" in json.dumps(deposits)


def test_registration_keeps_the_webhook_id_and_heal_replays_what_never_came(paypal, receiver, world, env, cli, db):
    registered = cli("webhooks", "register", "--url", "https://sync.example.org", "--source", "paypal")
    assert registered.exit_code == 0, registered.output
    [hook] = paypal.webhooks
    assert hook["url"] == "https://sync.example.org/webhooks/paypal"
    assert {"PAYMENT.CAPTURE.COMPLETED", "CUSTOMER.DISPUTE.RESOLVED"} <= {e["name"] for e in hook["event_types"]}
    status = out(cli("webhooks", "status", "--source", "paypal", "--json"))
    assert "paypal" in json.dumps(status)
    capture = paypal.donate("25.00", "ida@example.org")
    paypal.event("PAYMENT.CAPTURE.COMPLETED", capture)  # sent by PayPal, never received
    healed = out(cli("webhooks", "heal", "--source", "paypal", "--json"))
    assert healed["replayed"] == 1, healed
    assert out(cli("webhooks", "heal", "--source", "paypal", "--json"))["replayed"] == 0
    run_drain()
    assert len(made(world, f"paypal_{capture['id']}")) == 1


def test_a_subscription_is_a_plan_its_donor_in_the_group_and_its_end_followed_up(paypal, receiver, world, cli, db, env):
    from synctool import mappings

    env["CRM_CONFIRM_AFTER_S"] = "0"
    mappings.put(db, "plans", "*", {"group_id": 704, "contact_report_type_id": 2183})  # the fake's "Monthly Donors"
    subscription = paypal.subscribe("15.00", "ada@example.org")
    body = paypal.event("BILLING.SUBSCRIPTION.ACTIVATED", subscription, resource_type="subscription")
    deliver(receiver, paypal, body)
    sale = paypal.charge(subscription["id"])
    deliver(receiver, paypal, paypal.event("PAYMENT.SALE.COMPLETED", sale, resource_type="sale"))
    run_drain()
    shown = out(cli("plans", "show", f"paypal:{subscription['id']}", "--json"))
    assert shown["status"] == "active" and [c["external_id"] for c in shown["charges"]] == [f"paypal_{sale['id']}"]
    cid = made(world, f"paypal_{sale['id']}")[0]["constituent_id"]
    assert [m["is_current"] for m in world.crm.group_memberships.values() if str(m["constituent_id"]) == str(cid)] == [True]
    subscription.update(status="CANCELLED", status_update_time=subscription["update_time"])
    deliver(receiver, paypal, paypal.event("BILLING.SUBSCRIPTION.CANCELLED", subscription, resource_type="subscription"))
    run_drain()
    [report] = [r for r in world.crm.contact_reports.values() if str(r["constituent_id"]) == str(cid)]
    assert report["text"].startswith(f"PayPal recurring plan {subscription['id']}")
    assert [m["is_current"] for m in world.crm.group_memberships.values() if str(m["constituent_id"]) == str(cid)] == [False]


REAL = Path(__file__).parent / "data" / "real_bodies" / "paypal"


def test_real_bodies_become_what_paypal_meant(paypal, receiver, world, cli):
    """PayPal's own events (tests/data/real_bodies/paypal/README.md names where each was published): a live capture
    becomes its gift (its order's payer, its fee and net), a subscription's payment in CAD is held for a person."""
    assert (
        cli("mappings", "overrides", "set", "paypal:custom:29b0b044-fbfe-4325-952e-20000d4a6caf", "--fund-id", "2400").exit_code
        == 0
    )
    payer = {"email_address": "buyer@example.org", "payer_id": "QYR5Z8XDVJNXQ", "name": {"given_name": "Rea", "surname": "Buyer"}}
    paypal.orders["1W5313654M9708630"] = {"id": "1W5313654M9708630", "status": "COMPLETED", "intent": "CAPTURE", "payer": payer,
                                          "purchase_units": [{"reference_id": "default", "description": "Donation"}]}  # fmt: skip
    paypal.subscriptions["I-37B4TLL0FAJJ"] = {"id": "I-37B4TLL0FAJJ", "status": "ACTIVE", "plan_id": "P-5ML4271244454362WXNWU5NQ",
                                              "subscriber": {"email_address": "sub@example.org", "name": {"given_name": "Sam"}}}  # fmt: skip
    for name in ("webhook-payment-capture-completed.json", "webhook-payment-sale-completed-cad.json"):
        assert deliver(receiver, paypal, (REAL / name).read_bytes())["status"] == "accepted"
    run_drain()
    [gift] = made(world, "paypal_02335565G34798738")
    assert (gift["received_amount"], gift["fund_id"]) == (23.99, 2400) and "PayPal fee 1.36, net 22.63" in gift["note"]
    assert gift["received_date"] == "2021-11-01"  # 17:39 UTC is the morning in California
    jobs = {j["entity_id"]: j for j in out(cli("syncs", "list", "--source", "paypal", "--json"))["items"]}
    assert jobs["44P499886K055384U"]["status"] == "review" and "CAD" in str(jobs["44P499886K055384U"]), jobs


def test_the_receiver_hands_verify_its_runtime(world, isolated):
    """The contract's ``WebhookSecrets.runtime``: the Runtime the receiver was built with (PayPal fetches its
    certificate through that Runtime's transport); none where nothing may be fetched."""
    from synctool import platforms
    from synctool.platforms.webhook import WebhookSecrets

    rt = helpers.runtime()
    assert platforms.webhook_secrets(rt).runtime is rt and WebhookSecrets().runtime is None


@pytest.mark.sqlite_only(reason="the certificate is kept beside a SQLite file; on PostgreSQL each process fetches it once")
def test_the_certificate_is_fetched_once_and_kept_beside_the_database(paypal, world, isolated):
    from synctool.web.receiver import create_app

    certs.forget()
    fetched = lambda: [e for e in world.recorders["paypal"].exchanges if "/notifications/certs/" in e["path"]]  # noqa: E731
    for n in range(2):  # two receivers, as after a restart: the second reads the kept certificate
        certs.forget() if n else None
        body = paypal.event("PAYMENT.CAPTURE.COMPLETED", paypal.donate("5.00", "ida@example.org"))
        with TestClient(create_app(helpers.runtime())) as receiver:
            assert deliver(receiver, paypal, body)["status"] == "accepted"
    assert len(fetched()) == 1
    [kept] = (isolated / "paypal-certs").iterdir()
    assert kept.stat().st_mode & 0o777 == 0o600 and b"BEGIN CERTIFICATE" in kept.read_bytes()


def test_the_mappings_page_offers_paypal_s_own_keys_by_name(paypal, db):
    paypal.donate("25.00", "ida@example.org", custom_id="spring-appeal", item="Spring appeal")
    named = PLATFORM.mappings.campaigns(db, helpers.runtime())
    assert named == {"paypal:custom:spring-appeal": "spring-appeal (PayPal custom_id)",
                     "paypal:item:Spring appeal": "Spring appeal (PayPal item)"}  # fmt: skip


def test_a_payment_whose_order_names_no_donor_fails_saying_so(paypal, receiver, cli):
    capture = paypal.donate("25.00", "ida@example.org")
    order_id = capture["supplementary_data"]["related_ids"]["order_id"]
    del paypal.orders[order_id]["payer"]
    deliver(receiver, paypal, paypal.event("PAYMENT.CAPTURE.COMPLETED", capture))
    run_drain()
    [job] = out(cli("syncs", "list", "--source", "paypal", "--json"))["items"]
    assert job["status"] == "failed" and "payer" in job["last_error"], job
