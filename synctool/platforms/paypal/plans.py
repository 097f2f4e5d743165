"""PayPal's subscriptions (``BILLING.SUBSCRIPTION.*``): what a subscription event changes."""

from __future__ import annotations

from synctool.platform import Event, Job, Outcome, Skip


def subscription(event: Event, job: Job) -> Outcome:
    data = event.payload.get("subscription") or (event.data or {}).get("subscription") or {}
    kind = (event.data or {}).get("event_type") or event.payload.get("event_type") or "a change"
    raise Skip(f"PayPal subscription {data.get('id')}: {kind} (recorded with its delivery)")
