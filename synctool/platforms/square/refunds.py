"""Square refunds -> the CRM gift of the order they refund (the policy and the ledger: ``crm/refunds.py``).

A ``refund.created`` / ``refund.updated`` whose refund is ``COMPLETED`` is applied once, keyed by the
refund's id (a refund first seen ``PENDING`` is recorded as skipped, and applied by its ``COMPLETED``
update). Square records every refund, itemized or custom, as a *return order*: the refund's ``order_id``
is that return order, not the sale (reference: givebutter-square.md B7). The sale, whose gift is
``pos_order_<order id>``, is the refund's payment's ``order_id`` (one Square request), else the return
order's ``returns[].source_order_id``.
"""

from __future__ import annotations

from synctool.platform import Event, Job, Outcome, PermanentError, Skip, cents_to_dollars, gifts, payload, refunds
from synctool.platforms.square.client import PosClient
from synctool.platforms.square.rules import location
from synctool.platforms.square.webhook import Money, Notification, Order, PaymentRefund, external_id


def read(event: Event, job: Job) -> refunds.Refund:
    """The completed refund this job's delivery reports, with the gift it reduces."""
    if event.payload.get("refund"):  # the backup poll read it already
        data = event.payload["refund"]
    elif event.payload.get("refund_id"):  # reconcile --fix: the refund a payment lists, read from Square
        data = job.client("pos", PosClient).refund(event.payload["refund_id"])
    elif isinstance(event.data, Notification):
        data = event.data.data.object.get("refund")
    else:
        raise PermanentError("the job has neither a Square notification nor a refund id")
    found = payload(PaymentRefund, data, "the Square refund")
    if found.status != "COMPLETED":
        raise Skip(f"Square refund {found.id} is {found.status or 'in no state'}; it is applied once COMPLETED")
    cents = (found.amount_money or Money()).amount
    if cents is None:
        raise PermanentError(f"Square refund {found.id} has no amount_money")
    order_id = sale_order_id(job, found)
    zone = (location(job, found.location_id) or {}).get("timezone")
    on = gifts.gift_date(found.updated_at or found.created_at, zone, job.config.timezone)
    return refunds.Refund(
        "pos",
        "Square",
        found.id,
        external_id(order_id),
        cents_to_dollars(cents),
        on,
        currency=(found.amount_money or Money()).currency,
    )


def sale_order_id(job: Job, found: PaymentRefund) -> str:
    """The sale a refund gives money back for: its payment's order, else its return order's source. An
    unlinked refund (``unlinked``, or a return order whose returns name no source order) has none."""
    pos = job.client("pos", PosClient)
    unlinked = PermanentError(
        f"needs attention: Square refund {found.id} is unlinked (given back without its sale: its return names no "
        "source order), so no gift is known to reduce; if it refunds a gift, change that gift in the CRM by hand, "
        "then `synctool syncs resolve` this record"
    )
    if found.unlinked and not found.payment_id:
        raise unlinked
    if found.payment_id:
        order_id = pos.payment(found.payment_id).get("order_id")
        if order_id:
            return str(order_id)
    if found.order_id:
        order = payload(Order, pos.order(found.order_id), f"Square order {found.order_id}")
        sales = order.sale_ids()
        if len(sales) == 1:
            return sales.pop()
        if not order.returns:  # the refund names the sale itself
            return str(found.order_id)
        if not sales:
            raise unlinked
        raise PermanentError(
            f"Square refund {found.id}: its return order {found.order_id} gives back {len(sales)} sales; "
            "which gift it reduces is not known"
        )
    if found.payment_id:
        raise PermanentError(f"Square payment {found.payment_id} (refunded by {found.id}) belongs to no order: no gift to change")
    raise PermanentError(f"Square refund {found.id} names neither its payment nor its order: no gift to change")


def order_refund(event: Event, job: Job) -> Outcome:
    return refunds.run(job.refund_job(), read(event, job))
