"""POS (Square) orders -> CRM gifts.

A webhook only names the order; the full order is fetched. It syncs when ``COMPLETED``, or ``OPEN`` with
a payment (a tender); anything else is skipped with the reason. The customer (fetched for e-mail and
name) selects the constituent, else the POS default constituent setting. The location override picks
fund and campaign; ``total_money`` cents become dollars; ``created_at``, on the location's calendar (its
``timezone``, from the cached locations, else the organisation's), is the gift date; the first tender's
type picks the payment type. External id: ``pos_order_<order id>``.
"""

from __future__ import annotations

from typing import Any

import logging

from synctool import mappings, settings, store
from synctool.errors import PermanentError, Skip, SynctoolError
from synctool.jobs import Outcome
from synctool.money import cents_to_dollars
from synctool.platforms.square import external_id
from synctool.sync import gifts
from synctool.sync.constituents import Person
from synctool.sync.registry import JobContext, handler

DEFAULT_CONSTITUENT = "pos_default_constituent"
LOCATIONS = "pos:locations"
logger = logging.getLogger("synctool.pos")


def location(ctx: JobContext, location_id: str | None) -> dict[str, Any] | None:
    """The order's location from the cache; a location the cache has not seen refreshes it once."""
    if not location_id:
        return None
    found = settings.cache_get(ctx.conn, LOCATIONS, location_id)
    if found is None:
        try:
            locations = ctx.pos.locations()
        except SynctoolError as exc:
            logger.info("locations not fetched (%s); dating the gift in the organisation's time zone", exc)
            return None
        with store.transaction(ctx.conn):
            for loc in locations:
                settings.cache_put(ctx.conn, LOCATIONS, loc["id"], loc)
        found = next((loc for loc in locations if loc["id"] == location_id), None)
    return found


def eligibility(order: dict[str, Any]) -> str | None:
    """None when the order should become a gift, else why not."""
    state = order.get("state")
    if state == "COMPLETED":
        return None
    if state == "OPEN" and order.get("tenders"):
        return None
    if state == "OPEN":
        return "order is OPEN without a payment yet"
    return f"order is {state or 'in an unknown state'}"


def customer_person(ctx: JobContext, order: dict[str, Any]) -> tuple[Person, str]:
    customer_id = order.get("customer_id") or next(
        (t.get("customer_id") for t in order.get("tenders") or [] if t.get("customer_id")), None)
    if customer_id:
        customer = ctx.pos.customer(customer_id)
        address = customer.get("address") or {}
        street = ", ".join(p for p in (address.get("address_line_1"), address.get("address_line_2")) if p)
        person = Person(customer.get("given_name"), customer.get("family_name"), customer.get("email_address"),
                        phone=customer.get("phone_number"), org_name=customer.get("company_name"),
                        address={"street": street or None, "city": address.get("locality"),
                                 "state": address.get("administrative_district_level_1"),
                                 "postal_code": address.get("postal_code"), "country": address.get("country")})
        if person.email or person.last_name:
            return person, f"customer {customer_id}"
    default = settings.get(ctx.conn, DEFAULT_CONSTITUENT)
    if not default or not default.get("email"):
        raise PermanentError("the order has no customer with an e-mail or name, and no POS default constituent "
                             "is set (synctool settings pos-default-constituent --email ...)")
    return Person(default.get("first_name"), default.get("last_name"), default["email"]), "the POS default constituent"


def gift_body(ctx: JobContext, order: dict[str, Any]) -> dict[str, Any]:
    money = order.get("total_money") or {}
    if not isinstance(money.get("amount"), int):
        raise PermanentError(f"order {order.get('id')} has no total_money amount")
    coding = mappings.coding(mappings.get(ctx.conn, "location_override", str(order.get("location_id"))),
                             mappings.get(ctx.conn, "type_default", "pos:default"),
                             {"fund_id": ctx.config.donations.default_fund_id})
    tender = (order.get("tenders") or [{}])[0]
    body: dict[str, Any] = {"external_id": external_id(order["id"]),
                            "received_amount": float(cents_to_dollars(money["amount"])),
                            "received_date": gifts.gift_date(order.get("created_at"),
                                                             (location(ctx, order.get("location_id")) or {}).get("timezone"),
                                                             ctx.config.timezone), **coding,
                            **mappings.payment_coding(ctx.conn, f"pos:{tender.get('type')}")}
    items = ", ".join(f"{i.get('quantity', '1')} x {i.get('name', 'item')}" for i in order.get("line_items") or [])
    body["note"] = (f"Square order {order['id']} at location {order.get('location_id')}; "
                    f"{tender.get('type', 'no tender')}" + (f"; {items}" if items else ""))[:1000]
    return body


@handler("crm", "order")
def order(ctx: JobContext) -> Outcome:
    order_id = ctx.job["entity_id"]
    ext = external_id(order_id)
    done = gifts.recorded(ctx.conn, ext)
    if done is not None and done["state"] == "done" and not ctx.job["force"]:
        return Outcome("skipped", f"already synced as CRM gift {done['crm_id']}", crm_gift_id=done["crm_id"])
    full = ctx.pos.order(order_id)
    if not full:
        raise PermanentError(f"Square returned no order {order_id}")
    reason = eligibility(full)
    if reason:
        raise Skip(reason)
    body = gift_body(ctx, full)
    person, who = customer_person(ctx, full)
    constituent_id, gift_id, created = gifts.for_person(ctx, person, body)
    return Outcome("succeeded", ("gift created" if created else "gift already in the CRM; recorded") + f" for {who}",
                   crm_constituent_id=constituent_id, crm_gift_id=gift_id)
