"""Givebutter, the donation platform: webhook verification and parsing (API client: ``client.py``).

Givebutter sends ``{event, id, data}``; ``data`` is the full REST resource. Its ``Signature`` header
carries the webhook's signing secret itself (not a digest of the body), so the check is a
constant-time comparison with ``DONATIONS_WEBHOOK_SECRET`` (without it the receiver refuses the deliveries:
``Webhook.secret``).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Optional, Union

from pydantic import BeforeValidator

from synctool.platform import (
    Event,
    InvalidInput,
    InvalidSignature,
    JobSpec,
    JsonObject,
    Lenient,
    Moment,
    Payload,
    PostalAddress,
    Text,
    WebhookSecrets,
    parse,
    parse_json_object,
    text,
)

KEPT_HEADERS = ("content-type", "user-agent")  # `Signature` is the secret itself: never stored
SYNCED_EVENTS = ("transaction.succeeded", "ticket.created", "campaign.created", "campaign.updated")
KNOWN_EVENTS = SYNCED_EVENTS + (
    "refund.created",
    "contact.created",
    "plan.canceled",
    "plan.created",
    "plan.failed",
    "plan.paused",
    "plan.resumed",
    "plan.updated",
)


def _dollars(value: object) -> Decimal:
    from synctool.platform import dollars

    return dollars(value)  # ValueError "not an amount: ..." names the field through pydantic


#: Givebutter money: dollars as a number or a string (``10``, ``0.61``), exact to the cent
Dollars = Annotated[Decimal, BeforeValidator(_dollars)]


class Address(PostalAddress):
    model_config = PostalAddress.named(line_1="address_1", line_2="address_2", postal_code="zipcode")


class Recipient(Payload):
    name: Lenient[Optional[str]] = None
    email: Lenient[Optional[str]] = None


class Dedication(Payload):
    """``{type: in_memory_of|in_honor_of, name, recipient{name, email}}``."""

    type: Lenient[Optional[str]] = None
    name: Lenient[Optional[str]] = None
    recipient: Lenient[Optional[Recipient]] = None


class GivingSpace(Payload):
    message: Lenient[Optional[str]] = None


class CustomField(Payload):
    id: Lenient[Optional[Text]] = None
    field_id: Lenient[Optional[Text]] = None
    title: Lenient[Optional[str]] = None
    value: Lenient[object] = None


class Part(Payload):
    """A sub-transaction (``transactions[]``)."""

    id: Lenient[Optional[Text]] = None
    plan_id: Lenient[Optional[Text]] = None
    amount: Optional[Dollars] = None
    refunded: bool = False
    refunded_at: Lenient[Optional[Moment]] = None
    #: ``{type: donation|item, subtype: donation|fee|ticket|product|shipping, quantity, ...}`` (A3.1): an event
    #: order's tickets are counted from them
    line_items: Lenient[list[JsonObject]] = []


class Transaction(Payload):
    """The ``data`` of ``transaction.succeeded`` and the items of ``GET /v1/transactions`` (money in dollars)."""

    id: Text
    number: Lenient[Optional[Text]] = None
    campaign_id: Lenient[Optional[Text]] = None
    campaign_code: Lenient[Optional[str]] = None
    fund_id: Lenient[Optional[Text]] = None
    fund_code: Lenient[Optional[str]] = None
    first_name: Lenient[Optional[str]] = None
    last_name: Lenient[Optional[str]] = None
    company: Lenient[Optional[str]] = None
    email: Optional[str] = None
    phone: Lenient[Optional[str]] = None
    address: Lenient[Optional[Address]] = None
    status: str = "succeeded"
    method: Lenient[Optional[str]] = None
    payment_method: Lenient[Optional[str]] = None
    amount: Dollars
    #: ISO 4217 (``USD``): the money's currency (``crm.currency``: another than the organisation's is held)
    currency: Optional[str] = None
    #: the platform's processing fee, and the part of it the donor chose to cover (both in ``amount``)
    fee: Lenient[Optional[Dollars]] = None
    fee_covered: Lenient[Optional[Dollars]] = None
    #: what the donor may deduct: tickets and auction items give back a fair market value
    tax_deductible_amount: Optional[Dollars] = None
    fair_market_value_amount: Optional[Dollars] = None
    #: set on each charge of a recurring plan
    plan_id: Lenient[Optional[Text]] = None
    #: the peer-to-peer fundraiser whose page took the gift, and their team (givebutter-square.md A7)
    member_id: Lenient[Optional[Text]] = None
    member_name: Lenient[Optional[str]] = None
    team_id: Lenient[Optional[Text]] = None
    team_name: Lenient[Optional[str]] = None
    transacted_at: Lenient[Optional[Moment]] = None
    created_at: Lenient[Optional[Moment]] = None
    timezone: Lenient[Optional[str]] = None
    giving_space: Lenient[Optional[GivingSpace]] = None
    dedication: Lenient[Union[Dedication, str, None]] = None
    custom_fields: Lenient[list[CustomField]] = []
    transactions: list[Part] = []
    #: the donor agreed to hear from the organisation (e-mail consent); real bodies hold true, false or null
    communication_opt_in: Lenient[bool] = False


#: the campaign cache (``settings.cache_*``): Givebutter campaign id -> the campaign as Givebutter sent it
CAMPAIGNS = "donations:campaigns"


class Ticket(Payload):
    id: Text
    transaction_id: Optional[Text] = None


class Campaign(Payload):
    id: Text
    title: Lenient[Optional[str]] = None
    type: Lenient[Optional[str]] = None
    timezone: Lenient[Optional[str]] = None


class Plan(Payload):
    """A recurring plan (``plan.*`` data; ``GET /v1/plans`` items; ``GET /v1/plans/{id}``): who gives, how much, how
    often. Fields and their sources: tests/data/givebutter_plans/README.md. Lenient on every field but the id (no
    money is decided from a plan: its charges are transactions); times are Givebutter's ``YYYY-MM-DD HH:MM:SS`` in UTC (``plan_moment``)."""

    id: Text
    first_name: Lenient[Optional[str]] = None
    last_name: Lenient[Optional[str]] = None
    email: Lenient[Optional[str]] = None
    #: null in production (MissionBit's "nullable phone")
    phone: Lenient[Optional[str]] = None
    #: an integer per BROTSKY, a string per GB-API; absent from the 2023 recording and maybe null
    contact_id: Lenient[Optional[Text]] = None
    #: dollars, a number as recorded (GB-API types it a string: both are read); no gift is made from it (each charge
    #: is a transaction of its own), so an unreadable one is left out, not refused
    amount: Lenient[Optional[Dollars]] = None
    #: monthly, quarterly or yearly (no other value seen)
    frequency: Lenient[Optional[str]] = None
    #: active confirmed; paused, cancelled (two l), ended, past_due, past_due_failed from one production source only
    status: Lenient[Optional[str]] = None
    method: Lenient[Optional[str]] = None
    fee_covered: Lenient[Optional[Dollars]] = None
    created_at: Lenient[Optional[str]] = None
    start_at: Lenient[Optional[str]] = None
    #: a date at midnight (``2023-12-24 00:00:00``): the next charge's day
    next_bill_date: Lenient[Optional[str]] = None
    #: GB-API and BROTSKY; absent from the 2023 recording
    canceled_at: Lenient[Optional[str]] = None
    #: UNCONFIRMED (GB-API only): when present, the moment the plan last changed
    updated_at: Lenient[Optional[str]] = None


#: the plan events (the live webhook enum); each queues a plan job (``plans.py``)
PLAN_EVENTS = ("plan.created", "plan.updated", "plan.paused", "plan.resumed", "plan.canceled", "plan.failed")
#: plan events a person should hear about (someone may call the donor): followed up in the CRM when mapped
PLAN_ALERTS = ("plan.canceled", "plan.failed", "plan.paused")


def plan_moment(value: object) -> str | None:
    """A plan's time as ISO 8601 UTC (``2023-11-24T18:30:47Z``): Givebutter writes ``YYYY-MM-DD HH:MM:SS`` in UTC
    with no offset (BROTSKY's samples put ``UTC`` before it; the 2023 documented examples an ISO ``...Z``)."""
    from synctool.platform import parse_iso

    found = text(value)
    if not found:
        return None
    parsed = parse_iso(found.removeprefix("UTC ").strip())
    if parsed is None:
        return None
    return parsed.strftime("%Y-%m-%dT%H:%M:%SZ")


class Refund(Payload):
    """``refund.created``'s data: a refund object (``id``, ``transaction_id``, ``amount``, ``created_at``) or
    the refunded transaction itself (``id``, ``amount``, ``refunded``, ``refunded_at``, ``transactions[]``);
    Givebutter publishes no schema."""

    id: Optional[Text] = None
    transaction_id: Optional[Text] = None
    amount: Optional[Dollars] = None
    #: ISO 4217, when the data is the refunded transaction (a refund object names none: its transaction's)
    currency: Optional[str] = None
    refunded: bool = False
    refunded_at: Lenient[Optional[Moment]] = None
    created_at: Lenient[Optional[Moment]] = None
    timezone: Lenient[Optional[str]] = None
    transactions: list[Part] = []


def external_id(transaction_id: object) -> str:
    return f"donations_{transaction_id}"


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    given = headers.get("signature") or ""
    if not given:
        raise InvalidSignature("missing Signature header", "Givebutter sends the webhook's signing secret in it")
    if not hmac.compare_digest(given.encode(), (secrets.get("DONATIONS_WEBHOOK_SECRET") or "").encode()):
        raise InvalidSignature("Signature header does not match DONATIONS_WEBHOOK_SECRET")


def supporter_name(data: Mapping[str, object]) -> str | None:
    name = " ".join(p for p in (text(data.get("first_name")), text(data.get("last_name"))) if p)
    return name or text(data.get("company")) or text(data.get("name"))


@dataclass
class RefundDetails:
    """What a ``refund.created`` says: the refunded transaction, the amount, and whether that amount is the
    transaction's whole refunded total so far (the transaction shape) rather than one refund's."""

    transaction_id: Optional[str]
    amount: Optional[Decimal]
    cumulative: bool
    refund_id: Optional[str]
    moment: Optional[str]


def refunded_parts(refund: Refund) -> Decimal:
    """What a transaction's refunded parts (``transactions[]`` with ``refunded: true``) add up to; 0 when none."""
    return sum((t.amount or Decimal(0) for t in refund.transactions if t.refunded), Decimal(0))


def refund_details(refund: Refund) -> RefundDetails:
    if refund.transaction_id:  # a refund object
        return RefundDetails(refund.transaction_id, refund.amount, False, refund.id, refund.created_at)
    parts = [t for t in refund.transactions if t.refunded]
    moment = refund.refunded_at or next((t.refunded_at for t in parts if t.refunded_at), None) or refund.created_at
    if parts:
        return RefundDetails(refund.id, refunded_parts(refund), True, None, moment)
    return RefundDetails(refund.id, refund.amount if refund.refunded else None, True, None, moment)


def parse_webhook(body: bytes) -> Event:
    envelope = parse_json_object(body)
    event = envelope.get("event")
    data = envelope.get("data")
    if not isinstance(event, str) or not event:
        raise InvalidInput("missing event", "a Givebutter webhook is {event, id, data}")
    if not isinstance(data, dict):
        data = {}
    # the envelope id is the delivery's identity; fall back to the resource id if a sender omits it
    event_id = text(envelope.get("id")) or (f"{event}:{data['id']}" if data.get("id") else None)
    if not event_id:
        raise InvalidInput("missing event id", "neither the envelope id nor data.id is present")
    found_id = text(data.get("id"))
    if event in SYNCED_EVENTS and not found_id:
        raise InvalidInput("missing data.id", f"a {event} webhook carries the resource in data")
    resource_id = found_id or event_id

    if event == "transaction.succeeded":
        job = JobSpec(
            "transaction",
            resource_id,
            external_id=external_id(resource_id),
            email=text(data.get("email")),
            name=supporter_name(data),
            amount=text(data.get("amount")),
        )
    elif event == "ticket.created":
        transaction_id = text(data.get("transaction_id"))
        job = JobSpec(
            "ticket",
            resource_id,
            external_id=external_id(transaction_id) if transaction_id else None,
            email=text(data.get("email")),
            name=supporter_name(data),
            amount=text(data.get("price")),
        )
    elif event in ("campaign.created", "campaign.updated"):
        job = JobSpec("campaign", resource_id, name=text(data.get("title")))
    elif event == "refund.created":
        details = refund_details(parse(Refund, data, where="refund.created data"))
        job = JobSpec(
            "refund",
            resource_id or event_id,
            external_id=external_id(details.transaction_id) if details.transaction_id else None,
            email=text(data.get("email")),
            name=supporter_name(data),
            amount=None if details.amount is None else f"-{details.amount}",
        )
    elif event in PLAN_EVENTS and found_id:
        job = JobSpec(  # one job a delivery: the receiver takes an event id once
            "plan",
            found_id,
            email=text(data.get("email")),
            name=supporter_name(data),
            amount=text(data.get("amount")),
        )
    else:
        why = "not synced to the CRM" if event in KNOWN_EVENTS else "unknown Givebutter event"
        job = JobSpec("event", resource_id or event_id, status="skipped", message=f"{event}: {why}")
    return Event(event_id, event, job, data)
