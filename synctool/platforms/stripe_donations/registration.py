"""``synctool webhooks status|register`` for the donations: they come on Stripe's endpoint (``/webhooks/payments``,
which the ``stripe`` platform registers first), so this adds the event types the donations need to that endpoint
(``POST /v1/webhook_endpoints/{id}`` with the union of its events and these); it never makes an endpoint of its own,
and its signing secret stays Stripe's (``PAYMENTS_WEBHOOK_SECRET``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool.platform import Check, Found, RegisterResult, Runtime, Wanted, compare, ours
from synctool.platforms.stripe_donations.models import ROLE
from synctool.platforms.stripe_donations.webhook import EVENTS

if TYPE_CHECKING:
    from synctool.platform import Connection
    from synctool.platforms.stripe_donations.client import DonationsClient

SECRET = "PAYMENTS_WEBHOOK_SECRET"


def _wanted(base: str) -> Wanted:
    return Wanted(ROLE, f"{base}/webhooks/payments", list(EVENTS), SECRET)


def _found(client: DonationsClient) -> list[Found]:
    listed = client.api.request("GET", "/v1/webhook_endpoints", params={"limit": 100}).get("data") or []
    return [
        Found(e["id"], e.get("url") or "", set(e.get("enabled_events") or []), e.get("status", "enabled") == "enabled")
        for e in listed
    ]


def status(conn: Connection, rt: Runtime, base: str, client: DonationsClient) -> list[Check]:
    return [compare(_wanted(base), _found(client), rt.secrets.get(SECRET))]


def register(conn: Connection, rt: Runtime, base: str, client: DonationsClient) -> list[RegisterResult]:
    want = _wanted(base)
    mine = ours(_found(client), want)
    if mine is None:
        return [RegisterResult(ROLE, "not registered", f"no Stripe endpoint at {want.url}: register `payments` (stripe) first")]
    missing = set(want.events) - mine.events
    if not missing and "*" not in mine.events:
        return [RegisterResult(ROLE, "unchanged", mine.id)]
    if "*" in mine.events:
        return [RegisterResult(ROLE, "unchanged", f"{mine.id} takes every event")]
    client.api.request(
        "POST", f"/v1/webhook_endpoints/{mine.id}", data={"enabled_events[]": sorted(mine.events | set(want.events))}
    )
    return [RegisterResult(ROLE, "repaired", f"{mine.id}: added {', '.join(sorted(missing))}")]
