"""A succeeded portal payment becomes CRM gifts (spec: portal-sync.md, rules 4 to 6): one a product group of a cart,
coded by the fund mappings; a membership payment queues its membership's sync. An enrollment's gift is its
payment's."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from synctool.platform import (
    Event,
    Job,
    Outcome,
    PermanentError,
    Skip,
    cents_to_dollars,
    currency_rule,
    gifts,
    jobs,
    mappings,
    store,
)
from synctool.platforms.portal import records as portal_records
from synctool.platforms.portal.pushes import flags, queue
from synctool.platforms.portal.users import constituent_for, user_locked, user_of

FUND_KEYS = ("membership", "language_classes", "events", "donations")
CART_GROUPS = {
    "membership": "membership",
    "family_addon": "membership",
    "class": "language_classes",
    "event": "events",
    "donation": "donations",
}


def gift_groups(conn, payment: dict[str, Any]) -> list[tuple[str, int]]:
    """Rule 5: (fund key, cents) per gift; a cart gives one gift per product category group."""
    kind = payment["type"]
    if kind == "membership":
        return [("membership", payment["amount_cents"])]
    if kind == "donation":
        return [("donations", payment["amount_cents"])]
    if kind == "enrollment":
        enrollment = portal_records.find(conn, "enrollment", payment.get("enrollment_id"))
        product = portal_records.find(conn, "product", (enrollment or {}).get("product_id"))
        category = (product or {}).get("category")
        key = {"class": "language_classes", "event": "events"}.get(str(category), "membership")
        return [(key, payment["amount_cents"])]
    groups: dict[str, int] = {}
    for item in payment["items"]:
        category = item.get("category")
        if not category and item.get("product_id"):
            category = (portal_records.find(conn, "product", item["product_id"]) or {}).get("category")
        key = CART_GROUPS.get(category or "", "donations")
        groups[key] = groups.get(key, 0) + item["amount_cents"] * item["quantity"]
    if not groups:
        raise PermanentError(f"cart payment {payment['id']} has no items")
    return sorted(groups.items(), key=lambda kv: FUND_KEYS.index(kv[0]))


#: the sync log's reason for a $0 payment that is no scholarship (reconcile and year end expect no gift for it)
NO_MONEY = "no money ($0 payment, no scholarship)"


def no_money(payment: dict[str, Any], groups: list[tuple[str, int]]) -> bool:
    """A payment that took no money and is no scholarship (a 100% discount code): no gift. A $0 scholarship
    payment is a gift (rule 5), as it always was."""
    return not payment.get("scholarship") and not any(cents for _, cents in groups)


def membership_sync(job: Job, record: dict[str, Any], groups: list[tuple[str, int]]) -> str:
    """A membership payment queues its membership's sync (the payment's, else the user's active one); in words."""
    if not any(k == "membership" for k, _ in groups):
        return ""
    membership_id = record.get("membership_id")
    if membership_id is None:
        active = job.conn.execute(
            "SELECT id FROM portal_memberships WHERE user_id = ? AND status = 'active' ORDER BY start_date DESC NULLS LAST LIMIT 1",
            (record["user_id"],),
        ).fetchone()
        membership_id = active[0] if active else None
    if not membership_id or not flags(job.conn)["sync_on_membership"]:
        return ""
    with job.unit.gather():
        queue(job.conn, "membership", membership_id, origin=f"payment {record['id']}")
    return f"; membership {membership_id} sync queued"


@user_locked(user_of("payment", "user_id"))
def payment(event: Event, job: Job) -> Outcome:
    record = portal_records.get(job.conn, "payment", job.row["entity_id"])
    force = bool(job.row["force"])
    if record["status"] != "succeeded":
        raise Skip(f"payment {record['id']} is {record['status']}; only succeeded payments become gifts")
    if record.get("crm_gift_id") and not force:
        raise Skip(f"payment {record['id']} is already CRM gift {record['crm_gift_id']}")
    constituent_id = constituent_for(job, record["user_id"])
    gateway = mappings.get(job.conn, "portal_gateway", str(record.get("gateway") or "")) or {}
    groups = gift_groups(job.conn, record)
    if no_money(record, groups):  # a 100% discount: no gift; its membership still syncs
        return Outcome("skipped", NO_MONEY + membership_sync(job, record, groups), crm_constituent_id=constituent_id)
    amounts = [cents_to_dollars(cents) for _, cents in groups]
    said = None
    if not all((gifts.recorded(job.conn, ext) or {"state": None})["state"] == "done" for ext in _gift_ids(record, groups)):
        # another currency than the organisation's holds the payment (crm.currency); released, its amount is shared
        settled = job.money("gift", record["id"], sum(amounts), record.get("currency"), external_id=record["id"])
        if settled.released:
            amounts, said = currency_rule.spread(amounts, settled.amount), settled.note
    gift_ids: dict[str, str] = {}
    for (key, _cents), amount in zip(groups, amounts, strict=True):
        fund = mappings.get(job.conn, "portal_fund", key)
        if not fund:
            raise PermanentError(f"no fund mapping for {key} (synctool portal mappings funds set {key} --fund-id ...)")
        external_id = record["id"] if len(groups) == 1 else f"{record['id']}-{key}"
        body = {
            "external_id": external_id,
            "received_amount": float(amount),
            "received_date": (record.get("created_at") or store.iso())[:10],
            "fund_id": fund["fund_id"],
            "gift_type_name": "Gift",
            "note": f"portal payment {record['id']} ({record['type']}, {key}); intent "
            f"{record.get('payment_intent_id') or '-'}; status {record['status']}; {record.get('created_at') or ''}",
        }
        if said:
            body["note"] += f"; {said}"
        if fund.get("campaign_name"):
            body["campaign_name"] = fund["campaign_name"]
        if gateway.get("payment_type_id"):
            body["payment_type_id"] = gateway["payment_type_id"]
        gift_id, _ = gifts.create_once(
            job.crm,
            job.unit,
            constituent_id,
            body,
            job_id=job.row["id"],
            force_lookup=force,
            confirm_after_s=job.config.crm.confirm_after_s,
        )
        gift_ids[key] = gift_id
    primary = gift_ids[groups[0][0]]
    with job.unit.gather() as conn:
        portal_records.set_link(conn, "payment", record["id"], crm_gift_id=primary, crm_gift_ids=gift_ids)
    message = f"{len(gift_ids)} gift(s): " + ", ".join(f"{k} {v}" for k, v in gift_ids.items())
    message += membership_sync(job, record, groups)
    with job.unit.gather():
        jobs.record_crm_ids(job.conn, job.row["id"], constituent_id=constituent_id, gift_id=primary)
    total = sum(amounts, Decimal("0.00"))
    return Outcome(
        "succeeded", message, crm_constituent_id=constituent_id, crm_gift_id=primary, crm_ids=gift_ids, amount=f"{total:.2f}"
    )


def _gift_ids(record: dict[str, Any], groups: list[tuple[str, int]]) -> list[str]:
    """The external ids of a payment's gifts: its id, or one per product group of a cart."""
    return [record["id"] if len(groups) == 1 else f"{record['id']}-{key}" for key, _ in groups]


def enrollment(event: Event, job: Job) -> Outcome:
    record = portal_records.get(job.conn, "enrollment", job.row["entity_id"])
    with job.unit.gather() as conn:
        portal_records.set_link(conn, "enrollment", record["id"], crm_synced_at=store.iso())
    return Outcome("succeeded", "enrollment recorded (its gift comes from its payment)")
