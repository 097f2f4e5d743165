"""The sync rules: a Stripe payment the portal did not make becomes one CRM gift; its refunds and a lost dispute
lower (or delete, by the refund policy) that gift.

Whatever brought the job (``charge.succeeded``, ``checkout.session.completed``, ``invoice.paid``, the poll, backfill,
reconcile), the gift is read from the charge as Stripe holds it now (``GET /v1/charges/{id}``, its balance
transaction expanded: the fee and the net), the Checkout Session that made it (``GET /v1/checkout/sessions?
payment_intent=``: its Payment Link and line items code the gift) and, for a subscription's charge, its invoice.
All three events of one payment share the gift's key (``stripe_<payment intent>``): one gift.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from synctool.platform import (
    Event,
    Job,
    Outcome,
    PaymentEvent,
    PermanentError,
    Person,
    Skip,
    gift_date,
    jobs,
    log,
    mappings,
    payload,
    plans,
    refunds,
    settings,
)
from synctool.platforms.stripe_donations.client import DonationsClient
from synctool.platforms.stripe_donations.models import (
    PORTAL_MARK,
    ROLE,
    Charge,
    Dispute,
    Invoice,
    LineItem,
    Session,
    external_id,
    major,
)
from synctool.platforms.stripe_donations.subscriptions import read_plan


def the_object(event: Event) -> dict[str, Any]:
    """The Stripe object behind a job: its delivery's ``data.object``, or what the poll, backfill or reconcile
    queued (``payload["object"]``)."""
    if isinstance(event.data, PaymentEvent):
        return event.data.data.object
    found = event.payload.get("object")
    if not isinstance(found, dict):
        raise PermanentError("the job carries no Stripe object (neither its delivery nor a queued payload)")
    return found


def iso(unix: int | None) -> str | None:
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="seconds") if unix else None


def day(job: Job, unix: int | None) -> str:
    """A moment's day on the organisation's calendar (the account's ``timezone:``, else the organisation's)."""
    return gift_date(iso(unix), job.config.section(ROLE).timezone, job.config.timezone)


def client_of(job: Job) -> DonationsClient:
    return job.client(ROLE, DonationsClient)


def charge_of(job: Job, obj: dict[str, Any]) -> Charge:
    """The charge behind a charge, a Checkout Session or an invoice, as Stripe holds it now."""
    client = client_of(job)
    kind = obj.get("object")
    if kind == "checkout.session":
        session = payload(Session, obj, "the Stripe checkout session")
        if not session.payment_intent:
            raise Skip(f"checkout session {session.id} names no payment intent")
        found = client.charges(payment_intent=session.payment_intent)
        paid = [c for c in found if c.get("status") == "succeeded"]
        if not paid:
            raise Skip(f"checkout session {session.id}: payment intent {session.payment_intent} has no succeeded charge yet")
        return payload(Charge, paid[0], "the Stripe charge")
    if kind == "invoice":
        invoice = payload(Invoice, obj, "the Stripe invoice")
        if not invoice.charge:
            raise Skip(f"invoice {invoice.id} was paid without a charge (nothing owed)")
        return payload(Charge, client.charge(invoice.charge), "the Stripe charge")
    charge_id = obj.get("id")
    if not isinstance(charge_id, str) or not charge_id:
        raise PermanentError("the Stripe object has no id")
    return payload(Charge, client.charge(charge_id), "the Stripe charge")


#: the cache of the payment links, prices and products seen, by name (the Mappings page's choices)
CAMPAIGNS = f"{ROLE}:campaigns"


def coding_keys(job: Job, charge: Charge) -> tuple[Session | None, list[str], Invoice | None]:
    """The Checkout Session that made the charge, the ids that may code it (payment link, then each line's price
    and product), and its invoice (a subscription's charge). Each id is kept by name (its line's description) in
    ``stripe-donations:campaigns``, for the Mappings page."""
    client = client_of(job)
    named: dict[str, str] = {}
    invoice = payload(Invoice, client.invoice(charge.invoice), "the Stripe invoice") if charge.invoice else None
    session = None
    keys: list[str] = []
    if charge.payment_intent and invoice is None:
        found = client.session_of(charge.payment_intent)
        session = payload(Session, found, "the Stripe checkout session") if found else None
    if session is not None:
        if session.payment_link:
            keys.append(session.payment_link)
        for line in client.line_items(session.id):
            item = payload(LineItem, line, "a checkout line item")
            if item.price is not None:
                found_keys = [k for k in (item.price.id, item.price.product) if k]
                keys += found_keys
                named.update({k: item.description or k for k in found_keys})
        if session.payment_link:
            named[session.payment_link] = (
                "Payment Link " + " + ".join(dict.fromkeys(named.values())) if named else session.payment_link
            )
    if named:
        with job.unit.gather() as conn:
            for key, name in named.items():
                settings.cache_put(conn, CAMPAIGNS, key, {"id": key, "title": name[:200]})
    return session, keys, invoice


def person_of(charge: Charge, session: Session | None, invoice: Invoice | None) -> Person:
    """The donor: the charge's billing details, else the session's customer details, else the invoice's."""
    billing = charge.billing_details
    customer = session.customer_details if session is not None else None
    name = (
        (billing.name if billing else None)
        or (customer.name if customer else None)
        or (invoice.customer_name if invoice else None)
    )
    email = (
        (billing.email if billing else None)
        or charge.receipt_email
        or (customer.email if customer else None)
        or (invoice.customer_email if invoice else None)
    )
    first, _, last = (name or "").strip().rpartition(" ")
    if not first:  # one word: the family name
        first, last = "", last
    address = billing.address.person_address() if billing and billing.address else {}
    phone = (billing.phone if billing else None) or (customer.phone if customer else None)
    return Person(first or None, last or None, email, phone=phone, address=address)


def gift_body(job: Job, charge: Charge, keys: list[str], invoice: Invoice | None) -> dict[str, Any]:
    """The CRM gift: the charge's gross, its local day, coded by the first mapped payment link, price or product
    (``mappings overrides set plink_...``), a subscription's by ``stripe-donations:recurring``, then
    ``stripe-donations:default`` and the config's fund; the payment type by ``stripe-donations:<method>``."""
    conn = job.conn
    section = job.config.section(ROLE)
    layers: list[Any] = [mappings.get(conn, "campaign_override", key) for key in keys]
    if invoice is not None and invoice.subscription:  # a subscription's (a one-off invoice's gift is not recurring)
        layers.append(mappings.get(conn, "type_default", f"{ROLE}:recurring"))
    layers += [mappings.get(conn, "type_default", f"{ROLE}:default"), {"fund_id": section.default_fund_id}]
    method = (charge.payment_method_details.type if charge.payment_method_details else None) or "card"
    note = [f"Stripe charge {charge.id}" + (f" ({charge.payment_intent})" if charge.payment_intent else "")]
    if keys:
        note.append("via " + ", ".join(keys))
    if invoice is not None:
        note.append(
            f"recurring: subscription {invoice.subscription}, invoice {invoice.id}"
            if invoice.subscription
            else f"invoice {invoice.id}"
        )
    txn = charge.balance_transaction
    if txn is not None:
        note.append(f"Stripe fee {major(txn.fee, txn.currency)} {txn.currency.upper()}, net {major(txn.net, txn.currency)}")
    if charge.description:
        note.append(charge.description)
    return {
        "external_id": external_id(charge.payment),
        "received_amount": float(major(charge.amount, charge.currency)),
        "received_date": day(job, charge.created),
        "note": "; ".join(note),
        **mappings.coding(*layers),
        **mappings.payment_coding(conn, f"{ROLE}:{method.lower()}"),
    }


def gift(event: Event, job: Job) -> Outcome:
    charge = charge_of(job, the_object(event))
    if charge.status != "succeeded":
        raise Skip(f"charge {charge.id} is {charge.status}, not succeeded")
    if charge.portal:
        raise Skip(f"charge {charge.id} carries metadata.{PORTAL_MARK}: the member portal's payment")
    if charge.amount <= 0:
        raise Skip(f"no money (Stripe charge {charge.id} of 0)")
    session, keys, invoice = coding_keys(job, charge)
    if session is not None and session.metadata.get(PORTAL_MARK):
        raise Skip(f"charge {charge.id} was made by checkout session {session.id}, the member portal's (metadata.{PORTAL_MARK})")
    person = person_of(charge, session, invoice)
    if not person.email and not person.last_name:
        raise PermanentError(f"Stripe charge {charge.id} names no donor (no billing e-mail or name)")
    body = gift_body(job, charge, keys, invoice)
    plan_id = invoice.subscription if invoice is not None else None
    if plan_id:  # a charge of a monthly donor's plan: noted on it (no CRM request), its gift made as any other
        plans.record_charge(job.unit, ROLE, plan_id, charge.id, major(charge.amount, charge.currency), charge.currency.upper(),
                            iso(charge.created), external_id=body["external_id"], entity_type=job.row["entity_type"])  # fmt: skip
    constituent_id, gift_id, created = job.make_gift(person, body, currency=charge.currency.upper())
    said = "gift created" if created else "gift already in the CRM"
    if plan_id:  # a plan synctool never recorded (its events lost): read once, its donor in the group
        known = plans.known_from_charge(job, ROLE, plan_id, charge.id, constituent_id, lambda: read_plan(client_of(job), plan_id))
        said += f"; {known}" if known else ""
    return Outcome(
        "succeeded",
        said + job.said(),
        crm_constituent_id=constituent_id,
        crm_gift_id=gift_id,
        amount=str(major(charge.amount, charge.currency)),
    )


def portal_made(job: Job, charge: Charge) -> str | None:
    """Why the charge is the member portal's (its own mark, or the Checkout Session that made it), or None."""
    if charge.portal:
        return f"charge {charge.id} carries metadata.{PORTAL_MARK}"
    if charge.payment_intent:
        found = client_of(job).session_of(charge.payment_intent)
        session = payload(Session, found, "the Stripe checkout session") if found else None
        if session is not None and session.metadata.get(PORTAL_MARK):
            return f"charge {charge.id} was made by checkout session {session.id}, the member portal's"
    return None


def hand_back(job: Job, charge: Charge, why: str) -> Outcome:
    """A refund of the portal's payment whose charge the portal left unmarked: its delivery goes back to Stripe's
    own job (``payments``' ``charge_refund``, which the portal's rules run), as if it had never been claimed."""
    delivery = job.row["delivery_id"]
    if delivery is None:
        return Outcome("skipped", f"{why}: not a donation")
    with job.unit.gather() as conn:
        handed = jobs.enqueue(conn, source="payments", entity_type="charge_refund", entity_id=charge.id,
                              external_id=charge.metadata.get(PORTAL_MARK), delivery_id=delivery,
                              amount=f"-{major(charge.amount_refunded, charge.currency)}")  # fmt: skip
    return Outcome("skipped", f"{why}: handed to the portal's refund job {handed}")


def refund(event: Event, job: Job) -> Outcome:
    """``charge.refunded`` (or reconcile's refunded charge): what the charge's refunded total adds to the refunds
    already applied, keyed by that total (a replayed event, or two refunds' events in any order, apply it once).
    A charge that is no donation's (no job of synctool's makes its gift) and is the portal's goes back to it."""
    charge = payload(Charge, the_object(event), "the Stripe charge")
    ext = external_id(charge.payment)
    if log.gift_job(job.conn, ext, exclude=job.id) is None:
        why = portal_made(job, charge)
        if why:
            return hand_back(job, charge, why)
    total = major(charge.amount_refunded, charge.currency)
    new = total - refunds.refunded_so_far(job.conn, ext)
    if new <= 0:
        raise Skip(f"Stripe charge {charge.id}: its refunded total {total} is already applied")
    listed = [r for r in (charge.refunds.data if charge.refunds else []) if r.status in (None, "succeeded")]
    latest = max(listed, key=lambda r: r.created or 0) if listed else None
    refund_id = latest.id if latest is not None else f"{charge.id} (refunded total {total})"
    on = day(job, latest.created if latest is not None and latest.created else charge.created)
    found = refunds.Refund(
        ROLE,
        "Stripe",
        refund_id,
        ext,
        new,
        on,
        key=f"{ROLE}:{charge.id}:{charge.amount_refunded}",
        currency=charge.currency.upper(),
    )
    return refunds.run(job.refund_job(), found)


def dispute_refund(event: Event, job: Job) -> Outcome:
    """A lost dispute takes its amount back: applied as a refund keyed by the dispute's id."""
    dispute = payload(Dispute, the_object(event), "the Stripe dispute")
    if dispute.status != "lost":
        raise Skip(f"dispute {dispute.id} is {dispute.status}: the money stays")
    ext = external_id(dispute.payment_intent or dispute.charge)
    amount = major(dispute.amount, dispute.currency)
    if amount <= Decimal(0):
        raise Skip(f"dispute {dispute.id} took nothing back")
    found = refunds.Refund(
        ROLE, "Stripe (dispute lost)", dispute.id, ext, amount, day(job, dispute.created), currency=dispute.currency.upper()
    )
    return refunds.run(job.refund_job(), found)
