"""The backup poll of the POS platform: sales and refunds whose webhook never arrived.

Orders: SearchOrders per location (10 locations a request) filtered on ``updated_at`` since the watermark
minus an overlap and sorted by UPDATED_AT (Square requires the sort to name the date filter's timestamp),
COMPLETED or OPEN; each that the sale rule takes (``rules.eligibility``) and that has no gift job yet is queued
as its webhook would have queued it. Refunds: ListPaymentRefunds COMPLETED and updated since the same point;
each that the refund ledger does not hold (applied, waiting, flagged or skipped) and no job is running or due
for is queued with the refund as read. Two requests on a quiet day (one more per further
10 locations or per page of 500 orders / 100 refunds). The locations come from the cache `synctool pos
locations` keeps (read once from Square when empty).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool.platform import (
    JsonObject,
    Runtime,
    cents_to_dollars,
    jobs,
    log,
    payload,
    refunds,
    settings,
    store,
    using,
    watermark,
)
from synctool.platforms import square
from synctool.platforms.square.rules import LOCATIONS, eligibility
from synctool.platforms.square.webhook import Order, external_id

if TYPE_CHECKING:
    from synctool.platform import Connection
    from synctool.platforms.square.client import PosClient


def poll(
    conn: Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None, client: PosClient | None = None
) -> dict[str, Any]:
    started, since_text = watermark.window_of(conn, "pos", square.PosConfig.of(rt.config), fresh=fresh, lookback=lookback)
    seen = queued = refunds_seen = refunds_queued = 0
    with using(rt, "pos", client) as pos:
        locations = [str(loc["id"]) for loc in settings.cache_list(conn, LOCATIONS) if loc.get("id")]
        if not locations:
            found = pos.locations()
            with store.atomic(conn):
                settings.cache_replace(conn, LOCATIONS, {loc["id"]: loc for loc in found})
            locations = [loc["id"] for loc in found]
        for order in pos.orders_updated_since(locations, since_text) if locations else []:
            seen += 1
            queued += _queue_order(conn, rt, order)
        for refund in pos.refunds_updated_since(since_text):
            refunds_seen += 1
            refunds_queued += _queue_refund(conn, rt, refund)
        requests = pos.api.requests_sent
    result = {
        "since": since_text,
        "seen": seen + refunds_seen,
        "orders_seen": seen,
        "refunds_seen": refunds_seen,
        "queued": queued + refunds_queued,
        "refunds_queued": refunds_queued,
        "requests": requests,
        "fresh": bool(fresh or lookback),
    }
    watermark.save(conn, "pos", started, result)
    return result


def _queue_order(conn: Connection, rt: Runtime, found: JsonObject) -> int:
    order = payload(Order, found, f"Square order {found.get('id')}")
    if eligibility(order) is not None or not order.id:
        return 0
    money = order.total_money
    return watermark.queue_unseen(
        conn,
        rt.config.queue.max_attempts,
        source="pos",
        entity_type="order",
        entity_id=order.id,
        external_id=external_id(order.id),
        payload={"origin": "poll"},
        amount=None if money is None or money.amount is None else str(cents_to_dollars(money.amount)),
    )


def _queue_refund(conn: Connection, rt: Runtime, refund: JsonObject) -> int:
    refund_id = str(refund.get("id") or "")
    if not refund_id or refund.get("status") != "COMPLETED":
        return 0
    with store.atomic(conn):
        # keyed on what became of the refund, not on whether a job named it: a PENDING notice's job was
        # skipped, and when the COMPLETED one was lost, this is the refund's only way in
        if refunds.recorded(conn, f"pos:{refund_id}") is not None or log.has_entity_job(
            conn, "pos", "order_refund", refund_id, unfinished=True
        ):
            return 0
        cents = (refund.get("amount_money") or {}).get("amount")
        jobs.enqueue(
            conn,
            source="pos",
            entity_type="order_refund",
            entity_id=refund_id,
            payload={"refund": refund, "origin": "poll"},
            amount=None if cents is None else f"-{cents_to_dollars(cents)}",
            max_attempts=rt.config.queue.max_attempts,
        )
    return 1
