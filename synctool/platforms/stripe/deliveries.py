"""Stripe's record of the events it did not deliver (``GET /v1/events?delivery_success=false``,
mailchimp-stripe.md B4): events of the last 30 days still pending or that failed every attempt, of the types
synctool registers (``types[]``: the record covers every endpoint of the account, and another system's failed
deliveries are not synctool's). Each is
replayed from its own body (``synctool webhooks heal``); a delivery's signature is not part of that record, so
the event's origin is the API read with synctool's secret key. One request per 100 events.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from synctool.platform import Missed, Runtime, parse_iso, using
from synctool.platforms.stripe.registration import EVENTS

if TYPE_CHECKING:
    from synctool.platform import Connection


def missed(conn: Connection, rt: Runtime, since: str) -> tuple[list[Missed], int]:
    """The undelivered events created since ``since`` (ISO), oldest first."""
    start = parse_iso(since)
    created_since = int(start.timestamp()) if start else 0
    found = []
    with using(rt, "payments") as client:
        for event in client.undelivered_events(created_since, EVENTS):
            if not event.get("id"):
                continue
            at = datetime.fromtimestamp(int(event.get("created") or 0), UTC).isoformat(timespec="seconds")
            why = f"pending_webhooks {event.get('pending_webhooks', '?')}: not delivered"
            found.append(Missed(str(event["id"]), str(event.get("type") or ""), at, json.dumps(event).encode(), why))
        spent = client.api.requests_sent
    return sorted(found, key=lambda m: m.at), spent
