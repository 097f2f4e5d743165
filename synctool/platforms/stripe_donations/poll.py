"""The backup poll (``synctool poll``): the account's charges since the last run (``GET /v1/charges?created[gte]=``),
each succeeded one that is not the portal's queued unless a job already makes its gift, and each refunded total
queued unless synctool has a job for it. The same jobs as the webhooks' (``stripe_<payment intent>``): a lost
delivery is found, a delivered one is not queued twice."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool.platform import Runtime, parse_iso, using, watermark
from synctool.platforms.stripe_donations.models import PORTAL_MARK, ROLE, external_id, major
from synctool.platforms.stripe_donations.plans import backfill_plans

if TYPE_CHECKING:
    from synctool.platform import Connection


def _payment(charge: dict[str, Any]) -> str:
    return str(charge.get("payment_intent") or charge.get("id"))


def _money(charge: dict[str, Any], key: str) -> str:
    return str(major(int(charge.get(key) or 0), str(charge.get("currency") or "usd")))


def gift_job(charge: dict[str, Any], origin: str) -> dict[str, Any]:
    """The ``jobs.enqueue`` keywords of the job that makes the charge's gift (what ``charge.succeeded`` queues)."""
    found = charge.get("billing_details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    return {"source": ROLE, "entity_type": "gift", "entity_id": str(charge.get("id")), "external_id": external_id(_payment(charge)),
            "payload": {"object": charge, "origin": origin}, "email": details.get("email") or charge.get("receipt_email"),
            "amount": _money(charge, "amount")}  # fmt: skip


def refund_job(charge: dict[str, Any], origin: str) -> dict[str, Any]:
    """The keywords of the job that applies the charge's refunded total (what ``charge.refunded`` queues)."""
    return {"source": ROLE, "entity_type": "refund", "entity_id": f"{charge.get('id')}:{charge.get('amount_refunded')}",
            "external_id": external_id(_payment(charge)), "payload": {"object": charge, "origin": origin},
            "amount": f"-{_money(charge, 'amount_refunded')}"}  # fmt: skip


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def dispute_job(dispute: dict[str, Any], origin: str) -> dict[str, Any]:
    """The keywords of the job that takes a lost dispute's money back (what ``charge.dispute.closed`` queues)."""
    payment = str(dispute.get("payment_intent") or dispute.get("charge"))
    return {"source": ROLE, "entity_type": "dispute_refund", "entity_id": str(dispute.get("id")),
            "external_id": external_id(payment), "payload": {"object": dispute, "origin": origin},
            "amount": f"-{_money(dispute, 'amount')}"}  # fmt: skip


def donation(charge: dict[str, Any]) -> bool:
    """A succeeded charge the portal did not mark (the job checks the Checkout Session too)."""
    found = charge.get("metadata")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    return charge.get("status") == "succeeded" and not meta.get(PORTAL_MARK) and bool(charge.get("id"))


def poll(conn: Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    started, since = watermark.window(conn, ROLE, overlap_minutes=60, first_lookback_hours=24, fresh=fresh, lookback=lookback)
    moment = parse_iso(since)
    gte = int(moment.timestamp()) if moment else 0
    with using(rt, ROLE) as client:
        found = client.charges(gte=gte)
        closed = client.events(gte, ["charge.dispute.closed"])  # a lost dispute's webhook that never came
        spent = client.api.requests_sent
    queued = refunds_queued = 0
    for charge in found:
        if not donation(charge):
            continue
        queued += watermark.queue_unseen(conn, rt.config.queue.max_attempts, **gift_job(charge, "poll"))
        if int(charge.get("amount_refunded") or 0) > 0:
            refunds_queued += watermark.queue_new(conn, rt.config.queue.max_attempts, **refund_job(charge, "poll"))
    for event in closed:
        dispute = _dict(_dict(event.get("data")).get("object"))
        if dispute.get("status") != "lost" or not dispute.get("id") or _dict(dispute.get("metadata")).get(PORTAL_MARK):
            continue
        refunds_queued += watermark.queue_new(conn, rt.config.queue.max_attempts, **dispute_job(dispute, "poll"))
    read = backfill_plans(conn, rt)
    result = {"since": since, "seen": len(found), "queued": queued + refunds_queued + int(read["queued"]),
              "refunds_queued": refunds_queued, "plans_queued": read["queued"], "requests": spent + int(read["requests"])}  # fmt: skip
    watermark.save(conn, ROLE, started, result)
    return result
