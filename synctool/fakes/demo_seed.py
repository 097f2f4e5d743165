"""What the demo's accounts hold before it starts: the CRM's reference lists and one constituent, synctool's
mappings, a Givebutter fundraiser and two transactions whose webhooks were lost, and Square's sales."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from synctool.crm import environment as crm_environment
from synctool.fakes import samples
from synctool.fakes.world import FakeWorld
from synctool.ops import crm, mappings
from synctool.platforms.mailchimp import ops as mailing
from synctool.platforms.portal import ops as portal
from synctool.platforms.square import settings as pos_settings
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool import store


def seed(world: FakeWorld, conn: store.Connection, rt: Runtime, say: Callable[[str], None]) -> None:
    seed_crm(conn, rt)
    seed_mappings(conn)
    seed_donations(world)
    seed_pos(world)
    say(
        "seeded: CRM reference lists and mappings, a CRM constituent with a newsletter tag, POS orders, "
        "a Givebutter transaction and a Square sale whose webhooks were lost, Jane Doe fundraising on the campaign, no CRM "
        "acknowledgement for POS sales"
    )


def seed_crm(conn: store.Connection, rt: Runtime) -> None:
    """The CRM's reference lists cached, and Jane Doe, with the Newsletter tag."""
    crm_client = crm_environment.open_client(conn, rt)
    crm.refresh(conn, rt, client=crm_client)
    jane = crm_client.create_constituent(
        {"first_name": "Jane", "last_name": "Doe", "email_addresses": [{"address": "jane.doe@example.org"}]}
    )
    crm_client.add_keyword(jane["id"], 12221)  # Newsletter
    crm_client.close()


def seed_mappings(conn: store.Connection) -> None:
    mappings.set_type_default(conn, "donations:default", fund_id=2398, campaign_id=822)
    mappings.set_type_default(conn, "pos:default", fund_id=2402, ack_template_name="do_not_ack")  # Square sent a receipt
    mappings.set_payment_method(conn, "donations:card", payment_type_id=1509)
    mappings.set_payment_method(conn, "pos:CARD", payment_type_id=1509)
    mappings.set_payment_method(conn, "pos:CASH", payment_type_id=1507)
    mailing.set_mapping(conn, mailing.ListMappingBody(list_id="b7e21c0d94", label="Newsletter"))
    mailing.set_tag_rule(conn, mailing.TagRuleBody(list_id="b7e21c0d94", event="unsubscribe", add=[12222], remove=[12221]))
    pos_settings.write(conn, pos_settings.PosDefaultBody(email="walkin@example.org", first_name="Walk-in", last_name="Customer"))
    portal.set_mapping(conn, "funds", "membership", fund_id=2400, campaign_name="Membership Drive")
    portal.set_mapping(conn, "gateways", "stripe", payment_type_id=1509)
    portal.set_mapping(conn, "levels", "*", membership_level_id=41)
    mappings.set_type_default(conn, "donations:recurring", fund_id=2398, gift_category_id=5940)  # "Recurring"


def seed_donations(world: FakeWorld) -> None:
    """Jane fundraising on the campaign; a transaction only the poll finds, and one older than the poll looks back."""
    world.givebutter.add_member(118722, {"id": 501, "first_name": "Jane", "last_name": "Doe", "email": "jane.doe@example.org"})
    missed = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)  # its webhook was lost: only the poll finds it
    an_hour_ago = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 3600))
    missed.update(
        id="PollOnly7Kq2",
        first_name="Alan",
        last_name="Turing",
        email="alan@example.org",
        amount=50,
        created_at=an_hour_ago,
        transacted_at=an_hour_ago,
    )
    world.givebutter.add_transaction(missed)
    planted = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)  # ten days ago, its webhook lost: older than the poll looks back
    ten_days_ago = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 10 * 86400))
    planted.update(id="Planted10dAgo", first_name="Mary", last_name="Jackson", email="mary.jackson@example.org", amount=35,
                   created_at=ten_days_ago, transacted_at=ten_days_ago)  # fmt: skip
    world.givebutter.add_transaction(planted)


def seed_pos(world: FakeWorld) -> None:
    """A POS app sale's payment, a customer, and four orders (one whose webhook never came, one still open)."""
    paid_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600))
    world.square.payments["PAY-3"] = {"id": "PAY-3", "order_id": "POSAPP-3", "status": "COMPLETED", "location_id": "L2GIFTSHOP001",
                                      "created_at": paid_at, "total_money": {"amount": 750, "currency": "USD"}}  # fmt: skip
    world.square.customers["CUST1"] = {
        "id": "CUST1",
        "given_name": "Grace",
        "family_name": "Hopper",
        "email_address": "grace@example.org",
    }
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    world.square.orders["ORDER-DONE-1"] = _order(
        "ORDER-DONE-1", 2599, ("T1", "CARD"), now, customer="CUST1", item="Membership card"
    )
    # its webhook never came: the backup poll finds it
    world.square.orders["ORDER-LOST-4"] = _order("ORDER-LOST-4", 1800, ("T4", "CARD"), now, customer="CUST1", item="Poster")
    world.square.orders["ORDER-OPEN-2"] = _order("ORDER-OPEN-2", 1200, None, now, state="OPEN")
    world.square.orders["POSAPP-3"] = _order("POSAPP-3", 750, ("T3", "CASH"), now, location="L2GIFTSHOP001")


def _order(
    order_id: str,
    cents: int,
    tender: tuple[str, str] | None,
    created_at: str,
    *,
    location: str = "FPYCBCHYMXFK1",
    state: str = "COMPLETED",
    customer: str | None = None,
    item: str | None = None,
) -> dict:
    """A Square Order as the fake holds it: paid by one tender (none while open), at ``location`` (the main one), of
    ``customer`` and of one line item (``item``) when named."""
    order: dict = {"id": order_id, "location_id": location, "state": state, "created_at": created_at}
    if customer is not None:
        order["customer_id"] = customer
    order["total_money"] = {"amount": cents, "currency": "USD"}
    order["tenders"] = [{"id": tender[0], "type": tender[1]}] if tender else []
    if item is not None:
        order["line_items"] = [{"name": item, "quantity": "1"}]
    return order
