"""POS operations (spec: /api/pos/*): locations, orders, enrichment, resync, and location overrides."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Optional

from pydantic import Field, RootModel

from synctool.platform import Body, CrmId, InvalidInput, NotFound, Query, Runtime, jobs, mappings, runner, settings, store, using
from synctool.platform import reference_coding as coding
from synctool.platforms.square.rules import LOCATIONS
from synctool.platforms.square.webhook import external_id

if TYPE_CHECKING:
    from synctool.platform import Connection


def locations(conn: Connection, rt: Runtime, *, client=None) -> list[dict[str, Any]]:
    with using(rt, "pos", client) as pos:
        found = pos.locations()
    settings.cache_replace(conn, LOCATIONS, {loc["id"]: loc for loc in found})
    return [{k: loc.get(k) for k in ("id", "name", "status", "currency", "timezone")} for loc in found]


class OrdersQuery(Query):
    """Spec: GET /api/pos/orders."""

    cursor: Optional[str] = None
    limit: int = Field(50, ge=1, le=500)


class EnrichBody(Body):
    """Spec: POST /api/pos/orders/enrich."""

    orderIds: list[str] = Field(min_length=1)


def orders(conn: Connection, rt: Runtime, query: OrdersQuery | None = None, *, client=None) -> dict[str, Any]:
    query = query or OrdersQuery()
    cursor, limit = query.cursor, query.limit
    with using(rt, "pos", client) as pos:
        location_ids = [loc["id"] for loc in pos.locations()]
        result = pos.search_orders(location_ids, cursor=cursor, limit=limit) if location_ids else {}
    synced = {r["key"]: r["crm_id"] for r in conn.execute("SELECT key, crm_id FROM crm_writes WHERE state = 'done'")}
    items = [
        {
            "id": o["id"],
            "state": o.get("state"),
            "location_id": o.get("location_id"),
            "created_at": o.get("created_at"),
            "total_cents": (o.get("total_money") or {}).get("amount"),
            "customer_id": o.get("customer_id"),
            "crm_gift_id": synced.get(external_id(o["id"])),
        }
        for o in result.get("orders") or []
    ]
    return {"orders": items, "cursor": result.get("cursor")}


def enrich(rt: Runtime, body: EnrichBody, *, client=None) -> list[dict[str, Any]]:
    """The customer behind each order (e-mail and name), as the sync would find it."""
    order_ids = body.orderIds
    out = []
    with using(rt, "pos", client) as pos:
        for order_id in order_ids:
            order = pos.order(order_id)
            customer_id = order.get("customer_id") or next(
                (t.get("customer_id") for t in order.get("tenders") or [] if t.get("customer_id")), None
            )
            customer = pos.customer(customer_id) if customer_id else {}
            out.append(
                {
                    "order_id": order_id,
                    "customer_id": customer_id,
                    "email": customer.get("email_address"),
                    "first_name": customer.get("given_name"),
                    "last_name": customer.get("family_name"),
                }
            )
    return out


def resync(conn: Connection, rt: Runtime, order_id: str, *, force: bool = False) -> dict[str, Any]:
    """Queue the order again and run it now. ``force`` ignores the local "already synced" mark; the
    CRM is still searched by external id first, so a second gift is never created."""
    from synctool.platform import run_now

    if not order_id.strip():
        raise InvalidInput("order id is empty")
    with store.atomic(conn):
        job_id = jobs.enqueue(
            conn,
            source="pos",
            entity_type="order",
            entity_id=order_id.strip(),
            external_id=external_id(order_id.strip()),
            force=force,
            payload={"origin": "operator resync"},
            max_attempts=rt.config.queue.max_attempts,
        )
    row = run_now(runner(rt), conn, job_id)
    if row is None:
        raise NotFound(f"no sync record with id {job_id}")
    return {k: row[k] for k in ("id", "status", "message", "last_error", "crm_gift_id", "crm_constituent_id")}


class LocationOverride(Body):
    location_id: str = Field(min_length=1)
    fund_id: Optional[CrmId] = None
    campaign_id: Optional[CrmId] = None
    #: ``none``: a sale here is not a gift of its full price (a shop), so its deductible amount is 0
    deductible: Optional[Literal["none", "full"]] = None
    #: the CRM acknowledgement template for its sales (``do_not_ack``: none)
    ack_template_name: Optional[str] = None


#: spec: PUT /api/pos/location-overrides: the whole set
LocationOverrides = RootModel[list[LocationOverride]]


def set_location_override(conn: Connection, body: LocationOverride) -> dict[str, Any]:
    value = coding(conn, body.model_dump(exclude={"location_id"}))
    mappings.put(conn, "location_override", body.location_id, value)
    return {"location_id": body.location_id, **value}


def replace_location_overrides(conn: Connection, overrides: LocationOverrides) -> list[dict[str, Any]]:
    """PUT semantics (spec: PUT /api/pos/location-overrides): the list given becomes the whole set."""
    checked = [(item.location_id, coding(conn, item.model_dump(exclude={"location_id"}))) for item in overrides.root]
    with store.atomic(conn):  # one commit: a drain never sees the set half replaced
        for row in mappings.all_of(conn, "location_override"):
            mappings.delete(conn, "location_override", row["key"])
        for location_id, value in checked:
            mappings.put(conn, "location_override", location_id, value)
    return location_overrides(conn)


def location_overrides(conn: Connection) -> list[dict[str, Any]]:
    return [{"location_id": r.pop("key"), **r} for r in mappings.all_of(conn, "location_override")]
