"""Square's money in a period, for ``synctool reconcile``: each location's completed payments
(``GET /v2/payments`` with ``begin_time`` / ``end_time``), grouped by their order (the gift
``pos_order_<order id>``), with their refunded money taken off."""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from synctool import platforms
from synctool.crm import gifts
from synctool.money import cents_to_dollars
from synctool.platforms.reconcile import Expected
from synctool.platforms.square.webhook import external_id


def expected(conn: sqlite3.Connection, rt: Any, start: date, end: date) -> tuple[list[Expected], int]:
    """The period's paid orders as gifts, and the Square requests it cost (a day wider on each side: the
    gift date is the location's local day)."""
    begin = f"{start - timedelta(days=1)}T00:00:00Z"
    finish = f"{end + timedelta(days=2)}T00:00:00Z"
    orders: dict[str, dict[str, Any]] = {}
    with platforms.using(rt, "pos") as client:
        for location in client.locations():
            for payment in client.payments(begin, finish, location["id"]):
                if payment.get("status") != "COMPLETED" or not payment.get("order_id"):
                    continue  # the sync's rule: a sale becomes a gift once paid, through its order
                order = orders.setdefault(
                    payment["order_id"],
                    {
                        "cents": 0,
                        "refunded": 0,
                        "refund_ids": [],
                        "at": payment.get("created_at"),
                        "zone": location.get("timezone"),
                    },
                )
                order["cents"] += int((payment.get("total_money") or payment.get("amount_money") or {}).get("amount") or 0)
                order["refunded"] += int((payment.get("refunded_money") or {}).get("amount") or 0)
                order["refund_ids"] += payment.get("refund_ids") or []
                order["at"] = min(order["at"] or "", payment.get("created_at") or "") or order["at"]
        requests = client.api.requests_sent
    items = []
    for order_id, order in orders.items():
        day = gifts.gift_date(order["at"], order["zone"], rt.config.timezone)
        if not str(start) <= day <= str(end):
            continue
        ext = external_id(order_id)
        job = {"source": "pos", "entity_id": order_id, "external_id": ext, "amount": str(cents_to_dollars(order["cents"]))}
        items.append(
            Expected(
                "pos",
                ext,
                order_id,
                max(cents_to_dollars(order["cents"] - order["refunded"]), Decimal("0.00")),
                cents_to_dollars(order["cents"]),
                day,
                sync_job={**job, "entity_type": "order", "payload": {"origin": "reconcile"}},
                refund_jobs=[
                    {
                        **job,
                        "entity_type": "order_refund",
                        "entity_id": rid,
                        "amount": None,
                        "payload": {"refund_id": rid, "origin": "reconcile"},
                    }
                    for rid in order["refund_ids"]
                ],
            )
        )
    return items, requests
