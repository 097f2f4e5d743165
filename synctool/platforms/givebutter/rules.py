"""Donations (Givebutter) -> CRM gifts.

- ``transaction.succeeded`` (or a transaction found by the backup poll): one gift, external id
  ``donations_<transaction id>``, for the constituent matched or created from the supporter.
- ``ticket.created``: tickets point to their transaction. When that transaction has a job or a gift
  already, the ticket is skipped (the transaction's gift covers the purchase). A lone ticket (its
  transaction never announced itself) fetches the transaction and syncs it, under the same external id,
  so a purchase never becomes two gifts whichever event arrives first or alone.
- A transaction with a ``plan_id`` is a charge of a recurring plan: the type default ``donations:recurring``
  codes it before the campaign's type default, and its note names the plan and the charge.
- The gift's amount is what the donor paid; a ticket's deductible amount (``tax_deductible_amount``, or the
  amount less its fair market value) is the gift's ``deductible_amount``; fees go to the note and, when
  mapped, to gift custom fields.
- ``campaign.created`` / ``campaign.updated``: the campaign cache used by mappings.
- A gift made on a peer-to-peer fundraiser's page soft-credits them: see ``fundraisers.py``.
- A charge also notes itself on its plan (``plans.record_charge``: the last charge, failures reset; no CRM request).
  A charge of a plan synctool has not recorded reads that plan once and puts its donor in the group
  (``plan_job.known_from_charge``), after the gift: a read that fails costs the gift nothing.
- ``plan.*``: see ``plan_job.py`` (the plan recorded, its donor in the mapped group, a failure followed up).
- ``refund.created``: see ``refunds.py``.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

from synctool.platform import (
    Event,
    Job,
    Outcome,
    PermanentError,
    Person,
    RemoteError,
    Skip,
    SynctoolError,
    gifts,
    log,
    mailing_list,
    mappings,
    payload,
    references,
    settings,
    tickets,
)
from synctool.platforms import givebutter
from synctool.platforms.givebutter import events, plan_job, plans
from synctool.platforms.givebutter.client import DonationsClient
from synctool.platforms.givebutter.fundraisers import credit_fundraiser, fundraiser
from synctool.platforms.givebutter.webhook import (
    CAMPAIGNS,
    Address,
    Campaign,
    Dedication,
    Recipient,
    Ticket,
    Transaction,
    external_id,
)

logger = logging.getLogger("synctool.donations")


def supporter(txn: Transaction) -> Person:
    return Person(
        first_name=txn.first_name,
        last_name=txn.last_name,
        email=txn.email,
        phone=txn.phone,
        org_name=txn.company or None,
        address=(txn.address or Address()).person_address(),
    )


def fetch_campaign(job: Job, campaign_id: str) -> dict[str, Any] | None:
    """A campaign the cache has not seen (its webhook never came): ask Givebutter once and cache it."""
    try:
        campaign = job.client("donations", DonationsClient).campaign(campaign_id)
    except RemoteError as exc:
        if exc.status != 404:
            logger.info("campaign %s not fetched (%s); using the defaults", campaign_id, exc)
            return None
        campaign = {"id": campaign_id, "type": None, "unknown_to_givebutter": True}  # do not ask again
    except SynctoolError as exc:
        logger.info("campaign %s not cached and not fetched (%s); using the defaults", campaign_id, exc)
        return None
    with job.unit.gather():
        settings.cache_put(job.conn, CAMPAIGNS, campaign_id, campaign)
    return campaign


def fund_mapping(conn, txn: Transaction) -> dict[str, Any] | None:
    """The fund mapping for the Givebutter fund the donor chose (by fund code, else fund id), if any."""
    for key in (txn.fund_code, txn.fund_id):
        if key:
            found = mappings.get(conn, "fund_override", key)
            if found:
                return found
    return None


def tribute(dedication: Dedication | str | None) -> tuple[dict[str, Any], str | None]:
    """LGL's tribute fields and a readable note for Givebutter's ``dedication``."""
    if isinstance(dedication, str):  # an older, free-text form
        return {}, f"dedication: {dedication.strip()}" if dedication.strip() else None
    if dedication is None or not (dedication.name or "").strip():
        return {}, None
    name = (dedication.name or "").strip()
    memorial = (dedication.type or "").lower() in ("in_memory_of", "memory", "memorial")
    words = "In memory of" if memorial else "In honor of"
    fields = {
        "tribute_name": "Memorial - General" if memorial else "Honorary - General",
        "tributee_name": name,
        "tribute_dedication": f"{words} {name}",
    }
    recipient = dedication.recipient or Recipient()
    note = f"{words.lower()} {name}"
    if recipient.name:
        fields["tribute_recipient_name"] = recipient.name
    if recipient.email:
        fields["tribute_recipient_email"] = recipient.email
    if recipient.name or recipient.email:
        note += " (notify " + " ".join(p for p in (recipient.name, recipient.email and f"<{recipient.email}>") if p) + ")"
    return fields, note


def custom_fields(conn, txn: Transaction) -> list[dict[str, Any]]:
    """Mapped Givebutter custom fields as LGL gift custom fields ``{name, values: [{name}]}``. A value that
    is not one of the CRM field's values is an error: LGL would drop it without a word."""
    out = []
    for field in txn.custom_fields:
        mapped = mappings.get(conn, "custom_field", str(field.field_id or field.id)) or mappings.get(
            conn, "custom_field", field.title or ""
        )
        if not mapped or field.value in (None, "", []):
            continue
        label = field.title or field.field_id
        crm_field = references.gift_field(conn, mapped["crm_field"])
        if crm_field is None:
            raise PermanentError(
                f"the CRM gift field {mapped['crm_field']!r} (mapped from Givebutter field {label!r}) "
                "is not in the cached CRM gift fields; run `synctool crm refresh`, or fix "
                "`synctool mappings custom-fields`"
            )
        allowed = {str(k.get("name")).strip().lower(): k["name"] for k in crm_field.get("keywords") or []}
        names = []
        for item in field.value if isinstance(field.value, list) else [field.value]:
            name = allowed.get(str(item).strip().lower())
            if name is None:
                raise PermanentError(
                    f"Givebutter field {label!r} has the value {str(item)!r}, which the CRM gift field "
                    f"{crm_field['name']!r} does not offer (it has: {', '.join(allowed.values()) or 'no values'}); "
                    "add it in the CRM, `synctool crm refresh`, then retry"
                )
            names.append({"name": name})
        out.append({"name": crm_field["name"], "values": names})
    return out


def recurring_plan(txn: Transaction) -> str | None:
    """The recurring plan a transaction is a charge of (on the transaction or one of its parts), or None."""
    return txn.plan_id or next((p.plan_id for p in txn.transactions if p.plan_id), None)


def deductible_amount(txn: Transaction) -> Decimal | None:
    """What the donor may deduct when it is not the whole amount (a ticket or an auction item gives back a
    fair market value): Givebutter's ``tax_deductible_amount``, else ``amount - fair_market_value_amount``."""
    if txn.tax_deductible_amount is not None:
        deductible = txn.tax_deductible_amount
    elif txn.fair_market_value_amount:
        deductible = txn.amount - txn.fair_market_value_amount
    else:
        return None
    deductible = min(max(deductible, Decimal("0.00")), txn.amount)
    return None if deductible == txn.amount else deductible


#: the fees a mapping can copy into a gift custom field (``synctool mappings custom-fields set fee_covered ...``)
FEE_FIELDS = ("fee_covered", "fee")


def fee_fields(job: Job, txn: Transaction) -> list[dict[str, Any]]:
    """The mapped fee amounts as gift custom field values. LGL gift fields hold only their own values, so an
    amount the field does not offer yet is added to it first (one request, the first time it appears)."""
    out = []
    for name in FEE_FIELDS:
        amount = getattr(txn, name)
        mapped = mappings.get(job.conn, "custom_field", name)
        if not mapped or amount is None:
            continue
        field = references.gift_field(job.conn, mapped["crm_field"])
        if field is None:
            raise PermanentError(
                f"the CRM gift field {mapped['crm_field']!r} (mapped from {name}) is not in the cached CRM gift "
                "fields; run `synctool crm refresh`, or fix `synctool mappings custom-fields`"
            )
        value = f"{amount:.2f}"
        job.unit.commit("before gift field value")  # it may wait for the field's lock, outside the unit
        references.ensure_gift_field_value(job.unit, job.crm, field, value)
        out.append({"name": field["name"], "values": [{"name": value}]})
    return out


def campaign_of(job: Job, txn: Transaction) -> dict[str, Any]:
    """The transaction's campaign from the cache (fetched once when the cache has not seen it), or {}."""
    if not txn.campaign_id:
        return {}
    return settings.cache_get(job.conn, CAMPAIGNS, txn.campaign_id) or fetch_campaign(job, txn.campaign_id) or {}


def gift_body(job: Job, txn: Transaction, campaign: dict[str, Any]) -> dict[str, Any]:
    conn = job.conn
    campaign_id = txn.campaign_id or ""
    donations = givebutter.DonationsConfig.of(job.config)
    config_default = {"fund_id": donations.default_fund_id, "campaign_id": donations.default_campaign_id}
    plan_id = recurring_plan(txn)
    coding = mappings.coding(
        fund_mapping(conn, txn),
        mappings.get(conn, "campaign_override", campaign_id) if campaign_id else None,
        mappings.get(conn, "type_default", "donations:recurring") if plan_id else None,
        mappings.get(conn, "type_default", f"donations:{campaign.get('type')}") if campaign.get("type") else None,
        mappings.get(conn, "type_default", "donations:default"),
        config_default,
    )
    method = (txn.method or txn.payment_method or "").lower()
    body: dict[str, Any] = {
        "external_id": external_id(txn.id),
        "received_amount": float(txn.amount),
        "received_date": gifts.gift_date(
            txn.transacted_at or txn.created_at, txn.timezone, campaign.get("timezone"), job.config.timezone
        ),
        **coding,
        **mappings.payment_coding(conn, f"donations:{method}"),
    }
    deductible = deductible_amount(txn)
    if deductible is not None:
        body["deductible_amount"] = float(deductible)
    fields = custom_fields(conn, txn) + fee_fields(job, txn)
    if fields:
        body["custom_fields"] = fields
    tribute_fields, tribute_note = tribute(txn.dedication)
    body.update(tribute_fields)
    note = [
        f"Givebutter transaction {txn.id}" + (f" #{txn.number}" if txn.number else ""),
        method or "unknown method",
        f"campaign {txn.campaign_code or campaign_id or '-'}",
    ]
    if txn.fund_code or txn.fund_id:
        note.append(f"fund {txn.fund_code or txn.fund_id}")
    if plan_id:
        note.append(f"recurring plan {plan_id}, charge {txn.id}")
    if txn.fee_covered:
        note.append(f"donor covered fee {txn.fee_covered}")
    if txn.fee:
        note.append(f"platform fee {txn.fee}")
    if deductible is not None:
        note.append(f"deductible {deductible} of {txn.amount}")
    if txn.giving_space and txn.giving_space.message:
        note.append(f"message: {txn.giving_space.message}")
    if tribute_note:
        note.append(tribute_note)
    body["note"] = "; ".join(note)
    return body


def no_money(txn: Transaction) -> str | None:
    """Why a succeeded transaction is no gift, when it moved no money: a ticket comped with a 100% discount code
    (``amount: 0``, ``method: none``); None when it did. Reconcile and year end expect no gift for it either."""
    if txn.amount != 0:
        return None
    method = (txn.method or txn.payment_method or "none").lower()
    return "no money (comped ticket)" if method == "none" else f"no money ({method}, amount 0)"


def sync_transaction(job: Job, data: Any) -> Outcome:
    txn = payload(Transaction, data, "the Givebutter transaction")
    status = txn.status.lower()
    if status != "succeeded":
        raise Skip(f"transaction {txn.id} is {status}, not succeeded")
    plan_id = recurring_plan(txn)
    if plan_id:  # a charge of a recurring plan: noted on the plan (no CRM request); its gift as any other
        plans.record_charge(job.unit, plan_id, txn.id, txn.amount, txn.currency, txn.transacted_at or txn.created_at)
    free = no_money(txn)
    if free:
        campaign = campaign_of(job, txn) if txn.campaign_id else {}
        with job.unit.gather():
            if txn.campaign_id and events.note_order(job, txn, campaign):
                free += "; its tickets become invitations"  # a comped gala seat: no gift, but the guest list
        raise Skip(free)  # no gift, no donor record, no mailing list push
    ext = external_id(txn.id)
    made = gifts.already_made(job.conn, ext, job.row)
    if made is not None and made.status == "skipped":
        return made  # another job made this gift (and its soft credit)
    campaign = campaign_of(job, txn)
    body = gift_body(job, txn, campaign)
    job.gift_in_currency(body, txn.currency)  # another currency than the organisation's holds the job (crm.currency)
    person = supporter(txn)
    if not person.email and not person.last_name:
        raise PermanentError(f"transaction {txn.id} has no supporter e-mail or name to match a constituent")
    raiser = fundraiser(job, txn)
    if raiser is not None:
        body["note"] += f"; raised by {raiser.name}" + ("" if raiser.constituent_id else " (no soft credit)")
    # a job cut short after its own write finds the gift in the ledger here, and finishes what follows it
    constituent_id, gift_id, created = job.make_gift(person, body)
    with job.unit.gather():  # an event's order: its invitations come after the gift (commits at the job's end)
        events.note_order(job, txn, campaign, constituent_id)
    credited = credit_fundraiser(job, raiser, body, constituent_id, gift_id) if raiser is not None else None
    pushed = mailing_list.queue_pushes(
        job.unit,
        person,
        source="donations",
        consent=txn.communication_opt_in,
        tags=["Givebutter donor", str(campaign.get("title") or txn.campaign_code or "")],
    )
    joined = plan_job.known_from_charge(job, plan_id, txn.id, constituent_id) if plan_id else None
    said = "gift created" if created else ((made.message if made else None) or "gift already in the CRM; recorded")
    return Outcome(
        "succeeded",
        said
        + (f"; {credited}" if credited else "")
        + job.said()
        + (f"; {len(pushed)} mailing list push(es) queued" if pushed else "")
        + (f"; {joined}" if joined else ""),
        crm_constituent_id=constituent_id,
        crm_gift_id=gift_id,
    )


def transaction(event: Event, job: Job) -> Outcome:
    # a transaction the poll found, or re-fetched by `retry-all --fresh`, wins over the webhook's copy
    data = event.payload.get("transaction") or event.data
    if not data:
        data = job.client("donations", DonationsClient).transaction(job.row["entity_id"])
    return sync_transaction(job, data)


def ticket(event: Event, job: Job) -> Outcome:
    found = payload(Ticket, event.data, "the Givebutter ticket")
    if not found.transaction_id:
        raise PermanentError(f"ticket {found.id} names no transaction_id")
    with job.unit.gather():
        events.note_ticket(job.conn, event.data)
        invited = tickets.order(job.conn, events.SOURCE, found.transaction_id) is not None
        if invited:  # else its transaction's job, if it is an event's order, queues the invitations
            events.queue(job.conn, found.transaction_id)
    ext = external_id(found.transaction_id)
    other = log.gift_job(job.conn, ext, entity_type="transaction", statuses=("queued", "running", "succeeded", "skipped"))
    if other is not None and other["status"] == "skipped" and "no money" not in (other["message"] or ""):
        other = None  # a transaction skipped as not succeeded: the lone-ticket path reads it afresh
    if other is not None or gifts.recorded(job.conn, ext) is not None:
        also = "; its invitations queued" if invited else ""
        raise Skip(f"covered by transaction {found.transaction_id} (one gift per purchase){also}")
    outcome = sync_transaction(job, job.client("donations", DonationsClient).transaction(found.transaction_id))
    outcome.message = f"lone ticket: synced its transaction {found.transaction_id}; " + (outcome.message or "")
    return outcome


def campaign(event: Event, job: Job) -> Outcome:
    data = event.data
    found = payload(Campaign, data, "the Givebutter campaign")
    with job.unit.gather():
        settings.cache_put(job.conn, CAMPAIGNS, found.id, data)
    return Outcome("succeeded", f"campaign cache updated: {found.title} ({found.type})")
