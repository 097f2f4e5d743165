"""Who came: a Givebutter event campaign's orders become the mapped CRM event's invitations (``tickets``,
``crm.invitations``).

- An event campaign's transaction (``transaction.succeeded``, the poll, a backfill; a comped one too, which
  makes no gift) records its order: buyer, campaign, how many tickets its line items hold. Each
  ``ticket.created`` (or ``GET /v1/tickets``) records a ticket: holder, type, check-in. Either queues the order's
  ``invitations`` job, which runs after the gift (the gift and its constituent come first).
- The job waits until the order's tickets are all known (its line items say how many; ``TICKETS_WAIT`` at
  most), and while its campaign is mapped to no CRM event it ends ``skipped`` and is counted as waiting:
  ``synctool mappings events set`` queues them again.
- Check-ins: ``synctool poll`` reads ``GET /v1/tickets`` for each mapped event campaign from a day before its
  ``event.start_at`` to two days after its ``event.end_at`` (and only then); ``synctool events checkins CAMPAIGN``
  reads them on demand. ``/v1/tickets`` takes no filter (givebutter-square.md A5): every page is read.
- Refunds: a refund of the whole order (``refunds.py``) sets the buyer's invitation to RSVP no and removes its
  guests' invitations.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from synctool import mappings, settings
from synctool.crm import invitations
from synctool.crm.constituents import Person
from synctool.errors import InvalidInput, Skip, Wait
from synctool.platforms import tickets
from synctool.platforms.context import Job
from synctool.platforms.givebutter.webhook import CAMPAIGNS
from synctool.platforms.webhook import Event
from synctool.queue import jobs
from synctool.queue.handlers import handler
from synctool.queue.jobs import Outcome
from synctool.runtime import Runtime
from synctool.timeutil import age_s, parse_moment

SOURCE = "donations"
LABEL = "Givebutter order"
#: how long an order's invitations wait for tickets its line items announce and no ticket.created brought
TICKETS_WAIT = timedelta(minutes=30)


def ticket_count(txn: Any) -> int:
    """How many tickets a transaction's line items hold (``type`` item, ``subtype`` ticket: A3.1)."""
    count = 0
    for sub in txn.transactions:
        for item in sub.line_items:
            if isinstance(item, dict) and item.get("subtype") == "ticket":
                try:
                    count += int(item.get("quantity") or 1)
                except (TypeError, ValueError):
                    count += 1
    return count


def note_order(job: Job, txn: Any, campaign: dict[str, Any], constituent_id: str | None = None) -> bool:
    """An event campaign's transaction: record its order and queue its invitations; False for any other."""
    if (campaign.get("type") or "").lower() != "event" or not txn.campaign_id:
        return False
    tickets.record_order(
        job.conn, SOURCE, str(txn.id), campaign_id=str(txn.campaign_id), campaign=campaign.get("title") or txn.campaign_code,
        buyer_first_name=txn.first_name, buyer_last_name=txn.last_name, buyer_email=txn.email,
        amount=str(txn.amount), tickets_expected=ticket_count(txn), ordered_at=txn.created_at or txn.transacted_at,
        constituent_id=constituent_id, constituent_new=None if constituent_id is None else int(constituent_id in job.created),
    )  # fmt: skip
    queue(job.conn, str(txn.id))
    return True


def queue(conn: sqlite3.Connection, order_id: str) -> str:
    return jobs.enqueue_unless_waiting(conn, target="crm", source=SOURCE, entity_type="invitations", entity_id=order_id)


def note_ticket(conn: sqlite3.Connection, data: dict[str, Any], *, listed: bool = False) -> bool:
    """A ticket as Givebutter reports it (A3.2); True when an invitation shows something new of it. A ticket
    ``listed`` by ``GET /v1/tickets`` is live (a refund revoked it, if any, no more)."""

    def text(name: str, most: int = 200) -> str | None:
        value = data.get(name)
        return None if value is None or isinstance(value, (dict, list)) else str(value)[:most]

    return tickets.record_ticket(
        conn, SOURCE, str(data["id"]), str(data["transaction_id"]), first_name=text("first_name"),
        last_name=text("last_name"), email=text("email"), title=text("title"), price=text("price"),
        checked_in_at=text("checked_in_at", 40), refunded=0 if listed else None,
    )  # fmt: skip


def _constituent(job: Job, found: sqlite3.Row) -> tuple[str, bool]:
    """The buyer's constituent, and whether they were one before this order (staff may have invited them): a
    constituent this order's gift made (or this job, for a comped order) was invited by nobody yet."""
    if found["constituent_id"]:
        return str(found["constituent_id"]), not found["constituent_new"]
    person = Person(first_name=found["buyer_first_name"], last_name=found["buyer_last_name"], email=found["buyer_email"])
    cid, created = job.match_or_create(person)
    tickets.record_order(job.conn, SOURCE, found["order_id"], constituent_id=str(cid), constituent_new=int(created))
    return str(cid), not created


@handler(SOURCE, "invitations")
def order_invitations(event: Event, job: Job) -> Outcome:
    order_id = job.row["entity_id"]
    found = tickets.order(job.conn, SOURCE, order_id)
    if found is None:  # its transaction's job records it, then queues this job again
        raise Skip(f"order {order_id}: its transaction is not synced yet")
    mapped = tickets.event_of(job.conn, found["campaign_id"])
    if mapped is None:
        raise Skip(
            f"waits for an event mapping: synctool mappings events set {found['campaign_id']} --event N"
            " (synctool crm events lists the CRM's events)"
        )
    held = tickets.tickets_of(job.conn, SOURCE, [order_id])
    expected = found["tickets_expected"] or 0
    if len(held) < expected and not found["refunded"] and (age_s(found["updated_at"]) or 0) < TICKETS_WAIT.total_seconds():
        raise Wait(f"order {order_id}: {len(held)} of its {expected} tickets known; waiting for the rest", retry_after=60)
    cid, known_before = _constituent(job, found)
    campaign = settings.cache_get(job.conn, CAMPAIGNS, found["campaign_id"]) or {}
    zones = ((campaign.get("event") or {}).get("timezone"), campaign.get("timezone"), job.config.timezone)
    event_id = int(mapped["event_id"])

    def build() -> invitations.Invited:
        wanted = tickets.invited(job.conn, SOURCE, LABEL, event_id, cid, timezones=zones)
        wanted.known_before = known_before
        return wanted

    writer = invitations.Writer(job.crm, job.conn, job_id=job.id, confirm_after_s=job.config.crm.confirm_after_s)
    said = writer.write(event_id, cid, build)
    return Outcome("succeeded", f"event {mapped['event_id']}: {said}", crm_constituent_id=cid)


def refunded(conn: sqlite3.Connection, order_id: str, client: Any) -> str | None:
    """After a refund of an event order: refunded whole (its refunds reach its amount), its tickets end and its
    invitations are queued (the buyer's RSVP becomes no, its guests' invitations are removed). A refund of part of
    an order names no ticket in what Givebutter sends (givebutter-square.md A3: a ticket has no refund field), so
    its invitations stay as they are; say which in `synctool events show`. None for an order of no event."""
    from synctool.crm import refunds

    found = tickets.order(conn, SOURCE, order_id)
    if found is None:
        return None
    so_far = refunds.refunded_so_far(conn, f"donations_{order_id}")
    if found["amount"] is None or so_far < Decimal(found["amount"]):
        # which tickets: the ones the refund revoked have left Givebutter's ticket list
        read = read_checkins(conn, client(), {found["campaign_id"]})
        return f"order {order_id} refunded in part ({so_far} of {found['amount']}): {read['changed']} ticket(s) changed"
    ended = tickets.refund_tickets(conn, SOURCE, order_id)
    queue(conn, order_id)
    return f"order {order_id} refunded whole: its {ended} ticket(s) end, its invitations are queued"


# -- check-ins -----------------------------------------------------------------------------------------------


def window(campaign: dict[str, Any]) -> tuple[datetime, datetime] | None:
    """When a campaign's check-ins are read: a day before its event starts to two days after it ends."""
    block = campaign.get("event")
    if not isinstance(block, dict):
        return None
    start, end = block.get("start_at"), block.get("end_at") or block.get("start_at")
    if not start:
        return None
    try:
        return parse_moment(str(start)) - timedelta(days=1), parse_moment(str(end)) + timedelta(days=2)
    except InvalidInput:
        return None


def read_checkins(conn: sqlite3.Connection, client: Any, campaign_ids: set[str]) -> dict[str, int]:
    """Read every ticket (``GET /v1/tickets`` takes no filter) and keep each one (a backfilled order not synced
    yet finds its tickets here); queue the orders of these campaigns whose tickets changed. Returns the tickets
    read, those of these campaigns, those changed and the orders queued."""
    marks = ",".join("?" * len(campaign_ids)) or "NULL"
    orders = {
        r["order_id"]
        for r in conn.execute(
            f"SELECT order_id FROM event_orders WHERE source = ? AND campaign_id IN ({marks})", (SOURCE, *campaign_ids)
        )
    }
    read = kept = changed = 0
    touched: set[str] = set()
    listed: set[str] = set()
    for ticket in client.tickets():
        read += 1
        order_id = str(ticket.get("transaction_id") or "")
        if not order_id or not ticket.get("id"):
            continue
        listed.add(str(ticket["id"]))
        new = note_ticket(conn, ticket, listed=True)
        if order_id in orders:
            kept += 1
            if new:
                changed += 1
                touched.add(order_id)
    # a ticket a refund revoked leaves the list (no refund Givebutter sends names its tickets, A3): one missing from
    # this listing is revoked only when Givebutter answers 404 for it, so a short or shifting page revokes nothing
    for order_id in orders:
        held = tickets.tickets_of(conn, SOURCE, [order_id])
        gone = [
            t["ticket_id"]
            for t in held
            if not t["refunded"] and t["ticket_id"] not in listed and _revoked(client, t["ticket_id"])
        ]
        if gone and tickets.refund_tickets(conn, SOURCE, order_id, gone):
            changed += len(gone)
            touched.add(order_id)
    for order_id in sorted(touched):
        queue(conn, order_id)
    return {"tickets_read": read, "tickets": kept, "changed": changed, "orders_queued": len(touched)}


def _revoked(client: Any, ticket_id: str) -> bool:
    """Whether Givebutter answers 404 for a ticket (a refund revoked it)."""
    from synctool.errors import RemoteError

    try:
        client.ticket(ticket_id)
    except RemoteError as exc:
        return exc.status == 404
    return False


def campaigns_due(conn: sqlite3.Connection, now: datetime) -> set[str]:
    """The mapped event campaigns whose check-in window is open now."""
    due = set()
    for mapped in mappings.all_of(conn, tickets.EVENT):
        campaign = settings.cache_get(conn, CAMPAIGNS, mapped["key"]) or {}
        opened = window(campaign)
        if opened is not None and opened[0] <= now <= opened[1]:
            due.add(str(mapped["key"]))
    return due


def poll_checkins(conn: sqlite3.Connection, rt: Runtime, client: Any) -> dict[str, int] | None:
    """The poll's part: check-ins of the mapped event campaigns whose window is open; None when none is."""
    due = campaigns_due(conn, rt.clock())
    return read_checkins(conn, client, due) if due else None


def checkins(conn: sqlite3.Connection, rt: Runtime, campaign_id: str) -> dict[str, Any]:
    """``Platform.checkins``: read one mapped campaign's check-ins now, whatever the date."""
    from synctool.platforms.givebutter.client import from_runtime

    client = from_runtime(rt)
    try:
        return read_checkins(conn, client, {campaign_id})
    finally:
        client.close()
