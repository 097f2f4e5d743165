"""POS (Square) orders -> CRM gifts.

A webhook only names the order; the full order is fetched. It syncs when ``COMPLETED``, or ``OPEN`` with
a payment (a tender); anything else is skipped with the reason. The customer (fetched for e-mail and
name) selects the constituent, else the POS default constituent setting. The location override picks
fund and campaign, and whether its sales are deductible (``deductible: none`` for a shop); ``total_money`` cents become dollars; ``created_at``, on the location's calendar (its
``timezone``, from the cached locations, else the organisation's), is the gift date; the first tender's
type picks the payment type. External id: ``pos_order_<order id>``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from synctool.platform import (
    ConfigError,
    Event,
    Job,
    JsonObject,
    Outcome,
    PermanentError,
    Person,
    Skip,
    SynctoolError,
    cents_to_dollars,
    gifts,
    mailing_list,
    mappings,
    payload,
    settings,
)
from synctool.platforms.square.client import PosClient
from synctool.platforms.square.settings import DEFAULT_CONSTITUENT
from synctool.platforms.square.webhook import (
    Customer,
    CustomerAddress,
    Order,
    Tender,
    external_id,
)

if TYPE_CHECKING:
    from synctool.platform import Config

LOCATIONS = "pos:locations"
logger = logging.getLogger("synctool.pos")


def location(job: Job, location_id: str | None) -> JsonObject | None:
    """The order's location from the cache; a location the cache has not seen refreshes it once."""
    if not location_id:
        return None
    found = settings.cache_get(job.conn, LOCATIONS, location_id)
    if found is None:
        try:
            locations = job.client("pos", PosClient).locations()
        except SynctoolError as exc:
            logger.info("locations not fetched (%s); dating the gift in the organisation's time zone", exc)
            return None
        with job.unit.gather():
            for loc in locations:
                settings.cache_put(job.conn, LOCATIONS, loc["id"], loc)
        found = next((loc for loc in locations if loc["id"] == location_id), None)
    return found


#: the sync log's reason for an order that took no money (reconcile and year end expect no gift for it)
NO_MONEY = "no money ($0 order)"


def eligibility(order: Order) -> str | None:
    """None when the order should become a gift, else why not."""
    if order.returns:
        sales = ", ".join(sorted(order.sale_ids())) or "a sale"
        return f"a return order (a refund of Square order {sales}); the refund changes that sale's gift"
    if order.state == "COMPLETED" or (order.state == "OPEN" and order.tenders):
        free = order.total_money is not None and order.total_money.amount == 0
        return NO_MONEY if free else None
    if order.state == "OPEN":
        return "order is OPEN without a payment yet"
    return f"order is {order.state or 'in an unknown state'}"


def customer_person(job: Job, order: Order) -> tuple[Person, str, bool]:
    """The person to credit, who that is (for the log), and whether they consented to e-mail (Square has no
    opt-in: a customer who has explicitly not unsubscribed from marketing e-mail counts)."""
    customer_id = order.customer_id or next((t.customer_id for t in order.tenders if t.customer_id), None)
    if customer_id:
        customer = payload(Customer, job.client("pos", PosClient).customer(customer_id), f"Square customer {customer_id}")
        person = Person(
            customer.given_name,
            customer.family_name,
            customer.email_address,
            phone=customer.phone_number,
            org_name=customer.company_name,
            address=(customer.address or CustomerAddress()).person_address(),
        )
        if person.email or person.last_name:
            consent = customer.preferences is not None and customer.preferences.email_unsubscribed is False
            return person, f"customer {customer_id}", consent
    default = settings.get(job.conn, DEFAULT_CONSTITUENT)
    if not default or not default.get("email"):
        raise PermanentError(
            "the order has no customer with an e-mail or name, and no POS default constituent "
            "is set (synctool settings pos-default-constituent --email ...)"
        )
    return (Person(default.get("first_name"), default.get("last_name"), default["email"]), "the POS default constituent", False)


def last_resort_fund(config: Config) -> int | None:
    """The fund when no mapping names one: ``donations.default_fund_id`` serves POS sales too (config.example.yaml),
    read from that section by name, when a donation platform is registered."""
    try:
        return config.section("donations").default_fund_id
    except ConfigError:
        return None


def gift_body(job: Job, order: Order) -> dict[str, Any]:
    if order.total_money is None or order.total_money.amount is None:
        raise PermanentError(f"order {order.id} has no total_money amount")
    override = mappings.get(job.conn, "location_override", str(order.location_id)) or {}
    coding = mappings.coding(
        override,
        mappings.get(job.conn, "type_default", "pos:default"),
        {"fund_id": last_resort_fund(job.config)},
    )
    tender = order.tenders[0] if order.tenders else Tender()
    zone = (location(job, order.location_id) or {}).get("timezone")
    body: dict[str, Any] = {
        "external_id": external_id(order.id),
        "received_amount": float(cents_to_dollars(order.total_money.amount)),
        "received_date": gifts.gift_date(order.created_at, zone, job.config.timezone),
        **coding,
        **mappings.payment_coding(job.conn, f"pos:{tender.type}"),
    }
    if override.get("deductible") == "none":  # a shop sale is not a gift of its full price
        body["deductible_amount"] = 0.0
    items = ", ".join(f"{i.quantity or '1'} x {i.name or 'item'}" for i in order.line_items)
    body["note"] = (
        f"Square order {order.id} at location {order.location_id}; {tender.type or 'no tender'}" + (f"; {items}" if items else "")
    )[:1000]
    return body


def order(event: Event, job: Job) -> Outcome:
    order_id = job.row["entity_id"]
    ext = external_id(order_id)
    made = gifts.already_made(job.conn, ext, job.row)
    if made is not None:
        return made
    found = job.client("pos", PosClient).order(order_id)
    if not found:
        raise PermanentError(f"Square returned no order {order_id}")
    full = payload(Order, found, f"Square order {order_id}")
    reason = eligibility(full)
    if reason:
        raise Skip(reason)
    body = gift_body(job, full)
    person, who, consent = customer_person(job, full)
    # total_money's currency: another than the organisation's holds the job (crm.currency)
    constituent_id, gift_id, created = job.make_gift(
        person, body, currency=full.total_money.currency if full.total_money else None
    )
    place = (location(job, full.location_id) or {}).get("name") or full.location_id
    pushed = mailing_list.queue_pushes(
        job.unit, person, source="pos", consent=consent, tags=["Square customer", str(place or "")]
    )
    return Outcome(
        "succeeded",
        ("gift created" if created else "gift already in the CRM; recorded")
        + f" for {who}"
        + job.said()
        + (f"; {len(pushed)} mailing list push(es) queued" if pushed else ""),
        crm_constituent_id=constituent_id,
        crm_gift_id=gift_id,
        amount=f"{body['received_amount']:.2f}",
    )
