"""The sync rules: a PayPal payment becomes one CRM gift (a subscription's payment coded recurring), coded by the
mappings an admin set with PayPal's own keys; a refund, a reversal or a lost dispute lowers (or deletes, by the
refund policy) the gift it takes money back from.

The donor: a capture's webhook names no payer (``capture-2`` has none), so the handler reads the capture's order
(``supplementary_data.related_ids.order_id`` -> ``GET /v2/checkout/orders/{id}``: ``payer``, the first item, the
``payment_source``); a capture without an order (a Donate button's) is read from Transaction Search, which lists it
up to ~3 h late (the job waits for it, without spending attempts). A subscription's sale names its subscription
(``billing_agreement_id`` -> ``GET /v1/billing/subscriptions/{id}``: ``subscriber``, ``plan_id``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from synctool.platform import (
    Event,
    Job,
    JsonObject,
    Outcome,
    PermanentError,
    Person,
    Skip,
    Wait,
    gift_date,
    mappings,
    parse_iso,
    payload,
    plans,
    refunds,
    text,
)
from synctool.platforms.paypal import transactions
from synctool.platforms.paypal.client import PayPalClient
from synctool.platforms.paypal.models import PLATFORM_NAME, ROLE, Captured, Donation, Money, RefundData, external_id
from synctool.platforms.paypal.plans import read as read_plan

#: how long a capture without an order waits for Transaction Search to list it (PayPal: up to ~3 h behind)
LAG_LIMIT = timedelta(hours=6)


def _first(values: object) -> JsonObject:
    return values[0] if isinstance(values, list) and values and isinstance(values[0], dict) else {}


def _obj(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def from_order(capture: JsonObject, order: JsonObject) -> dict[str, Any]:
    """A capture (``capture-2``) and its order (``order``) as a ``Donation``'s fields."""
    breakdown = _obj(capture.get("seller_receivable_breakdown"))
    unit = _first(order.get("purchase_units"))
    item = _first(unit.get("items"))
    payer = _obj(order.get("payer"))
    source = next(iter(_obj(order.get("payment_source"))), "paypal")
    return {
        "id": capture.get("id"),
        "amount": capture.get("amount"),
        "payer": {
            "email_address": payer.get("email_address"),
            "name": payer.get("name"),
            "address": payer.get("address"),
            "phone": text(_obj(_obj(_obj(payer.get("phone")).get("phone_number"))).get("national_number")),
        },  # fmt: skip
        "fee": _obj(breakdown.get("paypal_fee")).get("value"),
        "net": _obj(breakdown.get("net_amount")).get("value"),
        "custom_id": capture.get("custom_id") or unit.get("custom_id"),
        "invoice_id": capture.get("invoice_id") or unit.get("invoice_id"),
        "item": item.get("name") or unit.get("description"),
        "source": source,
        "create_time": capture.get("create_time"),
        "order_id": order.get("id"),
    }


def from_sale(sale: JsonObject, subscription: JsonObject) -> dict[str, Any]:
    """A subscription's payment (a v1 ``sale``) and its subscription as a ``Donation``'s fields."""
    amount = _obj(sale.get("amount"))
    subscriber = _obj(subscription.get("subscriber"))
    shipping = _obj(subscriber.get("shipping_address"))
    return {
        "id": sale.get("id"),
        "amount": {"currency_code": amount.get("currency"), "value": amount.get("total")},
        "payer": {
            "email_address": subscriber.get("email_address"),
            "name": subscriber.get("name"),
            "address": shipping.get("address"),
        },  # fmt: skip
        "fee": _obj(sale.get("transaction_fee")).get("value"),
        "custom_id": sale.get("custom") or subscription.get("custom_id"),
        "invoice_id": sale.get("invoice_number"),
        "subscription_id": sale.get("billing_agreement_id"),
        "plan_id": subscription.get("plan_id"),
        "create_time": sale.get("create_time"),
    }


def _searched(client: PayPalClient, capture: JsonObject) -> dict[str, Any]:
    """A capture without an order, read from Transaction Search (its payer and item), or ``Wait`` while PayPal has
    not listed it yet (the search runs about three hours behind)."""
    now = datetime.now(UTC)
    at = parse_iso(str(capture.get("create_time") or "")) or now
    found = client.transactions(at - timedelta(days=1), min(at + timedelta(days=1), now), transaction_id=str(capture.get("id")))
    rows = [r for r in found if transactions.is_payment(r)]
    if not rows and now - at < LAG_LIMIT:
        raise Wait(f"PayPal's Transaction Search does not list capture {capture.get('id')} yet (it runs ~3 h behind)")
    if not rows:
        raise PermanentError(f"PayPal's Transaction Search does not list capture {capture.get('id')}: no payer to give it to")
    searched = transactions.donation(rows[0])
    breakdown = _obj(capture.get("seller_receivable_breakdown"))
    return {**searched, "amount": capture.get("amount") or searched["amount"],
            "fee": _obj(breakdown.get("paypal_fee")).get("value") or searched["fee"],
            "net": _obj(breakdown.get("net_amount")).get("value") or searched["net"]}  # fmt: skip


def donation_of(event: Event, job: Job) -> Donation:
    """The payment as one ``Donation``: the poll's (already whole), else the webhook's resource with its payer."""
    queued = event.payload.get("donation")
    if queued is not None:
        return payload(Donation, queued, "the PayPal payment")
    resource = _obj(event.payload.get("resource") or event.data)
    if not resource:
        raise Skip("no PayPal payment in the job")
    if job.row["entity_type"] == "sale":  # its money checked before its subscriber is looked up
        amount = _obj(resource.get("amount"))
        payload(Money, {"currency_code": amount.get("currency"), "value": amount.get("total")}, "the PayPal sale's amount")
    else:
        payload(Captured, resource, "the PayPal capture")
    client = job.client(ROLE, PayPalClient)
    if job.row["entity_type"] == "sale":
        agreement = text(resource.get("billing_agreement_id"))
        subscription = client.subscription(agreement) if agreement else {}
        return payload(Donation, from_sale(resource, subscription), "the PayPal subscription payment")
    order_id = text(_obj(_obj(resource.get("supplementary_data")).get("related_ids")).get("order_id"))
    fields = from_order(resource, client.order(order_id)) if order_id else _searched(client, resource)
    return payload(Donation, fields, "the PayPal payment")


def coding(conn: Any, gift: Donation, default_fund_id: int | None) -> dict[str, Any]:
    """Fund, campaign, appeal, category and acknowledgement from the mappings, most particular first: the
    overrides of the payment's ``custom_id`` (``paypal:custom:<id>``), of its item (``paypal:item:<name>``) and of
    its subscription plan (``paypal:plan:<id>``), then the type defaults ``paypal:recurring`` (a subscription's
    payment) and ``paypal:default``, then ``paypal.default_fund_id``; the payment and gift type from
    ``paypal:<source>`` (``paypal``, ``card``, ``venmo``)."""
    keys = [f"{ROLE}:custom:{gift.custom_id}" if gift.custom_id else None, f"{ROLE}:item:{gift.item}" if gift.item else None,
            f"{ROLE}:plan:{gift.plan_id}" if gift.plan_id else None]  # fmt: skip
    layers = [mappings.get(conn, "campaign_override", k) for k in keys if k]
    layers += [mappings.get(conn, "type_default", f"{ROLE}:recurring")] if gift.subscription_id or gift.recurring else []
    layers += [mappings.get(conn, "type_default", f"{ROLE}:default"), {"fund_id": default_fund_id}]
    return {**mappings.coding(*layers), **mappings.payment_coding(conn, f"{ROLE}:{gift.source.lower()[:40]}")}


def gift_day(gift: Donation, section: Any, organisation_zone: str | None) -> str:
    """The gift's day as both the handler and reconcile write it: in PayPal's account zone, else the organisation's."""
    return gift_date(gift.create_time, section.timezone, organisation_zone)


def gift_body(job: Job, gift: Donation) -> dict[str, Any]:
    section = job.config.section(ROLE)
    note = [f"PayPal payment {gift.id}"]
    if gift.item:
        note.append(f"for {gift.item[:200]}")
    if gift.subscription_id:
        note.append(f"subscription {gift.subscription_id}")
    if gift.fee is not None:
        note.append(f"PayPal fee {gift.fee}" + (f", net {gift.net}" if gift.net is not None else ""))
    return {
        "external_id": external_id(gift.id),
        "received_amount": float(gift.amount.value),
        "received_date": gift_day(gift, section, job.config.timezone),
        "note": "; ".join(note),
        **coding(job.conn, gift, section.default_fund_id),
    }


def person(gift: Donation) -> Person:
    name = gift.payer.name
    address = gift.payer.address.person_address() if gift.payer.address else {}
    return Person(name.given_name if name else None, name.surname if name else None, gift.payer.email_address,
                  phone=gift.payer.phone, address=address)  # fmt: skip


def payment(event: Event, job: Job) -> Outcome:
    """``capture`` and ``sale`` jobs: one CRM gift."""
    gift = donation_of(event, job)
    if gift.amount.value <= 0:
        raise Skip(f"no money (PayPal payment {gift.id} of {gift.amount.value})")
    constituent_id, gift_id, created = job.make_gift(person(gift), gift_body(job, gift), currency=gift.amount.currency_code)
    said = "gift created" if created else "gift already in the CRM"
    if gift.subscription_id:  # a subscription's payment: its plan's charge (the plan read once when unrecorded)
        plans.record_charge(job.unit, ROLE, gift.subscription_id, gift.id, gift.amount.value, gift.amount.currency_code,
                            gift.create_time, external_id=external_id(gift.id), entity_type=str(job.row["entity_type"]))  # fmt: skip
        subscription = gift.subscription_id
        known = plans.known_from_charge(job, ROLE, subscription, gift.id, constituent_id, lambda: read_plan(job, subscription))
        said += f"; {known}" if known else ""
    return Outcome("succeeded", said + job.said(), crm_constituent_id=constituent_id, crm_gift_id=gift_id,
                   amount=str(gift.amount.value))  # fmt: skip


capture = payment
sale = payment


def refund(event: Event, job: Job) -> Outcome:
    """A refund, a reversal or a lost dispute: by the refund policy, once. A reversal and a lost dispute of one
    payment are one taking-back (PayPal reverses the payment when it decides a dispute for the buyer): both are
    keyed by the payment, so the second changes nothing."""
    data = payload(RefundData, event.payload.get("refund") or event.data, "the PayPal refund")
    section = job.config.section(ROLE)
    on = gift_date(data.create_time, section.timezone, job.config.timezone)
    key = f"{ROLE}:reversal:{data.payment_id}" if data.kind in ("reversal", "dispute") else ""
    taken = refunds.Refund(ROLE, PLATFORM_NAME, data.id, external_id(data.payment_id), data.amount.value, on, key=key,
                           currency=data.amount.currency_code)  # fmt: skip
    return refunds.run(job.refund_job(), taken)
