"""A recurring donor's subscription as synctool records it (``stripe-donations:plans`` in synctool's caches, one
entry per subscription): ``customer.subscription.*`` events and ``invoice.payment_failed`` (a failed plan) each
update its entry; its charges' gifts are made by the gift
rule, coded recurring. The monthly-donors group and the follow-up reports are the core's plans' (issue 60's
"contract" part): until that is built on, the record is kept here, and the job says what changed."""

from __future__ import annotations

from typing import Any

from synctool.platform import Event, Job, Outcome, PermanentError, payload, settings, store
from synctool.platforms.stripe_donations.models import PLAN_STATUS, PLANS, Invoice, Subscription, major
from synctool.platforms.stripe_donations.rules import client_of, the_object
from synctool.platforms.stripe_donations.webhook import subscription_of


def plan(event: Event, job: Job) -> Outcome:
    obj = the_object(event)
    email = None
    failed = obj.get("object") == "invoice"
    if failed:  # invoice.payment_failed: the subscription as Stripe holds it now, marked failed
        invoice = payload(Invoice, obj, "the Stripe invoice")
        sub_id = invoice.subscription or subscription_of(obj)
        if not sub_id:
            raise PermanentError(f"invoice {invoice.id} names no subscription")
        email = invoice.customer_email
        obj = client_of(job).subscription(sub_id)
    sub = payload(Subscription, obj, "the Stripe subscription")
    status = "failed" if failed and sub.status not in ("canceled", "incomplete_expired") else PLAN_STATUS.get(sub.status)
    if status is None:
        raise PermanentError(f"subscription {sub.id} has a status synctool does not know: {sub.status!r}")
    price = sub.items.data[0].price if sub.items.data else None
    amount = currency = frequency = None
    if price is not None and price.unit_amount is not None and price.currency:
        amount, currency = str(major(price.unit_amount, price.currency)), price.currency.upper()
    if price is not None and price.recurring is not None and price.recurring.interval:
        count = price.recurring.interval_count or 1
        frequency = price.recurring.interval if count == 1 else f"{count} {price.recurring.interval}s"
    row: dict[str, Any] = {
        "status": status, "stripe_status": sub.status, "customer": sub.customer, "amount": amount, "currency": currency,
        "frequency": frequency, "last_event": event.type if event.id else str(event.payload.get("origin") or "poll"),
        "updated_at": store.iso(),
    }  # fmt: skip
    with job.unit.gather() as conn:
        before = settings.cache_get(conn, PLANS, sub.id)
        settings.cache_put(conn, PLANS, sub.id, {"id": sub.id, **row, "email": email or (before["email"] if before else None)})
    was = before["status"] if before else "new"
    money = f" ({amount} {currency} every {frequency})" if amount and frequency else ""
    return Outcome("succeeded", f"subscription {sub.id}: {was} -> {status}{money}")
