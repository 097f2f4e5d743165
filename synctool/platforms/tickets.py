"""Event orders and their tickets, as a platform reports them (a Givebutter event campaign's transactions and
``ticket.created``s, its ``/v1/tickets`` check-ins), and what the CRM's invitations should say of them.

An order belongs to a platform campaign; a campaign mapped to a CRM event (``synctool mappings events set``,
mapping kind ``event``) has its orders written as that event's invitations (``crm.invitations``): one per buyer,
with a note per order and every holder's name, a guest invitation per holder who is not the buyer, attendance
for those who checked in. The orders of an event campaign with no mapping wait, counted (``waiting``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from synctool import mappings, store
from synctool.crm import gifts
from synctool.crm.invitations import LIMIT, NO, YES, Guest, Invited

#: the mapping kind: platform campaign id -> ``{event_id, event_name}``
EVENT = "event"


def record_order(conn: store.Connection, source: str, order_id: str, **values: object) -> None:
    """Keep an order (campaign_id, campaign, buyer_*, amount, tickets_expected, ordered_at, constituent_id,
    constituent_new); values not given are left as they were."""
    values = {k: v for k, v in values.items() if v is not None} | {"updated_at": store.iso()}
    store.put_row(conn, "event_orders", {"source": source, "order_id": order_id}, values)


def record_ticket(conn: store.Connection, source: str, ticket_id: str, order_id: str, **values: object) -> bool:
    """Keep a ticket (first_name, last_name, email, title, price, checked_in_at, refunded); True when it is new or
    what an invitation shows of it changed (its holder, its check-in, its refund)."""
    before = conn.execute("SELECT * FROM event_tickets WHERE source = ? AND ticket_id = ?", (source, ticket_id)).fetchone()
    values = {k: v for k, v in values.items() if v is not None}
    if before is not None and all(str(before[k]) == str(v) for k, v in values.items()):
        return False
    values |= {"order_id": order_id, "updated_at": store.iso()}
    store.put_row(conn, "event_tickets", {"source": source, "ticket_id": ticket_id}, values)
    return True


def refund_tickets(conn: store.Connection, source: str, order_id: str, ticket_ids: list[str] | None = None) -> int:
    """A refund of the whole order (``ticket_ids`` None), or of these tickets; how many tickets it ended."""
    with store.atomic(conn):
        if ticket_ids is None:
            conn.execute("UPDATE event_orders SET refunded = 1, updated_at = ? WHERE source = ? AND order_id = ?",
                         (store.iso(), source, order_id))  # fmt: skip
            where, params = "", tuple[str, ...]()
        else:
            where, params = f" AND ticket_id IN ({','.join('?' * len(ticket_ids)) or 'NULL'})", tuple(ticket_ids)
        return conn.execute(
            f"UPDATE event_tickets SET refunded = 1, updated_at = ? WHERE source = ? AND order_id = ? AND refunded = 0{where}",
            (store.iso(), source, order_id, *params),
        ).rowcount


def order(conn: store.Connection, source: str, order_id: str) -> store.Row | None:
    return conn.execute("SELECT * FROM event_orders WHERE source = ? AND order_id = ?", (source, order_id)).fetchone()


def tickets_of(conn: store.Connection, source: str, order_ids: list[str]) -> list[store.Row]:
    marks = ",".join("?" * len(order_ids)) or "NULL"  # an empty IN () is SQLite's alone
    return conn.execute(
        f"SELECT * FROM event_tickets WHERE source = ? AND order_id IN ({marks}) ORDER BY order_id, ticket_id",
        (source, *order_ids),
    ).fetchall()


def event_of(conn: store.Connection, campaign_id: str) -> dict[str, Any] | None:
    """The CRM event a platform campaign is mapped to (``{event_id, event_name, ...}``), or None."""
    return mappings.get(conn, EVENT, str(campaign_id))


def _name(first: str | None, last: str | None) -> str:
    return " ".join(p.strip() for p in (first or "", last or "") if p and p.strip())


def is_buyer(ticket: store.Row, order_row: store.Row) -> bool:
    """A holder is the buyer unless the ticket names another person (another e-mail, or another name)."""
    email, name = (ticket["email"] or "").strip().lower(), _name(ticket["first_name"], ticket["last_name"]).lower()
    buyer_email = (order_row["buyer_email"] or "").strip().lower()
    buyer_name = _name(order_row["buyer_first_name"], order_row["buyer_last_name"]).lower()
    return (not email or email == buyer_email) and (not name or name == buyer_name)


def invited(
    conn: store.Connection, source: str, label: str, event_id: int, constituent_id: str, *, timezones: tuple[str | None, ...]
) -> Invited:
    """What the CRM should hold for ``constituent_id`` at ``event_id``: built from every order of theirs in a
    campaign mapped to that event. ``label`` names the platform's orders in notes ("Givebutter order"); a check-in
    is dated in the first known of ``timezones`` (the event's, then the organisation's)."""
    campaigns = [m["key"] for m in mappings.all_of(conn, EVENT) if str(m.get("event_id")) == str(event_id)]
    marks = ",".join("?" * len(campaigns)) or "NULL"
    orders = conn.execute(
        f"SELECT * FROM event_orders WHERE source = ? AND constituent_id = ? AND campaign_id IN ({marks}) ORDER BY ordered_at NULLS FIRST, order_id",
        (source, str(constituent_id), *campaigns),
    ).fetchall()
    by_order: dict[str, list[store.Row]] = {}
    for ticket in tickets_of(conn, source, [o["order_id"] for o in orders]):
        by_order.setdefault(ticket["order_id"], []).append(ticket)
    notes: list[str] = []
    names: dict[str, None] = {}  # ordered, each name once
    guests, removed, check_ins = [], [], []
    for found in orders:
        held = by_order.get(found["order_id"], [])
        live = {t["ticket_id"] for t in held if not (t["refunded"] or found["refunded"])}
        if not live:
            notes.append(f"{label} {found['order_id']}: refunded")
        else:
            kinds = Counter(t["title"] or "ticket" for t in held if t["ticket_id"] in live)
            notes.append(f"{label} {found['order_id']}: " + ", ".join(f"{kind} x{n}" for kind, n in kinds.items()))
        for ticket in held:
            key = f"{source}:{ticket['ticket_id']}"
            on = gifts.gift_date(ticket["checked_in_at"], *timezones) if ticket["checked_in_at"] else None
            alive = ticket["ticket_id"] in live
            if alive:
                names.setdefault(
                    _name(ticket["first_name"], ticket["last_name"]) or _name(found["buyer_first_name"], found["buyer_last_name"])
                )
            if is_buyer(ticket, found):
                if alive and on:
                    check_ins.append(on)
            elif alive:
                guests.append(
                    Guest(key, (ticket["first_name"] or "").strip()[:NAME], (ticket["last_name"] or "").strip()[:NAME], on)
                )
            else:
                removed.append(key)
    names.pop("", None)
    any_live = any(not (t["refunded"] or o["refunded"]) for o in orders for t in by_order.get(o["order_id"], []))
    return Invited(
        event_id=int(event_id),
        constituent_id=str(constituent_id),
        notes=_within(notes, "; ", "order"),
        attendee_names=_within(list(names), ", ", "guest"),
        rsvp=YES if any_live else NO,
        checked_in_on=min(check_ins) if check_ins else None,
        guests=guests,
        removed=removed,
    )


#: a guest's first or last name as written to the CRM, at most
NAME = 100


def _within(parts: list[str], sep: str, what: str) -> str:
    """``parts`` joined, within ``invitations.LIMIT``: whole parts only, then how many were left out."""
    text = sep.join(parts)
    if len(text) <= LIMIT:
        return text
    kept: list[str] = []
    for n, part in enumerate(parts):
        tail = f"{sep}and {len(parts) - n} more {what}(s)"
        if len(sep.join([*kept, part])) + len(tail) > LIMIT:
            return sep.join(kept) + tail
        kept.append(part)
    return sep.join(kept)


def waiting(conn: store.Connection) -> list[dict[str, Any]]:
    """The event campaigns whose orders wait for an event mapping: campaign, its tickets and orders."""
    mapped = {m["key"] for m in mappings.all_of(conn, EVENT)}
    rows = conn.execute(
        "SELECT o.source, o.campaign_id, max(o.campaign) AS campaign, count(DISTINCT o.order_id) AS orders,"
        " count(t.ticket_id) AS tickets FROM event_orders o LEFT JOIN event_tickets t"
        " ON t.source = o.source AND t.order_id = o.order_id GROUP BY o.source, o.campaign_id ORDER BY o.campaign_id"
    ).fetchall()
    return [dict(r) for r in rows if r["campaign_id"] not in mapped]


def counts(conn: store.Connection, source: str, campaign_id: str) -> dict[str, int]:
    """One campaign's orders, tickets, check-ins and refunds, and the invitations synctool wrote for them."""
    row = conn.execute(
        "SELECT count(DISTINCT o.order_id) AS orders, count(t.ticket_id) AS tickets,"
        " coalesce(sum(CASE WHEN t.checked_in_at IS NOT NULL AND t.refunded = 0 AND o.refunded = 0 THEN 1 ELSE 0 END), 0)"
        " AS checked_in, coalesce(sum(CASE WHEN t.refunded = 1 OR o.refunded = 1 THEN 1 ELSE 0 END), 0) AS refunded"
        " FROM event_orders o LEFT JOIN event_tickets t ON t.source = o.source AND t.order_id = o.order_id"
        " WHERE o.source = ? AND o.campaign_id = ?",
        (source, str(campaign_id)),
    ).fetchone()
    return dict(row)


def unwritten(conn: store.Connection, source: str, campaign_id: str, event_id: int) -> int:
    """How many live tickets of one campaign's orders wait for their invitation at ``event_id``: the buyer's own
    ticket for the buyer's invitation, a guest's for theirs (an order whose buyer is not known yet: all of them)."""
    done = {
        (r["constituent_id"], r["guest_key"])
        for r in conn.execute(
            "SELECT constituent_id, guest_key FROM invitations WHERE event_id = ? AND state = 'done'", (int(event_id),)
        )
    }
    waiting = 0
    for found in conn.execute(
        "SELECT * FROM event_orders WHERE source = ? AND campaign_id = ? AND refunded = 0", (source, str(campaign_id))
    ).fetchall():
        for ticket in tickets_of(conn, source, [found["order_id"]]):
            if ticket["refunded"]:
                continue
            key = "" if is_buyer(ticket, found) else f"{source}:{ticket['ticket_id']}"
            waiting += (str(found["constituent_id"] or ""), key) not in done
    return waiting
