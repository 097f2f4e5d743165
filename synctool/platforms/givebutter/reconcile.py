"""Givebutter's money in a period, for ``synctool reconcile``: its succeeded transactions (``GET
/v1/transactions`` with ``transactedAfter`` / ``transactedBefore``, 100 a page), each with its refunded
parts taken off."""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from synctool import platforms, settings
from synctool.crm import gifts
from synctool.errors import InvalidInput
from synctool.platforms.givebutter.rules import CAMPAIGNS
from synctool.platforms.givebutter.webhook import Transaction, external_id, supporter_name
from synctool.platforms.reconcile import Expected
from synctool.validation import parse


def expected(conn: sqlite3.Connection, rt: Any, start: date, end: date) -> tuple[list[Expected], int]:
    """The period's transactions as gifts, and the Givebutter requests it cost. The query is a day wider on
    each side: the gift date is the donor's local day."""
    after = f"{start - timedelta(days=1)}T00:00:00Z"
    before = f"{end + timedelta(days=2)}T00:00:00Z"
    items = []
    with platforms.using(rt, "donations") as client:
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
            parts = [p for p in txn.transactions if p.refunded]
            refunded = sum((p.amount or Decimal(0) for p in parts), Decimal(0)) if parts else Decimal(0)
            if data.get("refunded") is True and not parts:
                refunded = txn.amount
            ext = external_id(txn.id)
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
                )
            )
        return items, client.api.requests_sent
