"""A period's money as Stripe lists it (``reconcile``, ``backfill``: ``GET /v1/charges`` with ``created[gte|lt]``,
paged with ``starting_after``) and its payouts (``reconcile payouts``: ``GET /v1/payouts`` by arrival date, each
one's ``GET /v1/balance_transactions?payout=``)."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from synctool.platform import Expected, Payout, PayoutLine, PermanentError, Runtime, gift_date, payload, using
from synctool.platforms.stripe_donations.models import ROLE, Charge, external_id, major
from synctool.platforms.stripe_donations.poll import donation, gift_job, refund_job

if TYPE_CHECKING:
    from synctool.platform import Connection

ZERO = Decimal("0.00")
logger = logging.getLogger("synctool.stripe_donations")


def _unix(day: date) -> int:
    return int(datetime.combine(day, time(), UTC).timestamp())


def _day(rt: Runtime, unix: int | None) -> str:
    """A moment's day as the gift's job writes it (``rules.day``)."""
    moment = datetime.fromtimestamp(unix, UTC).isoformat(timespec="seconds") if unix else None
    return gift_date(moment, rt.config.section(ROLE).timezone, rt.config.timezone)


def expected(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    """One ``Expected`` per succeeded charge of the period that is not the portal's: after its refunds, on its
    local day, with the job that makes it and the job that applies its refunded total."""
    with using(rt, ROLE) as client:
        listed = client.charges(gte=_unix(start - timedelta(days=1)), lt=_unix(end + timedelta(days=2)))
        spent = client.api.requests_sent
    items = []
    for data in listed:
        if not donation(data):
            continue
        try:
            charge = payload(Charge, data, f"Stripe charge {data.get('id')}")
        except PermanentError as exc:  # its gift's job fails on it too, and the sync log says why
            logger.warning("reconcile leaves out %s", exc)
            continue
        day = _day(rt, charge.created)
        if not str(start) <= day <= str(end):
            continue
        gross = major(charge.amount, charge.currency)
        refunded = major(charge.amount_refunded, charge.currency)
        items.append(
            Expected(
                ROLE,
                external_id(charge.payment),
                charge.id,
                max(gross - refunded, ZERO),
                gross,
                day,
                sync_job=gift_job(data, "reconcile"),
                refund_jobs=[refund_job(data, "reconcile")] if charge.amount_refunded else [],
                currency=charge.currency.upper(),
                deductible_why=f"{refunded} refunded" if refunded else None,
                no_gift=f"no money (Stripe charge {charge.id} of 0)" if charge.amount <= 0 else None,
            )
        )
    return items, spent


def payouts(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    """The period's payouts (by arrival date), each with one line per charge it paid out: gross, Stripe's fee,
    refunds, net."""
    found = []
    with using(rt, ROLE) as client:
        for p in client.payouts(_unix(start), _unix(end + timedelta(days=1))):
            lines: dict[str, dict[str, Any]] = {}
            for txn in client.payout_lines(str(p["id"])):
                source = txn.get("source")
                charge_id = source.get("charge") or source.get("id") if isinstance(source, dict) else source
                payment = (source.get("payment_intent") if isinstance(source, dict) else None) or charge_id
                if not charge_id or txn.get("type") not in ("charge", "payment", "refund", "payment_refund"):
                    continue
                cur = str(txn.get("currency") or "usd")
                line = lines.setdefault(
                    str(payment), {"id": str(charge_id), "gross": ZERO, "fee": ZERO, "refund": ZERO, "net": ZERO}
                )
                amount = major(int(txn.get("amount") or 0), cur)
                if txn.get("type") in ("refund", "payment_refund"):
                    line["refund"] += -amount
                else:
                    line["gross"] += amount
                line["fee"] += major(int(txn.get("fee") or 0), cur)
                line["net"] += major(int(txn.get("net") or 0), cur)
            arrival = datetime.fromtimestamp(int(p.get("arrival_date") or 0), UTC).date().isoformat()
            cur = str(p.get("currency") or "usd")
            found.append(
                Payout(
                    ROLE,
                    str(p["id"]),
                    arrival,
                    [PayoutLine(external_id(k), v["id"], v["gross"], v["fee"], v["refund"], v["net"]) for k, v in lines.items()],
                    net=major(int(p.get("amount") or 0), cur),
                    currency=cur.upper(),
                )
            )
        spent = client.api.requests_sent
    return found, spent
