"""PayPal's subscriptions as the contract's recurring plans (docs/platforms.md "Recurring plans"): a
``BILLING.SUBSCRIPTION.*`` event (or a poll's, backfill's or reconcile's job) read as a ``PlanRecord`` and a
``PlanEvent`` and handed to ``plans.apply``, which records it and does what every platform's plans share (the donor
found, the monthly-donors group, a contact report and a chat notice for a failed, suspended or canceled plan). Each
payment of a subscription (``PAYMENT.SALE.COMPLETED``) is a gift of its own (``rules.py``), noted as the plan's
charge; a subscription synctool has not recorded is read once by its payment's job (``GET
/v1/billing/subscriptions/{id}``).

A subscription names no amount or interval of its own (both are its billing plan's, ``GET /v1/billing/plans/{id}``,
which synctool does not read): the amount is its last payment's (``billing_info.last_payment.amount``), the
frequency unsaid."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from synctool.platform import (
    Connection,
    Event,
    Job,
    JsonObject,
    Outcome,
    Person,
    PlanEvent,
    PlanRecord,
    Runtime,
    SynctoolError,
    plans,
    using,
)
from synctool.platforms.paypal.client import PayPalClient
from synctool.platforms.paypal.models import PLATFORM_NAME, ROLE

#: PayPal's subscription statuses (``subscription.status``) in synctool's five; None: not begun, the record's kept
STATUSES = {"ACTIVE": "active", "SUSPENDED": "paused", "CANCELLED": "canceled", "EXPIRED": "ended"}
#: what each event says happened (None: a state compared with the record)
KINDS = {
    "BILLING.SUBSCRIPTION.CREATED": "created",
    "BILLING.SUBSCRIPTION.ACTIVATED": "created",
    "BILLING.SUBSCRIPTION.UPDATED": "updated",
    "BILLING.SUBSCRIPTION.RE-ACTIVATED": "resumed",
    "BILLING.SUBSCRIPTION.SUSPENDED": "paused",
    "BILLING.SUBSCRIPTION.CANCELLED": "canceled",
    "BILLING.SUBSCRIPTION.PAYMENT.FAILED": "failed",
}


def _obj(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _text(value: object, limit: int = 200) -> str | None:
    return str(value)[:limit] if value not in (None, "") else None


def record_of(subscription: JsonObject, event_type: str | None = None) -> PlanRecord:
    """A subscription (``subscription``, billing_subscriptions_v1.json) in synctool's terms. Every field lenient:
    a word PayPal adds leaves the record's status as it was."""
    subscriber = _obj(subscription.get("subscriber"))
    name = _obj(subscriber.get("name"))
    billing = _obj(subscription.get("billing_info"))
    last = _obj(_obj(billing.get("last_payment")).get("amount"))
    try:
        amount = Decimal(str(last["value"])) if last.get("value") is not None else None
    except (InvalidOperation, ValueError):
        amount = None
    status = _text(subscription.get("status"), 40)
    synctool_status = "failed" if event_type == "BILLING.SUBSCRIPTION.PAYMENT.FAILED" else STATUSES.get(status or "")
    ended = subscription.get("status_update_time") if synctool_status in ("canceled", "ended") else None
    return PlanRecord(
        id=str(subscription.get("id")),
        person=Person(_text(name.get("given_name")), _text(name.get("surname")), _text(subscriber.get("email_address"))),
        amount=amount,
        currency=_text(last.get("currency_code"), 3),
        status=synctool_status,
        platform_status=status,
        started_at=_text(subscription.get("start_time")),
        ended_at=_text(ended),
        next_charge=(_text(billing.get("next_billing_time")) or "")[:10] or None,
        updated_at=_text(subscription.get("update_time")),
        contact_id=_text(subscriber.get("payer_id"), 40),
    )


def plan(event: Event, job: Job) -> Outcome:
    """A subscription event (a ``BILLING.SUBSCRIPTION.*`` webhook; a poll's, backfill's or reconcile's job)."""
    if event.payload.get("held"):  # reconcile --plans --fix: the plan as synctool holds it, applied again
        return plans.apply_held(job, ROLE, platform=PLATFORM_NAME)
    data = _obj(event.data) or _obj(event.payload)
    subscription = _obj(data.get("subscription") or data.get("plan"))
    if not subscription.get("id"):  # a job queued with no body: the subscription as PayPal holds it now
        subscription = job.client(ROLE, PayPalClient).subscription(str(job.row["entity_id"]))
    event_type = _text(data.get("event_type"))
    kind = KINDS.get(event_type or "")
    happened = PlanEvent(
        id=event.id or str(event.payload.get("event") or f"job:{job.id}"),
        kind=kind,
        at=_text(subscription.get("update_time")),
        origin="webhook" if event.id else str(event.payload.get("origin") or "job"),
    )
    return plans.apply(job, ROLE, record_of(subscription, event_type), happened, platform=PLATFORM_NAME)


def read(job: Job, subscription_id: str) -> PlanRecord | str:
    """The subscription as PayPal holds it, or why not, in words (``plans.known_from_charge``)."""
    try:
        return record_of(job.client(ROLE, PayPalClient).subscription(subscription_id))
    except SynctoolError as exc:
        return f"subscription {subscription_id} not read ({exc}): read again at its next payment or by backfill"


def backfill(conn: Connection, rt: Runtime) -> dict[str, Any]:
    """``synctool backfill``: PayPal lists no subscriptions (only one by its id), so each subscription synctool has
    recorded is read again and a plan job queued for each that changed (``plans.queue_changed``)."""
    recorded = [r[0] for r in conn.execute("SELECT plan_id FROM plans WHERE source = ? ORDER BY plan_id", (ROLE,))]
    listed = []
    with using(rt, ROLE) as client:
        for plan_id in recorded:
            found = client.subscription(plan_id)
            listed.append((record_of(found), found))
        spent = client.api.requests_sent
    queued = plans.queue_changed(conn, ROLE, listed, origin="backfill", max_attempts=rt.config.queue.max_attempts)
    return {"read": len(listed), "queued": queued, "requests": spent}
