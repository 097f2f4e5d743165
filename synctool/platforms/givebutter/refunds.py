"""Givebutter refunds -> the CRM gift they reduce (the policy and the ledger: ``crm/refunds.py``).

``refund.created`` comes in two shapes (Givebutter publishes no schema): a refund object
(``{id, transaction_id, amount, created_at}``), one refund keyed by its own id; or the refunded
transaction itself (``refunded: true`` and its refunded ``transactions[]``), whose refunded amount is the
running total, so the refund applied is what that total adds to the refunds already applied. A refund of an event
order also ends its tickets, or keeps what it says of them for the order's invitations job (``events.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from synctool.platform import (
    Event,
    Job,
    Outcome,
    PermanentError,
    Skip,
    SynctoolError,
    Unit,
    gifts,
    parse,
    payload,
    refunds,
    settings,
    tickets,
)
from synctool.platforms.givebutter import events
from synctool.platforms.givebutter.checkins import read_checkins
from synctool.platforms.givebutter.client import DonationsClient
from synctool.platforms.givebutter.webhook import Refund, external_id, refund_details, refunded_parts


def read(event: Event, job: Job) -> refunds.Refund:
    """The refund this job's ``refund.created`` delivery reports."""
    # reconcile --fix queues the refunded transaction itself; a webhook's job reads its delivery
    data = payload(Refund, event.payload.get("refund") or event.data, "the Givebutter refund")
    details = refund_details(data)
    if not details.transaction_id:
        raise PermanentError("the Givebutter refund names no transaction (neither transaction_id nor id)")
    if details.amount is None:
        raise PermanentError(
            f"needs attention: the Givebutter refund of transaction {details.transaction_id} states no amount; "
            "adjust its CRM gift by hand, then `synctool syncs resolve` this record"
        )
    ext = external_id(details.transaction_id)
    on = gifts.gift_date(details.moment, data.timezone, job.config.timezone)
    if not details.cumulative:
        refund_id = details.refund_id or f"{details.transaction_id}@{details.moment or job.row['id']}"
        key = f"donations:{refund_id}"
        done = refunds.recorded(job.conn, key)
        amount = details.amount if done is not None else covered(job, details.transaction_id, ext, details.amount)
        return refunds.Refund("donations", "Givebutter", refund_id, ext, amount, on, key=key, currency=data.currency)
    new = details.amount - refunds.refunded_so_far(job.conn, ext)
    refund_id = f"{details.transaction_id} (refunded total {details.amount})"
    if new <= 0:
        raise Skip(f"Givebutter transaction {details.transaction_id}: its refunded total {details.amount} is already applied")
    return refunds.Refund(
        "donations",
        "Givebutter",
        refund_id,
        ext,
        new,
        on,
        key=f"donations:{details.transaction_id}:{details.amount}",
        currency=data.currency,
    )


def covered(job: Job, transaction_id: str, ext: str, amount: Decimal) -> Decimal:
    """What a refund object adds beyond the refunds already applied. The same money can arrive in either
    shape (a refund object by webhook, the refunded transaction from ``reconcile --fix``), so the
    transaction's refunded total on Givebutter (one Givebutter request, no CRM request) bounds it; when
    Givebutter does not show the refund yet, the object's amount stands."""
    try:
        total = refunded_parts(
            parse(Refund, job.client("donations", DonationsClient).transaction(transaction_id), where="the transaction")
        )
    except SynctoolError:  # unreachable, or not readable: the object's amount stands
        return amount
    so_far = refunds.refunded_so_far(job.conn, ext)
    if total <= 0 or total >= so_far + amount:
        return amount
    return max(total - so_far, Decimal("0.00"))


def refund(event: Event, job: Job) -> Outcome:
    found = read(event, job)
    outcome = refunds.run(job.refund_job(), found)
    data = event.payload.get("refund") or event.data
    said = event_order_refunded(job.unit, found.gift_external_id.removeprefix("donations_"), lambda: job.client("donations", DonationsClient),
                                data if isinstance(data, dict) else None)  # fmt: skip
    if said:
        outcome.message = f"{outcome.message}; {said}"
    return outcome


def event_order_refunded(
    work: Unit, order_id: str, client: Callable[[], DonationsClient], data: dict[str, Any] | None = None
) -> str | None:
    """After a refund of an event order (``data``: what ``refund.created`` carried): refunded whole (its refunds
    reach its amount), its tickets end; refunded in part, what the refund says of its tickets is kept for the
    order's invitations job (``settle_refunds``), after the tickets' own word is read (``/v1/tickets``: a revoked
    ticket leaves it). Either way the invitations job is queued. None for an order of no event. Its writes gather in
    the refund job's unit (``work``); the requests it sends commit what was gathered first."""
    conn = work.conn
    found = tickets.order(conn, events.SOURCE, order_id)
    if found is None:
        return None
    so_far = refunds.refunded_so_far(conn, f"donations_{order_id}")
    if found["amount"] is None or so_far < Decimal(found["amount"]):
        reader = client()
        read = read_checkins(work, reader, {found["campaign_id"]})  # the tickets' own word: revoked, or a status
        txn = data if data and any(isinstance(p, dict) and p.get("refunded") for p in data.get("transactions") or []) else None
        if txn is None:
            try:
                txn = reader.transaction(order_id)  # the refunded parts, when the refund names none (a refund object)
            except Exception:  # unreachable or unreadable: the amount alone is what is known
                txn = None
        said = events.refund_evidence(txn if isinstance(txn, dict) else None)
        kept = settings.cache_get(conn, events.REFUNDS, order_id) or {}
        with work.gather():
            settings.cache_put(conn, events.REFUNDS, order_id, {**kept, **said, "amount": str(so_far)})
            events.queue(conn, order_id)
        named = ", ".join(f"{kind} x{n}" for kind, n in said["refunded"].items()) or "no ticket line"
        return (
            f"order {order_id} refunded in part ({so_far} of {found['amount']}; refunded lines: {named}):"
            f" {read['changed']} ticket(s) changed, its invitations queued"
        )
    with work.gather():
        ended = tickets.refund_tickets(conn, events.SOURCE, order_id)
        events.queue(conn, order_id)
    return f"order {order_id} refunded whole: its {ended} ticket(s) end, its invitations are queued"
