"""Tolerant where it may be, strict where it must be: per platform, the payload fields that decide the money, the
person or the idempotency key fail by name; every other field a model reads takes null, absence, another type
with the same meaning and words synctool does not know, and the gift goes on.

The table below is read off the models themselves (``validation.strict_fields``: every field not marked
``Lenient``); making a field lenient, or adding a strict one, changes it, so either is a visible decision."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from synctool.fakes import samples
from synctool.platforms import payment_events
from synctool.platforms.givebutter import webhook as givebutter
from synctool.platforms.mailchimp import webhook as mailchimp
from synctool.platforms.portal.webhook import record_models
from synctool.platforms.square import webhook as square
from synctool.validation import is_lenient, payload, strict_fields
from tests.flow_helpers import CUSTOMER, add_order, give, job, pos_event, run_drain
from tests.test_portal import portal, seed_user, stripe  # noqa: F401  (portal: a fixture)

MODELS: dict[str, list[Any]] = {
    "givebutter": [givebutter.Transaction, givebutter.Ticket, givebutter.Campaign, givebutter.Plan, givebutter.Refund],
    "square": [
        square.Notification,
        square.OrderSummary,
        square.PaymentSummary,
        square.PaymentRefund,
        square.Order,
        square.Customer,
    ],
    "mailchimp": [mailchimp.AudienceEvent],
    "stripe": [payment_events.PaymentEvent, payment_events.PortalObject, payment_events.Charge],
}

#: the strict fields, by platform, as ``Model.path`` (``[]``: each item of a list)
STRICT = {
    "givebutter": {
        # the key, the state, the money (and what of it is deductible), the refunded parts, the donor's e-mail
        "Transaction.id", "Transaction.status", "Transaction.amount", "Transaction.currency", "Transaction.email",
        "Transaction.tax_deductible_amount", "Transaction.fair_market_value_amount",
        "Transaction.transactions", "Transaction.transactions[].amount", "Transaction.transactions[].refunded",
        "Ticket.id", "Ticket.transaction_id",
        "Campaign.id",
        "Plan.id",
        "Refund.id", "Refund.transaction_id", "Refund.amount", "Refund.currency", "Refund.refunded",
        "Refund.transactions", "Refund.transactions[].amount", "Refund.transactions[].refunded",
    },
    "square": {
        "Notification.event_id", "Notification.type", "Notification.data", "Notification.data.id",
        "OrderSummary.order_id",
        "PaymentSummary.order_id",
        "PaymentSummary.total_money", "PaymentSummary.total_money.amount", "PaymentSummary.total_money.currency",
        "PaymentSummary.amount_money", "PaymentSummary.amount_money.amount", "PaymentSummary.amount_money.currency",
        "PaymentRefund.id", "PaymentRefund.status", "PaymentRefund.payment_id", "PaymentRefund.order_id",
        "PaymentRefund.unlinked", "PaymentRefund.amount_money", "PaymentRefund.amount_money.amount",
        "PaymentRefund.amount_money.currency",
        # the location decides whether a sale is deductible (a shop); the customer is the donor
        "Order.id", "Order.state", "Order.location_id", "Order.customer_id",
        "Order.total_money", "Order.total_money.amount", "Order.total_money.currency",
        "Order.tenders", "Order.tenders[].customer_id", "Order.returns", "Order.returns[].source_order_id",
        "Customer.email_address",
    },
    "mailchimp": {
        # type, fired_at, list id and e-mail are the delivery's dedup key; the e-mail is the person
        "AudienceEvent.type", "AudienceEvent.fired_at", "AudienceEvent.data", "AudienceEvent.data.list_id",
        "AudienceEvent.data.email",
    },
    "stripe": {
        "PaymentEvent.id", "PaymentEvent.type", "PaymentEvent.data", "PaymentEvent.data.object",
        # metadata carries the portal's ids (portal_payment_id: the gift's key)
        "PortalObject.id", "PortalObject.metadata", "PortalObject.payment_status", "PortalObject.payment_intent",
        "PortalObject.amount_total", "PortalObject.currency", "PortalObject.status", "PortalObject.amount",
        "PortalObject.amount_received",
        "Charge.id", "Charge.amount", "Charge.currency", "Charge.amount_refunded", "Charge.refunded", "Charge.payment_intent",
        "Charge.metadata", "Charge.refunds", "Charge.refunds.data", "Charge.refunds.data[].id",
        "Charge.refunds.data[].amount", "Charge.refunds.data[].status",
    },
}  # fmt: skip


def strict_table(models: list[Any]) -> set[str]:
    return {f"{m.__name__}.{path}" for m in models for path in strict_fields(m)}


@pytest.mark.parametrize("platform", sorted(MODELS))
def test_the_strict_fields_of_each_platform_are_the_listed_ones(platform):
    found = strict_table(MODELS[platform])
    assert found == STRICT[platform], (
        f"{platform}: made strict {sorted(found - STRICT[platform])}, made lenient {sorted(STRICT[platform] - found)}"
    )


def test_the_portals_records_are_its_own_contract_and_strict_throughout():
    """The portal's pushes are synctool's own documented format (docs/webhooks.md): a record with a field that does
    not fit fails its push's job, naming the field. No field of them is lenient."""
    assert not [(kind, name) for kind, model in record_models().items() for name in model.model_fields if is_lenient(model, name)]


# -- lenient fields: the gift goes on ------------------------------------------------------------------------

ODD = {"none": None, "object": {"odd": [1]}, "text": "odd", "number": 7}


def lenient_fields(model: Any) -> list[str]:
    return [name for name in model.model_fields if is_lenient(model, name)]


@pytest.mark.parametrize("odd", sorted(ODD))
def test_a_givebutter_transaction_with_odd_values_in_every_lenient_field_is_a_gift(coded, receiver, db, odd):
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn.update({name: copy.deepcopy(ODD[odd]) for name in lenient_fields(givebutter.Transaction)}, id=f"ODD{odd}")
    txn["utm_parameters"] = ODD[odd]  # not read at all
    txn["transactions"][0].update(id=ODD[odd], plan_id=ODD[odd], refunded_at=ODD[odd])
    first = give(receiver, txn)
    run_drain()
    row = job(db, first["job_id"])
    assert row["status"] == "succeeded", row["last_error"]
    [gift] = coded.crm.gifts.values()
    assert gift["external_id"] == f"donations_ODD{odd}" and gift["received_amount"] == 10.0
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", gift["received_date"])  # a time that is not one is none: dated today


def test_a_givebutter_transaction_without_its_lenient_fields_is_a_gift(coded, receiver, db):
    txn = {k: v for k, v in samples.GIVEBUTTER_TRANSACTION.items() if k not in lenient_fields(givebutter.Transaction)}
    first = give(receiver, {**txn, "id": "BARE1"})
    run_drain()
    assert job(db, first["job_id"])["status"] == "succeeded"
    assert [g["external_id"] for g in coded.crm.gifts.values()] == ["donations_BARE1"]


def test_the_recorded_recurring_plan_charge_with_a_null_opt_in_is_a_gift(coded, receiver, db):
    """Recorded from the live API: a charge of a recurring plan, ``communication_opt_in`` and ``utm_parameters``
    null; it failed for good ("communication_opt_in: expected true or false, got None")."""
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn.update(id="PLANCHG1", communication_opt_in=None, utm_parameters=None, plan_id="plan_7Q")
    first = give(receiver, txn)
    run_drain()
    row = job(db, first["job_id"])
    assert row["status"] == "succeeded", row["last_error"]
    [gift] = coded.crm.gifts.values()
    assert gift["external_id"] == "donations_PLANCHG1" and "recurring plan plan_7Q" in gift["note"]


@pytest.mark.parametrize(
    ("given", "consent"),
    [(True, True), ("true", True), (1, True), ("yes", True), (False, False), ("no", False), (0, False), (None, False),
     ("maybe", False), ([], False)],
)  # fmt: skip
def test_a_boolean_takes_its_other_spellings_and_anything_else_is_its_default(given, consent):
    found = payload(givebutter.Transaction, {"id": "x", "amount": 5, "communication_opt_in": given}, "a transaction")
    assert found.communication_opt_in is consent


@pytest.mark.off_contract  # the fake serves an order and a customer with odd values on purpose
@pytest.mark.parametrize("odd", sorted(ODD))
def test_a_square_order_with_odd_values_in_every_lenient_field_is_a_gift(coded, receiver, db, odd):
    customer = {**CUSTOMER, **{name: copy.deepcopy(ODD[odd]) for name in lenient_fields(square.Customer)}}
    order = add_order(coded, f"SQODD{odd}", "COMPLETED", customer=customer, tenders=[{"id": "t", "type": ODD[odd]}])
    order.update({name: copy.deepcopy(ODD[odd]) for name in lenient_fields(square.Order)})
    first = pos_event(receiver, samples.square_order_event(order["id"]))
    run_drain()
    row = job(db, first["job_id"])
    assert row["status"] == "succeeded", row["last_error"]
    [gift] = coded.crm.gifts.values()
    assert gift["external_id"] == f"pos_order_SQODD{odd}" and gift["received_amount"] == 25.0
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", gift["received_date"])


@pytest.mark.parametrize("odd", sorted(ODD))
def test_a_stripe_checkout_with_odd_values_in_every_lenient_field_is_a_gift(portal, db, odd):  # noqa: F811
    seed_user(portal)
    session = samples.stripe_session("payodd", "u1", 4000, portal_payment_type="donation")
    session.update({name: copy.deepcopy(ODD[odd]) for name in lenient_fields(payment_events.PortalObject)})
    stripe(portal, "checkout.session.completed", session)
    run_drain()
    [gift] = portal.world.crm.gifts.values()
    assert gift["external_id"] == "payodd" and gift["received_amount"] == 40.0


def test_a_mailchimp_event_with_odd_merge_fields_still_names_its_address():
    body = b"type=unsubscribe&fired_at=2026-10-01+10%3A00%3A00&data[list_id]=a1&data[email]=ann%40example.org&data[merges]=odd"
    event = mailchimp.parse_webhook(body)
    assert event.job.entity_type == "unsubscribe" and event.job.email == "ann@example.org" and event.job.name is None


# -- strict fields: the job fails naming the field -----------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"amount": "ten dollars"}, "amount: not an amount: 'ten dollars'"),
        ({"amount": None}, "amount: not an amount: None"),
        ({"status": None}, "status: expected a string, got None"),
        ({"email": 42}, "email: expected a string, got 42"),
        ({"tax_deductible_amount": "most"}, "tax_deductible_amount: not an amount"),
        ({"transactions": [{"amount": "some", "refunded": False}]}, "transactions.0.amount: not an amount"),
    ],
)
def test_a_bad_strict_givebutter_field_fails_the_job_naming_it(coded, receiver, db, change, named):
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn.update(id="STRICT1", **change)
    first = give(receiver, txn)
    run_drain()
    row = job(db, first["job_id"])
    assert row["status"] == "failed" and named in row["last_error"], row["last_error"]
    assert not coded.crm.gifts


def test_a_givebutter_transaction_without_an_amount_fails_naming_it(coded, receiver, db):
    txn = {k: v for k, v in samples.GIVEBUTTER_TRANSACTION.items() if k != "amount"}
    first = give(receiver, txn)
    run_drain()
    row = job(db, first["job_id"])
    assert row["status"] == "failed" and "amount: is required" in row["last_error"]


@pytest.mark.off_contract  # the fake serves an order whose total is not a number, on purpose
def test_a_square_order_whose_total_is_not_a_number_fails_naming_it(coded, receiver, db):
    order = add_order(coded, "SQBAD", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}])
    order["total_money"]["amount"] = "lots"
    first = pos_event(receiver, samples.square_order_event("SQBAD"))
    run_drain()
    row = job(db, first["job_id"])
    assert row["status"] == "failed" and "total_money.amount: expected an integer, got 'lots'" in row["last_error"]
    assert not coded.crm.gifts


def test_a_stripe_session_whose_amount_is_not_a_number_is_refused_naming_it(portal):  # noqa: F811
    from synctool.platforms.stripe.webhook import sign
    from tests.conftest import TEST_SECRETS

    session = samples.stripe_session("paybad", "u1", 4000)
    session["amount_total"] = "lots"
    body = samples.stripe_event("checkout.session.completed", session)
    r = portal.post(
        "/webhooks/payments", content=body, headers={"Stripe-Signature": sign(body, TEST_SECRETS["PAYMENTS_WEBHOOK_SECRET"])}
    )
    assert r.status_code == 400 and "amount_total: expected an integer, got 'lots'" in json.dumps(r.json())
