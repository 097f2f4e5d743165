"""PayPal as a platform package (issue 60): its signed webhooks, a donation as one gift, refunds, reversals and
lost disputes, subscriptions' payments, the backup poll, reconcile, backfill, payouts, registration and heal, its
fake held to PayPal's own OpenAPI files (``tests/specs/paypal.json``), through the receiver, the CLI and drain."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from synctool.platform import strict_fields
from synctool.platforms.paypal import PLATFORM
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
