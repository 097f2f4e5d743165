"""Square's money in a period, for ``synctool reconcile``: each location's completed payments
(``GET /v2/payments`` with ``begin_time`` / ``end_time``), grouped by their order (the gift
``pos_order_<order id>``), with their refunded money taken off."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from synctool.platform import Expected, JsonObject, Payout, PayoutLine, Runtime, cents_to_dollars, gifts, mappings, using
from synctool.platforms.square.rules import NO_MONEY
from synctool.platforms.square.webhook import external_id

if TYPE_CHECKING:
    from synctool.platform import Connection

ZERO = Decimal("0.00")


def expected(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    """The period's paid orders as gifts, and the Square requests it cost (a day wider on each side: the
    gift date is the location's local day)."""
    begin = f"{start - timedelta(days=1)}T00:00:00Z"
    finish = f"{end + timedelta(days=2)}T00:00:00Z"
    orders: dict[str, JsonObject] = {}
    with using(rt, "pos") as client:
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
                        "location": location["id"],
                        "currency": (payment.get("total_money") or payment.get("amount_money") or {}).get("currency"),
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
        # a sale at a location set `deductible: none` (a shop) is not a gift of its price
        shop = (mappings.get(conn, "location_override", str(order["location"])) or {}).get("deductible") == "none"
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
                deductible=Decimal("0.00") if shop else None,
                deductible_why=f"a sale at location {order['location']}, set `deductible: none` (a shop)" if shop else None,
                no_gift=NO_MONEY if order["cents"] == 0 else None,
                currency=order["currency"],
            )
        )
    return items, requests


def payouts(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    """Each location's payouts of the period (``GET /v2/payouts``) with their entries (CHARGE, REFUND, FEE,
    ...); a charge or refund entry names its payment, and the payment its order (the gift)."""
    begin = f"{start}T00:00:00Z"
    finish = f"{end + timedelta(days=1)}T00:00:00Z"
    result = []
    with using(rt, "pos") as client:
        for location in client.locations():
            listed = list(client.payouts(begin, finish, location["id"]))
            if not listed:
                continue
            # payments of the weeks before: an entry names its payment; the payment names its order
            orders = {
                p["id"]: p.get("order_id")
                for p in client.payments(f"{start - timedelta(days=14)}T00:00:00Z", finish, location["id"])
            }
            for stated in listed:
                payout = Payout(
                    "pos",
                    stated["id"],
                    str(stated.get("arrival_date") or stated.get("created_at") or "")[:10],
                    net=cents_to_dollars((stated.get("amount_money") or {}).get("amount") or 0),
                    currency=(stated.get("amount_money") or {}).get("currency"),
                )
                lines: dict[str, PayoutLine] = {}
                for entry in client.payout_entries(stated["id"]):
                    kind = entry.get("type")
                    details = entry.get("type_charge_details") or entry.get("type_refund_details") or {}
                    order_id = orders.get(details.get("payment_id") or "")
                    gross = cents_to_dollars((entry.get("gross_amount_money") or {}).get("amount") or 0)
                    fee = cents_to_dollars((entry.get("fee_amount_money") or {}).get("amount") or 0)
                    net = cents_to_dollars((entry.get("net_amount_money") or {}).get("amount") or 0)
                    if order_id is None or kind not in ("CHARGE", "REFUND"):
                        line = lines.setdefault(f"-{kind}", PayoutLine("", f"({kind})", ZERO, ZERO, ZERO, ZERO))
                    else:
                        line = lines.setdefault(order_id, PayoutLine(external_id(order_id), order_id, ZERO, ZERO, ZERO, ZERO))
                    # for every entry net = gross - fee (reference B7); a REFUND's amounts are negative, and its
                    # fee too when the processing fee came back: the row nets it from the fees, never adds it
                    if kind == "REFUND":
                        line.refund += -gross
                    else:
                        line.gross += gross
                    line.fee += fee
                    line.net += net
                payout.lines = list(lines.values())
                result.append(payout)
        requests = client.api.requests_sent
    return result, requests
