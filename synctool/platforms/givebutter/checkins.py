"""Check-ins: who came to a Givebutter event, read from its tickets (``GET /v1/tickets``) and written as attendance
by the order's invitations job (``events.py``).

``synctool poll`` reads every ticket for each mapped event campaign from a day before its ``event.start_at`` to two
days after its ``event.end_at`` (and only then: ``poll_checkins``); ``synctool events checkins CAMPAIGN`` reads them on
demand (``checkins``, the platform's hook). ``/v1/tickets`` takes no filter (givebutter-square.md A5): every page is
read. A ticket missing from the listing is revoked only when Givebutter answers 404 for it. Whichever read saw a
check-in first (another event's, a refund's), every order of these campaigns with a live checked-in ticket whose
attendance is not written yet is queued.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from synctool.platform import InvalidInput, JsonObject, Runtime, Unit, invitations, mappings, parse_moment, settings, tickets
from synctool.platforms.givebutter.events import SOURCE, note_ticket, queue
from synctool.platforms.givebutter.webhook import CAMPAIGNS

if TYPE_CHECKING:
    from synctool.platform import Connection
    from synctool.platforms.givebutter.client import DonationsClient


def window(campaign: JsonObject) -> tuple[datetime, datetime] | None:
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


def read_checkins(work: Unit, client: DonationsClient, campaign_ids: set[str]) -> dict[str, int]:
    """Read every ticket (``GET /v1/tickets`` takes no filter) and keep each one (a backfilled order not synced
    yet finds its tickets here); queue the orders of these campaigns whose tickets changed. Returns the tickets
    read, those of these campaigns, those changed and the orders queued. Its writes gather in ``work`` (a refund job's
    unit; outside a job, an unbound one: each its own commit); no request is sent inside one."""
    conn = work.conn
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
        with work.gather():
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
        if not gone:
            continue
        with work.gather():
            ended = tickets.refund_tickets(conn, SOURCE, order_id, gone)
        if ended:
            changed += len(gone)
            touched.add(order_id)
    # whichever read saw a check-in first (another event's, a refund's), one not yet written as attendance is due
    touched |= unattended(conn, orders)
    with work.gather():
        for order_id in sorted(touched):
            queue(conn, order_id)
    return {"tickets_read": read, "tickets": kept, "changed": changed, "orders_queued": len(touched)}


def unattended(conn: Connection, order_ids: set[str]) -> set[str]:
    """The orders (of ``order_ids``) with a live checked-in ticket whose attendance synctool has not written: its
    holder's invitation (the buyer's own, or the guest's) has no ``attended_on`` at the campaign's mapped event."""
    due: set[str] = set()
    for found in (tickets.order(conn, SOURCE, o) for o in sorted(order_ids)):
        if found is None or found["refunded"]:
            continue
        mapped = tickets.event_of(conn, found["campaign_id"])
        checked = [t for t in tickets.tickets_of(conn, SOURCE, [found["order_id"]]) if t["checked_in_at"] and not t["refunded"]]
        if mapped is None or not checked:
            continue
        if not found["constituent_id"]:
            due.add(found["order_id"])
            continue
        for ticket in checked:
            key = "" if tickets.is_buyer(ticket, found) else f"{SOURCE}:{ticket['ticket_id']}"
            row = invitations.recorded(conn, int(mapped["event_id"]), found["constituent_id"], key)
            if row is None or row["state"] != "done" or not row["attended_on"]:
                due.add(found["order_id"])
                break
    return due


def _revoked(client: DonationsClient, ticket_id: str) -> bool:
    """Whether Givebutter answers 404 for a ticket (a refund revoked it)."""
    from synctool.platform import RemoteError

    try:
        client.ticket(ticket_id)
    except RemoteError as exc:
        return exc.status == 404
    return False


def campaigns_due(conn: Connection, now: datetime) -> set[str]:
    """The mapped event campaigns whose check-in window is open now."""
    due = set()
    for mapped in mappings.all_of(conn, tickets.EVENT):
        campaign = settings.cache_get(conn, CAMPAIGNS, mapped["key"]) or {}
        opened = window(campaign)
        if opened is not None and opened[0] <= now <= opened[1]:
            due.add(str(mapped["key"]))
    return due


def poll_checkins(conn: Connection, rt: Runtime, client: DonationsClient) -> dict[str, int] | None:
    """The poll's part: check-ins of the mapped event campaigns whose window is open; None when none is."""
    due = campaigns_due(conn, rt.clock())
    return read_checkins(Unit(conn), client, due) if due else None


def checkins(conn: Connection, rt: Runtime, campaign_id: str) -> dict[str, int]:
    """``Platform.checkins``: read one mapped campaign's check-ins now, whatever the date."""
    from synctool.platforms.givebutter.client import from_runtime

    client = from_runtime(rt)
    try:
        return read_checkins(Unit(conn), client, {campaign_id})
    finally:
        client.close()
