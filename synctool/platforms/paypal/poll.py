"""What synctool reads from PayPal besides the webhooks: the backup poll (Transaction Search since the last run:
the payments and refunds synctool has not seen), the webhook events PayPal sent (``webhooks heal``) and a failed
job's payment afresh (``retry-all --fresh``).

Transaction Search runs about three hours behind (a payment is listed up to 3 h after it is made), so the poll's
window starts ``paypal.poll_overlap_minutes`` (240) before the last run's start, and the first run reads
``paypal.poll_first_lookback_hours`` (24) back."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from synctool.platform import (
    Connection,
    JsonObject,
    Missed,
    Row,
    Runtime,
    SynctoolError,
    jobs,
    parse_iso,
    using,
    watermark,
)
from synctool.platforms.paypal import transactions
from synctool.platforms.paypal.models import ROLE, external_id


def gift_job(row: JsonObject, origin: str) -> dict[str, Any]:
    """The ``jobs.enqueue`` keywords of the job that syncs a payment row (what its webhook would have queued)."""
    donation = transactions.donation(row)
    entity = "sale" if donation.get("recurring") else "capture"
    value = (donation.get("amount") or {}).get("value")
    return {"source": ROLE, "entity_type": entity, "entity_id": str(donation["id"]), "external_id": external_id(str(donation["id"])),
            "payload": {"donation": donation, "origin": origin}, "email": donation["payer"].get("email_address"),
            "amount": str(value)}  # fmt: skip


def refund_job(row: JsonObject, origin: str) -> dict[str, Any]:
    """The ``jobs.enqueue`` keywords of the job that applies one refund or reversal row."""
    refund = transactions.refund(row)
    return {"source": ROLE, "entity_type": "refund", "entity_id": str(refund["id"]),
            "external_id": external_id(str(refund["payment_id"])), "payload": {"refund": refund, "origin": origin},
            "amount": f"-{refund['amount']['value']}"}  # fmt: skip


def queue_refund(conn: Connection, rt: Runtime, row: JsonObject, origin: str) -> int:
    """Queue a refund row's job unless synctool has one for it (its webhook's, an earlier poll's): 1 or 0."""
    return watermark.queue_new(conn, rt.config.queue.max_attempts, **refund_job(row, origin))


def poll(conn: Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    """``synctool poll``: the payments PayPal lists since the window's start, each queued unless a job already
    makes its gift, and each refund or reversal queued unless synctool has a job for it."""
    section = rt.config.section(ROLE)
    started, since = watermark.window(conn, ROLE, overlap_minutes=section.poll_overlap_minutes,
                                      first_lookback_hours=section.poll_first_lookback_hours, fresh=fresh,
                                      lookback=lookback)  # fmt: skip
    start = parse_iso(since) or started - timedelta(hours=24)
    with using(rt, ROLE) as client:
        found = client.transactions(start, max(started, start + timedelta(seconds=1)))
        spent = client.api.requests_sent
    payments = [r for r in found if transactions.is_payment(r)]
    queued = sum(watermark.queue_unseen(conn, rt.config.queue.max_attempts, **gift_job(r, "poll")) for r in payments)
    refunds_queued = sum(queue_refund(conn, rt, r, "poll") for r in found if transactions.is_refund(r))
    result = {"since": since, "seen": len(payments), "queued": queued + refunds_queued, "refunds_queued": refunds_queued,
              "requests": spent, "lag": "PayPal's Transaction Search lists a payment up to ~3 h after it"}  # fmt: skip
    watermark.save(conn, ROLE, started, result)
    return result


def missed(conn: Connection, rt: Runtime, since: str) -> tuple[list[Missed], int]:
    """The webhook events PayPal sent since ``since`` (ISO) that synctool did not receive, oldest first, each with
    its body (``GET /v1/notifications/webhooks-events``): ``webhooks heal`` replays them through the receiver's
    path. PayPal's list says what it sent, not what arrived: a delivery stored here is left out."""
    start = parse_iso(since) or datetime.now(UTC) - timedelta(days=1)
    with using(rt, ROLE) as client:
        found = client.webhook_events(start, datetime.now(UTC) + timedelta(minutes=5))
        spent = client.api.requests_sent
    items = []
    for event in found:
        event_id = str(event.get("id") or "")
        if not event_id or _received(conn, event_id):
            continue
        items.append(Missed(event_id, str(event.get("event_type") or ""), str(event.get("create_time") or ""),
                            json.dumps(event).encode(), "not received by synctool"))  # fmt: skip
    return sorted(items, key=lambda m: m.at), spent


def _received(conn: Connection, event_id: str) -> bool:
    return conn.execute("SELECT 1 FROM deliveries WHERE source = ? AND event_id = ?", (ROLE, event_id)).fetchone() is not None


def refetch(conn: Connection, rt: Runtime, rows: list[Row]) -> tuple[int, list[str]]:
    """``retry-all --fresh``: each failed capture job gets the capture as PayPal holds it now (its payer is read
    again from its order when the job runs)."""
    refreshed, errors = 0, []
    with using(rt, ROLE) as client:
        for row in rows:
            if row["entity_type"] != "capture":
                continue
            try:
                capture = client.capture(row["entity_id"])
            except SynctoolError as exc:
                errors.append(f"{row['entity_id']}: {exc}")
                continue
            jobs.set_payload(conn, row["id"], {"resource": capture, "origin": "refetch", "fresh": True})
            refreshed += 1
    return refreshed, errors
