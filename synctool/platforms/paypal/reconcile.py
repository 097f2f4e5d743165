"""A period's money as PayPal's Transaction Search lists it (``reconcile``, ``backfill``) and its settlement lines:
the withdrawals to the bank (``reconcile payouts``).

PayPal keeps one balance rather than payouts made of payments: a withdrawal (``T04nn``) names no payments, so each
is a ``Payout`` of its amount, without lines."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from synctool.platform import Connection, Expected, Payout, Runtime, payload, using
from synctool.platforms.paypal import transactions
from synctool.platforms.paypal.models import ROLE, Donation, external_id
from synctool.platforms.paypal.poll import gift_job, refund_job
from synctool.platforms.paypal.rules import gift_day

ZERO = Decimal("0.00")


def _window(start: date, end: date) -> tuple[datetime, datetime]:
    """A day either side: a local day may begin the day before in UTC or end the day after."""
    return datetime.combine(start - timedelta(days=1), time(), UTC), datetime.combine(end + timedelta(days=2), time(), UTC)


def expected(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    """One ``Expected`` per payment of the period: its amount after the refunds and reversals PayPal lists for it
    up to now, its local day, the job that syncs it and the jobs that apply its refunds."""
    since, until = _window(start, end)
    now = datetime.now(UTC)
    with using(rt, ROLE) as client:
        found = client.transactions(since, until)
        # refunds of the period's payments may come later: read on to now (or a year on, at most)
        later = client.transactions(until, min(now, until + timedelta(days=366))) if until < now else []
        spent = client.api.requests_sent
    back: dict[str, list[dict]] = {}
    for row in found + later:
        if transactions.is_refund(row):
            back.setdefault(str(transactions.refund(row)["payment_id"]), []).append(row)
    section = rt.config.section(ROLE)
    items = []
    for row in found:
        if not transactions.is_payment(row):
            continue
        data = transactions.donation(row)
        gift = payload(Donation, data, f"PayPal payment {data.get('id')}")
        day = gift_day(gift, section, rt.config.timezone)
        if not str(start) <= day <= str(end):
            continue
        refunds = back.get(gift.id, [])
        refunded = sum((Decimal(str(transactions.refund(r)["amount"]["value"])) for r in refunds), ZERO)
        items.append(
            Expected(
                ROLE,
                external_id(gift.id),
                gift.id,
                max(gift.amount.value - refunded, ZERO),
                gift.amount.value,
                day,
                sync_job=gift_job(row, "reconcile"),
                refund_jobs=[refund_job(r, "reconcile") for r in refunds],
                currency=gift.amount.currency_code,
                deductible_why=f"{refunded} refunded" if refunded else None,
            )
        )
    return items, spent


def payouts(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    """The period's withdrawals to the bank (``T04nn``), each a payout of its amount."""
    since, until = _window(start, end)
    with using(rt, ROLE) as client:
        found = client.transactions(since, until)
        spent = client.api.requests_sent
    items = []
    for row in found:
        if not transactions.is_withdrawal(row):
            continue
        info = row["transaction_info"]
        day = str(info.get("transaction_initiation_date") or "")[:10]
        if not str(start) <= day <= str(end):
            continue
        amount = info.get("transaction_amount") or {}
        items.append(Payout(ROLE, str(info.get("transaction_id")), day, [], net=abs(Decimal(str(amount.get("value") or "0"))),
                            currency=amount.get("currency_code")))  # fmt: skip
    return items, spent
