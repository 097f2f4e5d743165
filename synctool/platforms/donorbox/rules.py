"""Donorbox donations -> CRM gifts, and their refunds.

- A paid donation (``donation.created``, or one the backup poll, backfill or reconcile found) becomes one gift,
  external id ``donorbox_<donation id>``, on the donor's constituent (matched or made as for any platform; the
  donor's new contact points kept by ``donors.updates``).
- Coding, most particular first: the designation's fund (``mappings funds set donorbox:<designation>``), the
  campaign's override (``mappings overrides set donorbox:<campaign id>``), a recurring donation's type default
  (``donorbox:recurring``), ``donorbox:default``, then ``donorbox.default_fund_id`` / ``default_campaign_id``;
  the payment type from ``donorbox:<donation_type>`` (``stripe``, ``paypal``, ...).
- The gift's amount is what the donor gave; Donorbox's ``processing_fee`` and the net go to the note; a deductible
  amount where the donation states one; a dedication becomes LGL's tribute fields; the day is the donation's on
  the organisation's calendar (``donorbox.timezone``, else ``timezone:``); the currency Donorbox names holds the job
  when it is not the organisation's.
- A donor who ticked ``join_mailing_list`` is pushed to each mailing-list audience that takes donors, as any
  platform's (``mailing_list.queue_pushes``).
- A refund: Donorbox reports a running total (``amount_refunded``), so each refund is what the total adds to the
  refunds applied to the gift, keyed by the donation and the total (a replay changes nothing), by the refund policy.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from synctool.platform import (
    Event,
    Job,
    Outcome,
    PermanentError,
    Person,
    Skip,
    gift_date,
    mailing_list,
    mappings,
    payload,
    refunds,
)
from synctool.platforms.donorbox import plans
from synctool.platforms.donorbox.models import NAME, ROLE, ZERO, Dedication, Donation, DonorAddress, external_id

#: the donation's own address fields (Donorbox repeats the donor's address at the donation's top level)
ADDRESS = {"address", "address_line_2", "city", "state", "zip_code", "country"}


def donor(d: Donation) -> Person:
    address = DonorAddress.model_validate(d.model_dump(include=ADDRESS))
    first, last = d.donor.first_name, d.donor.last_name
    if not (first or last) and d.donor.name:  # only the full name: its last word is the last name
        first, _, last = d.donor.name.strip().rpartition(" ")
    return Person(
        first_name=first or None,
        last_name=last or None,
        email=d.donor.email,
        phone=d.donor.phone,
        org_name=d.donating_company or None,
        address=address.person_address(),
    )


def day(d: Donation, zone: str | None, organisation_zone: str | None) -> str:
    """The donation's day as the gift and reconcile both write it: on Donorbox's account's calendar, else the
    organisation's."""
    return gift_date(d.donation_date, zone, organisation_zone)


def coding(conn: Any, d: Donation, section: Any) -> dict[str, Any]:
    campaign_id = d.campaign.id if d.campaign else None
    return {
        **mappings.coding(
            mappings.get(conn, "fund_override", f"{ROLE}:{d.designation}") if d.designation else None,
            mappings.get(conn, "campaign_override", f"{ROLE}:{campaign_id}") if campaign_id else None,
            mappings.get(conn, "type_default", f"{ROLE}:recurring") if d.recurring else None,
            mappings.get(conn, "type_default", f"{ROLE}:default"),
            {"fund_id": section.default_fund_id, "campaign_id": section.default_campaign_id},
        ),
        **mappings.payment_coding(conn, f"{ROLE}:{d.donation_type.lower()}"),
    }


def deductible(d: Donation) -> Decimal | None:
    """The deductible amount where the donation states one below what was given (else None: all of it)."""
    if d.tax_deductible_amount is None:
        return None
    found = min(max(d.tax_deductible_amount, ZERO), d.amount)
    return None if found == d.amount else found


def tribute(dedication: Dedication | None) -> tuple[dict[str, Any], str | None]:
    """LGL's tribute fields and a readable note for a dedication."""
    name = ((dedication.name if dedication else None) or "").strip()[:200]
    if dedication is None or not name:
        return {}, None
    memorial = "memor" in (dedication.type or "").lower()
    words = "In memory of" if memorial else "In honor of"
    fields = {
        "tribute_name": "Memorial - General" if memorial else "Honorary - General",
        "tributee_name": name,
        "tribute_dedication": f"{words} {name}",
    }
    if dedication.email:
        fields["tribute_recipient_email"] = dedication.email[:320]
    return fields, f"{words.lower()} {name}"


def gift_body(job: Job, d: Donation) -> dict[str, Any]:
    section = job.config.section(ROLE)
    body: dict[str, Any] = {
        "external_id": external_id(d.id),
        "received_amount": float(d.amount),
        "received_date": day(d, section.timezone, job.config.timezone),
        **coding(job.conn, d, section),
    }
    note = [f"Donorbox donation {d.id}", d.donation_type.lower() or "unknown method"]
    if d.campaign and (d.campaign.name or d.campaign.id):
        note.append(f"campaign {(d.campaign.name or '-')[:120]} ({d.campaign.id or '-'})")
    if d.designation:
        note.append(f"designation {d.designation[:120]}")
    if d.recurring:
        note.append("recurring" + (f" plan {d.plan_id}" if d.plan_id else ""))
    if d.processing_fee is not None and d.processing_fee > 0:
        note.append(f"processing fee {d.processing_fee:.2f}, net {d.amount - d.processing_fee:.2f}")
    kept = deductible(d)
    if kept is not None:
        body["deductible_amount"] = float(kept)
        note.append(f"deductible {kept:.2f} of {d.amount:.2f}")
    fields, said = tribute(d.dedication)
    body.update(fields)
    if said:
        note.append(said)
    if d.comment:
        note.append(f"comment: {d.comment.strip()[:300]}")
    body["note"] = "; ".join(note)
    return body


def no_gift(d: Donation) -> str | None:
    """Why a donation is no gift on purpose (reconcile expects none either), else None."""
    if not d.paid:
        return f"Donorbox donation {d.id} is {d.status[:40]}, not paid"
    if d.amount <= 0:
        return f"no money (Donorbox donation {d.id} of {d.amount})"
    return None


def read(event: Event, what: str) -> Donation:
    return payload(Donation, event.payload.get("donation") or event.data, what)


def donation(event: Event, job: Job) -> Outcome:
    d = read(event, "the Donorbox donation")
    why = no_gift(d)
    if why:
        raise Skip(why)
    person = donor(d)
    if not person.email and not person.last_name:
        raise PermanentError(f"Donorbox donation {d.id} has no donor e-mail or name to match a constituent")
    body = gift_body(job, d)
    plan_id = d.plan_id if d.recurring else None
    if plan_id:  # a charge of a recurring plan: noted on the plan (no CRM request); its gift as any other
        plans.note_charge(job, plan_id, d.id, d.amount, d.currency, d.donation_date)
    constituent_id, gift_id, created = job.make_gift(person, body, currency=d.currency)
    joined = plans.known_from_charge(job, plan_id, d.id, constituent_id, person.email) if plan_id else None
    campaign = (d.campaign.name if d.campaign else None) or ""
    pushed = mailing_list.queue_pushes(job.unit, person, source=ROLE, consent=d.join_mailing_list,
                                       tags=["Donorbox donor", campaign[:100]])  # fmt: skip
    said = "gift created" if created else "gift already in the CRM"
    return Outcome(
        "succeeded",
        said
        + job.said()
        + (f"; {len(pushed)} mailing list push(es) queued" if pushed else "")
        + (f"; {joined}" if joined else ""),
        crm_constituent_id=constituent_id,
        crm_gift_id=gift_id,
        amount=str(d.amount),
    )


def refund(event: Event, job: Job) -> Outcome:
    """What Donorbox's refunded total adds to the refunds applied to the gift, by the refund policy. Donorbox
    states no refund date: the refund's day is the day synctool heard of it, on the organisation's calendar."""
    d = read(event, "the Donorbox refund")
    ext = external_id(d.id)
    total = d.refunded
    new = total - refunds.refunded_so_far(job.conn, ext)
    if total <= 0 or new <= 0:
        raise Skip(f"Donorbox donation {d.id}: its refunded total {total} is already applied")
    on = gift_date(str(job.row["created_at"]), job.config.section(ROLE).timezone, job.config.timezone)
    found = refunds.Refund(ROLE, NAME, f"{d.id} (refunded total {total})", ext, new, on, key=f"{ROLE}:{d.id}:{total}",
                           currency=d.currency)  # fmt: skip
    return refunds.run(job.refund_job(), found)
