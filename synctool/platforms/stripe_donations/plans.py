"""A recurring donor's subscription as a synctool plan (``synctool.platform.plans``: the record, the donor, the
monthly-donors group, a failure's or cancellation's contact report): ``customer.subscription.created|updated|deleted``
and ``invoice.payment_failed`` (a failed plan), the poll's and backfill's changed subscriptions, and a charge of a
plan synctool never recorded (``known_from_charge``). The donor is the subscription's customer (``GET
/v1/customers/{id}``: e-mail, name, phone); each charge is a gift of its own (``rules.gift``), noted on its plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool.platform import (
    Event,
    Job,
    Outcome,
    PermanentError,
    Person,
    PlanEvent,
    Runtime,
    payload,
    plans,
    using,
)
from synctool.platforms.stripe_donations.models import ROLE, Invoice, Subscription
from synctool.platforms.stripe_donations.rules import client_of, the_object
from synctool.platforms.stripe_donations.subscriptions import person_of, record_of
from synctool.platforms.stripe_donations.webhook import subscription_of

if TYPE_CHECKING:
    from synctool.platform import Connection

#: the event -> what happened to the plan (``updated``: its status decides)
KIND = {
    "customer.subscription.created": "created",
    "customer.subscription.updated": "updated",
    "customer.subscription.deleted": "canceled",
    "invoice.payment_failed": "failed",
}
PLATFORM = "Stripe"


def plan(event: Event, job: Job) -> Outcome:
    if event.payload.get("held"):  # reconcile --plans --fix: the plan as synctool holds it
        return plans.apply_held(job, ROLE, platform=PLATFORM)
    client = client_of(job)
    queued = event.payload.get("plan")
    obj: dict[str, Any] = queued if isinstance(queued, dict) else the_object(event)
    failed = obj.get("object") == "invoice"
    if failed:  # invoice.payment_failed: the subscription as Stripe holds it now, failed
        invoice = payload(Invoice, obj, "the Stripe invoice")
        sub_id = invoice.subscription or subscription_of(obj)
        if not sub_id:
            raise PermanentError(f"invoice {invoice.id} names no subscription")
        obj = client.subscription(sub_id)
    sub = payload(Subscription, obj, "the Stripe subscription")
    record = record_of(sub, person_of(client, sub.customer), failed=failed)
    if event.id:  # a delivery: Stripe's event
        found = PlanEvent(event.id, KIND.get(event.type), origin="webhook")
    else:  # the poll's or backfill's state, keyed as it was queued
        origin = str(event.payload.get("origin") or "poll")
        found = PlanEvent(str(event.payload.get("event") or plans.poll_key(record)), None, origin=origin)
    return plans.apply(job, ROLE, record, found, platform=PLATFORM)


def backfill_plans(conn: Connection, rt: Runtime) -> dict[str, Any]:
    """Every subscription Stripe holds (``GET /v1/subscriptions?status=all``): a plan job for each that differs from
    synctool's record (``plans.queue_changed``). ``synctool backfill`` and the poll call it."""
    with using(rt, ROLE) as client:
        found = client.subscriptions()
        spent = client.api.requests_sent
    listed = []
    for item in found:
        try:
            sub = payload(Subscription, item, "the Stripe subscription")
        except PermanentError:
            continue  # its events' jobs say why
        listed.append((record_of(sub, Person()), item))
    queued = plans.queue_changed(conn, ROLE, listed, origin="poll", max_attempts=rt.config.queue.max_attempts)
    return {"seen": len(found), "queued": queued, "requests": spent}
