"""Givebutter refunds -> the CRM gift they reduce (the policy and the ledger: ``crm/refunds.py``).

``refund.created`` comes in two shapes (Givebutter publishes no schema): a refund object
(``{id, transaction_id, amount, created_at}``), one refund keyed by its own id; or the refunded
transaction itself (``refunded: true`` and its refunded ``transactions[]``), whose refunded amount is the
running total, so the refund applied is what that total adds to the refunds already applied.
"""

from __future__ import annotations

from decimal import Decimal

from synctool.crm import gifts, refunds
from synctool.errors import PermanentError, Skip, SynctoolError
from synctool.platforms.context import Job
from synctool.platforms.givebutter import events
from synctool.platforms.givebutter.client import DonationsClient
from synctool.platforms.givebutter.webhook import Refund, external_id, refund_details, refunded_parts
from synctool.platforms.webhook import Event
from synctool.queue.handlers import handler
from synctool.queue.jobs import Outcome
from synctool.validation import parse, payload


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


@handler("donations", "refund")
def refund(event: Event, job: Job) -> Outcome:
    found = read(event, job)
    outcome = refunds.run(job.refund_job(), found)
    data = event.payload.get("refund") or event.data
    said = events.refunded(job.conn, found.gift_external_id.removeprefix("donations_"), lambda: job.client("donations", DonationsClient),
                           data if isinstance(data, dict) else None)  # fmt: skip
    if said:
        outcome.message = f"{outcome.message}; {said}"
    return outcome
