"""Peer-to-peer fundraisers: the Givebutter member whose page took a gift (``member_id``), matched to a CRM
constituent like any person, and soft-credited with the donor's gift (``synctool.crm.soft_credits``) when soft credits
are on. A fundraiser's record is read once from Givebutter and cached (a page takes many gifts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from synctool.platform import Job, Person, RemoteError, constituents, gifts, mirror, references, settings, soft_credits
from synctool.platforms.givebutter.client import DonationsClient
from synctool.platforms.givebutter.webhook import Transaction

#: the peer-to-peer fundraisers read so far, by "<campaign id>:<member id>"
MEMBERS = "donations:members"


@dataclass
class Fundraiser:
    """The peer-to-peer fundraiser whose page took a gift, and their constituent (None: not in the CRM)."""

    member_id: str
    name: str
    constituent_id: str | None
    #: why there is no soft credit, when there is none
    why_not: str | None = None


def fundraiser(job: Job, txn: Transaction) -> Fundraiser | None:
    """The gift's fundraiser (``member_id``), matched like any person: on the mirror first (0 CRM requests
    when known), refreshed once per run; created only when ``soft_credits.create_fundraisers`` is on. A team
    page's gift without a member names no one person, so it gets none (the team's captain is not in the data)."""
    if not txn.member_id:
        return None
    name = txn.member_name or f"fundraiser {txn.member_id}"
    if not soft_credits.enabled(job.conn, job.config):
        return Fundraiser(str(txn.member_id), name, None, "soft credits are off (synctool settings soft-credits on)")
    member = _member(job, txn)
    if member is None:
        return Fundraiser(str(txn.member_id), name, None, f"Givebutter has no member {txn.member_id} on the campaign")
    person = Person(first_name=member.get("first_name"), last_name=member.get("last_name"), email=member.get("email") or None)
    name = " ".join(p for p in (person.first_name, person.last_name) if p) or name
    if not person.email:
        return Fundraiser(str(txn.member_id), name, None, f"{name} has no e-mail on Givebutter to match a constituent by")
    if job.config.soft_credits.create_fundraisers:
        return Fundraiser(str(txn.member_id), name, job.match_or_create(person)[0])
    found = constituents.lookup(job.conn, person)
    if found is None:
        crm = job.config.crm
        mirror.ensure_fresh(job.crm, job.unit, job.run_started, page_size=crm.mirror_page_size)
        found = constituents.lookup(job.conn, person)
    if found is None:
        why = f"{name} <{person.email}> is not in the CRM (soft_credits.create_fundraisers is off)"
        return Fundraiser(str(txn.member_id), name, None, why)
    return Fundraiser(str(txn.member_id), name, str(found["id"]))


def _member(job: Job, txn: Transaction) -> dict[str, Any] | None:
    """The fundraiser's Givebutter record, cached (a fundraiser's page takes many gifts)."""
    key = f"{txn.campaign_id}:{txn.member_id}"
    cached = settings.cache_get(job.conn, MEMBERS, key)
    if cached is not None:
        return cached
    try:
        member = job.client("donations", DonationsClient).member(str(txn.campaign_id), str(txn.member_id))
    except RemoteError as exc:
        if exc.status == 404:
            return None
        raise
    with job.unit.gather():
        settings.cache_put(job.conn, MEMBERS, key, member)
    return member


def credit_fundraiser(job: Job, raiser: Fundraiser, body: dict[str, Any], donor_id: str, gift_id: str) -> str:
    """The soft credit of the donor's gift for its fundraiser, made once; what happened, in words."""
    if raiser.constituent_id is None:
        return f"no soft credit: {raiser.why_not}"
    if raiser.constituent_id == donor_id:
        return f"no soft credit: {raiser.name} gave on their own page"
    types = references.listing(job.conn, "gift-types")["items"]
    if types and not any(t.get("name") == soft_credits.GIFT_TYPE for t in types):
        return f'no soft credit: the CRM has no "{soft_credits.GIFT_TYPE}" gift type (synctool crm gift-types)'
    credit = soft_credits.body(body, gift_id, raiser.member_id, raiser.name)
    # made once like any gift: 1 request when new, 0 when the ledger holds it
    credit_id, created = gifts.create_once(
        job.crm, job.unit, raiser.constituent_id, credit, job_id=job.id, confirm_after_s=job.config.crm.confirm_after_s
    )
    return f"soft credit {credit_id} for {raiser.name}" + ("" if created else " (already in the CRM)")
