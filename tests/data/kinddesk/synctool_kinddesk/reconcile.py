"""A period's money as KindDesk lists it (``reconcile``, ``backfill``) and its payouts (``reconcile payouts``)."""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from synctool.platform import Expected, Payout, PayoutLine, Runtime, gift_date, payload, using
from synctool_kinddesk.models import ROLE, Gift, external_id
from synctool_kinddesk.poll import gift_job, refund_job

ZERO = Decimal("0.00")


def _day(rt: Runtime, gift: Gift) -> str:
    """The gift's day as the sync writes it (``rules.gift_body``): where it was given, not in UTC."""
    return gift_date(gift.created_at, gift.timezone, rt.config.section(ROLE).timezone, rt.config.timezone)


def _window(start: date, end: date) -> tuple[str, str]:
    """The API's window for a period of local days: a day either side, as a local day may begin the day
    before in UTC or end the day after."""
    return f"{start - timedelta(days=1)}T00:00:00Z", f"{end + timedelta(days=2)}T00:00:00Z"


def expected(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    """One ``Expected`` per gift of the period: its amount after its refunds, its local day, the job that syncs it
    and the jobs that apply its refunds (``reconcile --fix`` queues those a CRM gift lacks)."""
    with using(rt, ROLE) as client:
        listed = client.gifts(*_window(start, end))
        spent = client.api.requests_sent
    items = []
    for data in listed:
        gift = payload(Gift, data, f"KindDesk gift {data.get('id')}")
        day = _day(rt, gift)
        if not str(start) <= day <= str(end):
            continue
        refunded = gift.refunded
        items.append(
            Expected(
                ROLE,
                external_id(gift.id),
                gift.id,
                max(gift.amount - refunded, ZERO),
                gift.amount,
                day,
                sync_job=gift_job(data, "reconcile"),
                refund_jobs=[refund_job(r, gift.id, "reconcile") for r in data.get("refunds") or []],
                currency=gift.currency,
                deductible_why=f"{refunded} refunded" if refunded else None,
                # a gift of nothing is skipped by its job ("no money"): matched, never missing
                no_gift=f"no money (KindDesk gift {gift.id} of {gift.amount})" if gift.amount <= 0 else None,
            )
        )
    return items, spent


def payouts(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    """The period's bank deposits, each with its gifts' lines (gross, fee, refund, net)."""
    with using(rt, ROLE) as client:
        listed = client.payouts(str(start), str(end))
        spent = client.api.requests_sent
    found = []
    for p in listed:
        lines = [_line(line) for line in p.get("lines") or []]
        found.append(
            Payout(ROLE, str(p["id"]), str(p["arrival_date"]), lines, net=Decimal(str(p["net"])), currency=p.get("currency"))
        )
    return found, spent


def _line(line: dict[str, Any]) -> PayoutLine:
    gross, fee, refund = (Decimal(str(line.get(k) or "0")) for k in ("gross", "fee", "refund"))
    return PayoutLine(external_id(line["gift_id"]), str(line["gift_id"]), gross, fee, refund, gross - fee - refund)
