"""Who came (``synctool events``, the staff page's Events page, ``/api/events``): each platform event campaign
mapped to a CRM event, with its orders, tickets, invitations, guests and check-ins; the campaigns whose orders
wait for a mapping; mapping one (``synctool mappings events``), which queues its waiting orders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, TypedDict

from pydantic import Field

from synctool import mappings, settings
from synctool.crm import references
from synctool.errors import Conflict, InvalidInput, NotFound
from synctool.ops.mappings import Removed
from synctool.platforms import tickets
from synctool.queue import jobs
from synctool.runtime import Runtime
from synctool.validation import Body, CrmId

if TYPE_CHECKING:
    from synctool import store


class EventMappingBody(Body):
    """POST /api/mappings/events: a platform event campaign (its id or code) -> a CRM event."""

    campaign: str = Field(min_length=1, max_length=100)
    event_id: Annotated[CrmId, Field(ge=1, le=2_147_483_647)]


def campaign_id(conn: store.Connection, campaign: str) -> str:
    """A platform campaign's id from its id or its code, as the platforms' campaign caches and orders know it."""
    wanted = campaign.strip()
    for row in conn.execute(
        "SELECT DISTINCT kind FROM caches WHERE kind LIKE '%:campaigns' AND kind NOT LIKE 'crm:%' ORDER BY kind"
    ):
        for found in settings.cache_list(conn, row["kind"]):
            if isinstance(found, dict) and wanted in (str(found.get("id")), str(found.get("code") or "")):
                return str(found["id"])
    if conn.execute("SELECT 1 FROM event_orders WHERE campaign_id = ?", (wanted,)).fetchone() or wanted.isdigit():
        return wanted
    raise NotFound(
        f"no campaign {campaign!r} is known", "give its id, or refresh the campaigns (synctool donations campaigns --refresh)"
    )


def _campaign_title(conn: store.Connection, key: str) -> str | None:
    for row in conn.execute(
        "SELECT DISTINCT kind FROM caches WHERE kind LIKE '%:campaigns' AND kind NOT LIKE 'crm:%' ORDER BY kind"
    ):
        found = settings.cache_get(conn, row["kind"], key)
        if isinstance(found, dict):
            return found.get("title") or found.get("code")
    row = conn.execute("SELECT max(campaign) FROM event_orders WHERE campaign_id = ?", (key,)).fetchone()
    return row[0] if row else None


class MappedEvent(TypedDict):
    """The CRM event a campaign is mapped to, as the mapping keeps it."""

    event_id: int
    event_name: str | None
    campaign: str | None


class EventMapping(MappedEvent):
    key: str
    orders_queued: int


class EventListing(TypedDict):
    items: list[dict[str, object]]
    waiting: list[dict[str, object]]


class TicketHolder(TypedDict):
    ticket_id: str
    name: str
    email: str | None
    type: str | None
    checked_in_at: str | None
    refunded: bool
    buyer: bool
    invitation_id: str | None


class EventOrder(TypedDict):
    order_id: str
    source: str
    ordered_at: str | None
    buyer: str
    buyer_email: str | None
    constituent_id: str | None
    amount: object
    refunded: bool
    holders: list[TicketHolder]
    invitation_id: str | None
    rsvp: str | None
    attended_on: str | None


class EventDetail(TypedDict):
    """One event campaign's orders, each with its ticket holders and the invitations written for them."""

    campaign_id: str
    campaign: str | None
    event_id: object
    event: object
    orders: list[EventOrder]


def set_mapping(conn: store.Connection, body: EventMappingBody) -> EventMapping:
    """Map a campaign to a CRM event (checked against `synctool crm events` when cached); its orders that waited
    are queued again. Returns the mapping and how many orders were queued."""
    key = campaign_id(conn, body.campaign)
    event = references.find(conn, "events", body.event_id)
    if event is None and settings.cache_refreshed_at(conn, "crm:events"):
        raise InvalidInput(f"no CRM event {body.event_id}", "synctool crm events lists them (synctool crm refresh reads them)")
    before = tickets.event_of(conn, key)
    if (
        before is not None
        and int(before["event_id"]) != int(body.event_id)
        and _invited(conn, int(before["event_id"]), key)["invitations"]
    ):
        raise Conflict(
            f"campaign {body.campaign} is mapped to CRM event {before['event_id']}, whose invitations synctool wrote:"
            " move them in the CRM by hand, then `synctool mappings events remove` it and set it again"
        )
    value: MappedEvent = {
        "event_id": int(body.event_id),
        "event_name": (event or {}).get("name"),
        "campaign": _campaign_title(conn, key),
    }
    mappings.put(conn, tickets.EVENT, key, dict(value))
    orders = conn.execute("SELECT source, order_id FROM event_orders WHERE campaign_id = ?", (key,)).fetchall()
    for row in orders:
        jobs.enqueue_unless_waiting(
            conn, target="crm", source=row["source"], entity_type="invitations", entity_id=row["order_id"]
        )
    return {"key": key, **value, "orders_queued": len(orders)}


def remove_mapping(conn: store.Connection, campaign: str) -> Removed:
    key = campaign_id(conn, campaign)
    if not mappings.delete(conn, tickets.EVENT, key):
        raise NotFound(f"campaign {campaign} is mapped to no CRM event")
    return {"removed": key, "kind": tickets.EVENT}


def list_mappings(conn: store.Connection) -> list[dict[str, Any]]:
    return mappings.all_of(conn, tickets.EVENT)


def _invited(conn: store.Connection, event_id: int, campaign: str) -> dict[str, int]:
    """The invitations synctool holds for a campaign's orders at their event."""
    row = conn.execute(
        "SELECT coalesce(sum(CASE WHEN i.guest_key = '' AND i.state = 'done' THEN 1 ELSE 0 END), 0) AS invitations,"
        " coalesce(sum(CASE WHEN i.guest_key != '' AND i.state = 'done' THEN 1 ELSE 0 END), 0) AS guests,"
        " coalesce(sum(CASE WHEN i.state = 'done' AND i.attended_on IS NOT NULL THEN 1 ELSE 0 END), 0) AS attended"
        " FROM invitations i WHERE i.event_id = ? AND i.constituent_id IN"
        " (SELECT constituent_id FROM event_orders WHERE campaign_id = ? AND constituent_id IS NOT NULL)",
        (event_id, campaign),
    ).fetchone()
    return dict(row)


def list_events(conn: store.Connection) -> EventListing:
    """Per mapped event campaign: the CRM event, orders, tickets, invitations, guests, checked in, and ``waiting``:
    the live tickets whose invitation is not written yet; and the event campaigns whose orders wait for a mapping."""
    items = []
    for mapped in list_mappings(conn):
        key, event_id = mapped["key"], int(mapped["event_id"])
        sources = [r[0] for r in conn.execute("SELECT DISTINCT source FROM event_orders WHERE campaign_id = ?", (key,))]
        counted = {"orders": 0, "tickets": 0, "checked_in": 0, "refunded": 0}
        for source in sources:
            for name, value in tickets.counts(conn, source, key).items():
                counted[name] += value or 0
        # the live tickets whose invitation is not written yet (an order waiting for its tickets, a drain to come)
        counted["waiting"] = sum(tickets.unwritten(conn, source, key, event_id) for source in sources)
        items.append({"campaign_id": key, "campaign": mapped.get("campaign") or _campaign_title(conn, key), "event_id": event_id,
                      "event": mapped.get("event_name"), **counted, **_invited(conn, event_id, key)})  # fmt: skip
    return {"items": items, "waiting": tickets.waiting(conn)}


def show_event(conn: store.Connection, campaign: str) -> EventDetail:
    """One campaign's orders: buyer, holders (with check-in and refund), and the invitations written for them."""
    key = campaign_id(conn, campaign)
    mapped = tickets.event_of(conn, key)
    orders = conn.execute(
        "SELECT * FROM event_orders WHERE campaign_id = ? ORDER BY ordered_at NULLS FIRST, order_id", (key,)
    ).fetchall()
    if mapped is None and not orders:
        raise NotFound(f"campaign {campaign} has no event orders and no event mapping")
    shown: list[EventOrder] = []
    for found in orders:
        held = tickets.tickets_of(conn, found["source"], [found["order_id"]])
        buyer = None
        if mapped and found["constituent_id"]:
            buyer = conn.execute(
                "SELECT crm_id, state, rsvp, attended_on FROM invitations WHERE event_id = ? AND constituent_id = ? AND guest_key = ''",
                (int(mapped["event_id"]), found["constituent_id"]),
            ).fetchone()
        holders: list[TicketHolder] = []
        for ticket in held:
            guest = None
            if mapped and found["constituent_id"]:
                guest = conn.execute(
                    "SELECT crm_id, state, attended_on FROM invitations WHERE event_id = ? AND constituent_id = ? AND guest_key = ?",
                    (int(mapped["event_id"]), found["constituent_id"], f"{found['source']}:{ticket['ticket_id']}"),
                ).fetchone()
            holders.append({
                "ticket_id": ticket["ticket_id"], "name": " ".join(p for p in (ticket["first_name"], ticket["last_name"]) if p),
                "email": ticket["email"], "type": ticket["title"], "checked_in_at": ticket["checked_in_at"],
                "refunded": bool(ticket["refunded"] or found["refunded"]), "buyer": tickets.is_buyer(ticket, found),
                "invitation_id": guest["crm_id"] if guest and guest["state"] == "done" else None,
            })  # fmt: skip
        shown.append({
            "order_id": found["order_id"], "source": found["source"], "ordered_at": found["ordered_at"],
            "buyer": " ".join(p for p in (found["buyer_first_name"], found["buyer_last_name"]) if p),
            "buyer_email": found["buyer_email"], "constituent_id": found["constituent_id"], "amount": found["amount"],
            "refunded": bool(found["refunded"]), "holders": holders,
            "invitation_id": buyer["crm_id"] if buyer and buyer["state"] == "done" else None,
            "rsvp": buyer["rsvp"] if buyer else None, "attended_on": buyer["attended_on"] if buyer else None,
        })  # fmt: skip
    return {"campaign_id": key, "campaign": _campaign_title(conn, key), "event_id": mapped and mapped["event_id"],
            "event": mapped and mapped.get("event_name"), "orders": shown}  # fmt: skip


def checkins(conn: store.Connection, rt: Runtime, campaign: str) -> dict[str, object]:
    """Read one mapped campaign's check-ins from its platform now (``Platform.checkins``), whatever the date."""
    from synctool import platforms

    key = campaign_id(conn, campaign)
    if tickets.event_of(conn, key) is None:
        raise NotFound(f"campaign {campaign} is mapped to no CRM event", f"synctool mappings events set {campaign} --event N")
    sources = [r[0] for r in conn.execute("SELECT DISTINCT source FROM event_orders WHERE campaign_id = ?", (key,))]
    readers = [p for p in platforms.in_use(rt.config) if p.checkins is not None and (not sources or p.role in sources)]
    if not readers:
        raise NotFound(f"no platform in use reads check-ins of campaign {campaign}")
    found: dict[str, object] = {"campaign_id": key}
    for platform in readers:
        assert platform.checkins is not None
        found[platform.role] = platform.checkins(conn, rt, key)
    return found
