"""Stripe donations (``synctool/platforms/stripe_donations``): a Stripe payment the member portal did not make
becomes one CRM gift while ``platforms:`` names stripe-donations; its events come on Stripe's endpoint
(``/webhooks/payments``), claimed from Stripe's adapter (``Platform.claims``). Through the receiver, drain and the
CLI against the fakes (Stripe's fake serves both platforms; every exchange is held to tests/specs/stripe.json)."""

from __future__ import annotations

import json

import pytest

from synctool.platforms.stripe import fake_payments as stripe_fake
from synctool.platforms.stripe.webhook import sign
from tests.conftest import TEST_SECRETS
from tests.flow_helpers import job, run_drain

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
