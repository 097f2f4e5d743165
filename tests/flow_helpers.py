"""Deliveries as the platforms send them, and drain, for the end-to-end tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from synctool.fakes import samples
from synctool.platforms.runner import runner
from synctool.queue.worker import drain
from tests.conftest import POS_URL, TEST_SECRETS
from tests.helpers import runtime


def days_ago(days: float) -> str:
    """An ISO-8601 UTC time this many days before now: a test's dates are built from the clock, so it passes on any day."""
    return (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def yesterday_at(clock: str) -> str:
    """Yesterday (UTC) at ``clock`` UTC: in the past, inside any poll window, and the same calendar day in every
    time zone of the Americas (18:30Z is morning or afternoon from Hawaii to Newfoundland)."""
    return f"{(datetime.now(UTC) - timedelta(days=1)).date()}T{clock}Z"


def give(receiver, txn: dict, event: str = "transaction.succeeded", event_id: str | None = None):
    r = receiver.post(
        "/webhooks/donations",
        content=samples.givebutter(event, txn, event_id),
        headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]},
    )
    assert r.status_code == 200, r.text
    return r.json()


def pos_event(receiver, body: bytes):
    sig = samples.square_signature(TEST_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"], POS_URL, body)
    r = receiver.post("/webhooks/pos", content=body, headers={"x-square-hmacsha256-signature": sig})
    assert r.status_code == 200, r.text
    return r.json()


def run_drain():
    # drain stops when nothing is due; the cap only bounds a test gone wrong (a loaded 2-core machine took over
    # 20 s for the year-end test's 250 gifts)
    return drain(runner(runtime()), max_seconds=120)


def job(db, job_id: str):
    return db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()


def add_order(
    world, order_id: str, state: str, *, tenders=None, customer: dict | None = None, cents=2500, location="FPYCBCHYMXFK1"
):
    order = {
        "id": order_id,
        "location_id": location,
        "state": state,
        "created_at": yesterday_at("18:30:00"),
        "total_money": {"amount": cents, "currency": "USD"},
        "tenders": tenders or [],
        "line_items": [{"name": "Tote bag", "quantity": "1"}],
    }
    if customer:
        world.square.customers[customer["id"]] = customer
        order["customer_id"] = customer["id"]
    world.square.orders[order_id] = order
    return order


CUSTOMER = {
    "id": "CUST1",
    "given_name": "Grace",
    "family_name": "Hopper",
    "email_address": "grace@example.org",
    "address": {
        "address_line_1": "1 Navy Way",
        "locality": "Arlington",
        "administrative_district_level_1": "VA",
        "postal_code": "22201",
        "country": "US",
    },
}
