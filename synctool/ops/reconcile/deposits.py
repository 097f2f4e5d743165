"""``reconcile payouts``: the period's bank deposits, each added up from its entries, with which of its
transactions have their gift in the CRM; and, when asked, the deposit written onto each of those gifts."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, Optional, TypedDict

from pydantic import Field

from synctool import platforms, store
from synctool.ops.per_platform import each, requests_by_source, words
from synctool.ops.reconcile.crm_side import CrmGift, crm_client, gifts_by_id, ledger_rows
from synctool.ops.reconcile.periods import period
from synctool.platforms.reconcile import Payout, PayoutLine
from synctool.queue import jobs
from synctool.runtime import Runtime
from synctool.validation import Query

if TYPE_CHECKING:
    from synctool.crm.client import CrmClient


class PayoutsQuery(Query):
    """GET /api/payouts."""

    start: Optional[str] = Field(None, alias="from")
    end: Optional[str] = Field(None, alias="to")
    source: Optional[str] = None


class PayoutRow(TypedDict):
    """One payout: its sums (to the cent), the payout's own amount and any difference, and its transactions'
    gifts."""

    source: str
    payout_id: str
    date: str
    gross: str
    fees: str
    refunds: str
    net: str
    stated_net: str | None
    difference: str | None
    problem: str | None
    transactions: int
    with_gift: int
    without_gift: list[str]
    not_in_crm: list[str]


def payouts(
    conn: store.Connection,
    rt: Runtime,
    *,
    start: str | None = None,
    end: str | None = None,
    source: str | None = None,
    write_deposits: bool = False,
    client: CrmClient | None = None,
) -> dict[str, Any]:
    """One row per payout (bank deposit) of the period: gross, fees, refunds and net (gross - fees - refunds,
    to the cent), the payout's own amount and any difference, and which of its transactions have their gift
    in the CRM, as this run reads it (synctool's ledger names the gift; one CRM search per 100 gifts says
    whether the CRM still holds it). ``write_deposits`` queues, for each gift the CRM holds, a paced PATCH of
    its ``deposit_date`` and ``deposited_amount``; a gift it no longer holds is reported, never written."""
    first, last = period(start, end)
    chosen = platforms.chosen(rt.config, source, lambda p: p.payouts)

    def deposits(platform: platforms.Platform) -> tuple[list[Payout], int]:
        assert platform.payouts is not None
        return platform.payouts(conn, rt, first, last)

    found, failed = each(chosen, deposits)
    requests = {name: spent for name, (_, spent) in found.items()}
    listed = [(name, payout) for name, (payouts_, _) in found.items() for payout in payouts_]
    keys = {line.external_id for _, payout in listed for line in payout.lines if line.external_id}
    ledger = {k: r["crm_id"] for k, r in ledger_rows(conn, keys).items() if r["state"] == "done" and r["crm_id"]}
    held, crm_requests = _gifts_held(conn, rt, client, ledger) if ledger else ({}, 0)
    rows: list[PayoutRow] = []
    queued = 0
    for name, payout in listed:
        lines = [line for line in payout.lines if line.external_id]
        gone = [line.external_id for line in lines if line.external_id in ledger and ledger[line.external_id] not in held]
        rows.append(_payout_row(name, payout, lines, ledger, gone))
        if write_deposits:
            queued += _queue_deposits(
                conn, name, payout, [line for line in lines if line.external_id in ledger and line.external_id not in gone]
            )
    return {
        "from": str(first),
        "to": str(last),
        "payouts": rows,
        "deposits_queued": queued,
        "platform_requests": requests,
        "crm_requests": crm_requests,
        "sources": requests_by_source(chosen, requests, failed),
        "failed": words(failed),
    }


def _gifts_held(
    conn: store.Connection, rt: Runtime, client: CrmClient | None, ledger: dict[str, str]
) -> tuple[dict[str, CrmGift], int]:
    """The CRM's gifts among those the ledger names, by id, and the requests that took."""
    with crm_client(conn, rt, client) as crm:
        sent_before = crm.requests_sent
        held = gifts_by_id(crm, sorted(set(ledger.values())))
        return held, crm.requests_sent - sent_before


def _payout_row(name: str, payout: Payout, lines: list[PayoutLine], ledger: dict[str, str], gone: list[str]) -> PayoutRow:
    without = [line.external_id for line in lines if line.external_id not in ledger]
    gross = sum((line.gross for line in payout.lines), Decimal(0))
    fees = sum((line.fee for line in payout.lines), Decimal(0))
    refunds = sum((line.refund for line in payout.lines), Decimal(0))
    net = sum((line.net for line in payout.lines), Decimal(0))
    problems = []
    if gross - fees - refunds != net:
        problems.append(f"its entries do not add up: {gross:.2f} - {fees:.2f} - {refunds:.2f} is not {net:.2f}")
    if payout.net is not None and payout.net != net:
        problems.append(f"the payout is {payout.net:.2f}, its entries {net:.2f} (difference {payout.net - net:.2f})")
    return {
        "source": name,
        "payout_id": payout.payout_id,
        "date": payout.date,
        "gross": f"{gross:.2f}",
        "fees": f"{fees:.2f}",
        "refunds": f"{refunds:.2f}",
        "net": f"{net:.2f}",
        "stated_net": None if payout.net is None else f"{payout.net:.2f}",
        "difference": None if payout.net is None else f"{payout.net - net:.2f}",
        "problem": "; ".join(problems) or None,
        "transactions": len(lines),
        "with_gift": len(lines) - len(without) - len(gone),
        "without_gift": without,
        "not_in_crm": gone,
    }


def _queue_deposits(conn: store.Connection, source: str, payout: Payout, lines: list[PayoutLine]) -> int:
    """A paced write of the deposit onto each of these lines' gifts (one waiting job each at most)."""
    with store.atomic(conn):
        for line in lines:
            jobs.enqueue_unless_waiting(
                conn,
                source=source,
                target="crm",
                entity_type="deposit",
                entity_id=f"{payout.payout_id}:{line.external_id}",
                external_id=line.external_id,
                payload={
                    "payout_id": payout.payout_id,
                    "deposit_date": payout.date,
                    "deposited_amount": str(line.net),
                    "currency": payout.currency,
                },
            )
    return len(lines)
