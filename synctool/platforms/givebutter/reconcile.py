"""Givebutter's money in a period, for ``synctool reconcile``: its succeeded transactions (``GET
/v1/transactions`` with ``transactedAfter`` / ``transactedBefore``, 100 a page), each with its refunded
parts taken off."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from synctool.platform import Expected, InvalidInput, Payout, PayoutLine, Runtime, dollars, gifts, parse, settings, using
from synctool.platforms.givebutter.rules import CAMPAIGNS, deductible_amount, no_money
from synctool.platforms.givebutter.webhook import Refund, Transaction, external_id, refunded_parts, supporter_name

if TYPE_CHECKING:
    from synctool.platform import Connection


def expected(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    """The period's transactions as gifts, and the Givebutter requests it cost. The query is a day wider on
    each side: the gift date is the donor's local day."""
    after = f"{start - timedelta(days=1)}T00:00:00Z"
    before = f"{end + timedelta(days=2)}T00:00:00Z"
    items = []
    with using(rt, "donations") as client:
        for data in client.transactions_between(after, before):
            if str(data.get("status") or "").lower() != "succeeded" or not data.get("id"):
                continue
            try:
                txn = parse(Transaction, data, where=f"Givebutter transaction {data.get('id')}")
            except InvalidInput:
                continue
            campaign = settings.cache_get(conn, CAMPAIGNS, txn.campaign_id) if txn.campaign_id else None
            day = gifts.gift_date(
                txn.transacted_at or txn.created_at, txn.timezone, (campaign or {}).get("timezone"), rt.config.timezone
            )
            if not str(start) <= day <= str(end):
                continue
            as_refund = parse(Refund, data, where=f"Givebutter transaction {txn.id}")
            refunded = refunded_parts(as_refund)
            if data.get("refunded") is True and not any(p.refunded for p in as_refund.transactions):
                refunded = txn.amount
            ext = external_id(txn.id)
            # a ticket's or auction item's deductible part, lowered by its refunds as the refund rule does
            fair = deductible_amount(txn)
            kept = max(txn.amount - refunded, Decimal("0.00"))
            most: Decimal | None = None
            if fair is not None or refunded:
                most = min(kept, max((txn.amount if fair is None else fair) - refunded, Decimal("0.00")))
            why = (
                None if fair is None else f"{txn.amount - fair} of its {txn.amount} is a fair market value (a ticket or an item)"
            )
            job = {
                "source": "donations",
                "entity_type": "transaction",
                "entity_id": txn.id,
                "external_id": ext,
                "email": txn.email,
                "name": supporter_name(data),
                "amount": str(txn.amount),
            }
            items.append(
                Expected(
                    "donations",
                    ext,
                    txn.id,
                    max(txn.amount - refunded, Decimal("0.00")),
                    txn.amount,
                    day,
                    sync_job={**job, "payload": {"transaction": data, "origin": "reconcile"}},
                    refund_jobs=[
                        {
                            **job,
                            "entity_type": "refund",
                            "amount": f"-{refunded}",
                            "payload": {"refund": data, "origin": "reconcile"},
                        }
                    ]
                    if refunded
                    else [],
                    deductible=most,
                    deductible_why=why or (f"{refunded} refunded" if refunded else None),
                    no_gift=no_money(txn),
                    currency=txn.currency,
                )
            )
        return items, client.api.requests_sent


def payouts(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    """The period's payouts: transactions grouped by ``payout_id`` (each one's ``payout`` is its net), dated
    by Givebutter's payout list. Transactions are read from two weeks before the period: a payout pays
    out money taken in earlier."""
    after = f"{start - timedelta(days=14)}T00:00:00Z"
    before = f"{end + timedelta(days=1)}T00:00:00Z"
    found: dict[str, Payout] = {}
    with using(rt, "donations") as client:
        stated = {str(p.get("id")): p for p in client.payouts()}
        for data in client.transactions_between(after, before):
            payout_id = data.get("payout_id")
            if not payout_id or str(data.get("status") or "").lower() != "succeeded":
                continue
            payout_id = str(payout_id)
            info = stated.get(payout_id) or {}
            day = str(info.get("paid_at") or info.get("created_at") or data.get("transacted_at") or "")[:10]
            payout = found.setdefault(
                payout_id,
                Payout(
                    "donations",
                    payout_id,
                    day,
                    net=dollars(info["amount"]) if info.get("amount") is not None else None,
                    currency=info.get("currency") or data.get("currency"),
                ),
            )
            # what the donor paid: the amount and the processing fee they chose to cover (a real body:
            # amount 10, fee 0.61, fee_covered 0.61, payout 10; reference A3.1), so gross - fee - refunds = payout
            gross = dollars(data.get("amount") or 0) + dollars(data.get("fee_covered") or 0)
            refunded = refunded_parts(parse(Refund, data, where=f"Givebutter transaction {data['id']}"))
            net = dollars(data["payout"]) if data.get("payout") is not None else gross - refunded
            fee = dollars(data["fee"]) if data.get("fee") is not None else gross - refunded - net
            payout.lines.append(PayoutLine(external_id(data["id"]), str(data["id"]), gross, fee, refunded, net))
        requests = client.api.requests_sent
    return [p for p in found.values() if str(start) <= p.date <= str(end)], requests
