"""Finding or creating the CRM constituent for a person (spec: matching).

The spec's rule, a name search followed by an exact, normalised e-mail filter (LGL's e-mail search is not
used), runs against the local mirror of the CRM's constituents (``crm/mirror.py``), so a donor the CRM
already has costs no request. A person not in the mirror costs no search either once the mirror has been
refreshed in this run; only then is a constituent created, with the configured default profile fields
and the contact rows nested in the same request. A local e-mail -> constituent link answers a returning
donor first; when the CRM says the linked constituent is gone, or its e-mail changed, the link is dropped
and the person matched again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from synctool import settings, store
from synctool.config import ProfileDefaults
from synctool.crm import matching, mirror
from synctool.crm.client import CrmClient
from synctool.crm.mirror import normalize_email
from synctool.crm.person import Person
from synctool.crm.types import CrmId, JsonObject
from synctool.errors import RemoteError, UncertainWrite
from synctool.queue.unit import Unit

LINKS = "email_link"


class ContactBody(TypedDict, total=False):
    """One contact row of a new constituent: an e-mail (``address``), a phone (``number``) or a street address."""

    address: str
    email_type_name: str
    number: str
    phone_type_name: str
    street: str | None
    city: str | None
    state: str | None
    postal_code: str | None
    country: str | None
    street_type_name: str
    is_preferred: bool


class ConstituentBody(TypedDict, total=False):
    """``POST /constituents``: the new constituent with its contact rows nested."""

    is_org: bool
    first_name: str | None
    last_name: str | None
    constituent_contact_type_name: str
    email_addresses: list[ContactBody]
    phone_numbers: list[ContactBody]
    street_addresses: list[ContactBody]
    addressee: str
    salutation: str | None
    org_name: str
    external_constituent_id: str


def linked(conn: store.Connection, email: str | None) -> str | None:
    value = settings.cache_get(conn, LINKS, normalize_email(email)) if email else None
    return str(value["constituent_id"]) if value else None


def link(conn: store.Connection, email: str | None, constituent_id: CrmId) -> None:
    if normalize_email(email):
        settings.cache_put(conn, LINKS, normalize_email(email), {"constituent_id": str(constituent_id)})


def unlink(conn: store.Connection, email: str | None) -> None:
    settings.cache_delete(conn, LINKS, normalize_email(email))


def emails_of(constituent: JsonObject) -> set[str]:
    return {normalize_email(e.get("address")) for e in constituent.get("email_addresses") or [] if e.get("address")}


def lookup(conn: store.Connection, person: Person) -> JsonObject | None:
    """The spec's match on the mirror: a constituent with the person's e-mail whose name fields contain
    the person's last name (else first name, else organisation name); None when nothing matches."""
    name = person.last_name or person.first_name or person.org_name
    if not name or not person.key:
        return None
    matches = [c for c in mirror.with_email(conn, person.key) if mirror.has_name(c, name)]
    if not matches:
        return None
    first = normalize_email(person.first_name)
    # two constituents can share an e-mail (spouses): prefer the one whose first name matches, then the oldest
    matches.sort(key=lambda c: (normalize_email(c.get("first_name")) != first, int(c.get("id") or 0)))
    return matches[0]


def create_body(person: Person, defaults: ProfileDefaults) -> ConstituentBody:
    names = {"first_name": person.first_name or "", "last_name": person.last_name or ""}
    body: ConstituentBody = {
        "is_org": defaults.is_org if not person.org_name else True,
        "first_name": person.first_name or None,
        "last_name": person.last_name or person.org_name or person.email,
        "constituent_contact_type_name": defaults.constituent_contact_type_name,
        "email_addresses": [{"address": person.email.strip(), "email_type_name": "Home", "is_preferred": True}]
        if person.email
        else [],
    }
    if person.first_name or person.last_name:
        body["addressee"] = defaults.addressee_format.format(**names).strip()
        body["salutation"] = defaults.salutation_format.format(**names).strip() or None
    if person.org_name:
        body["org_name"] = person.org_name
    if person.external_id:
        body["external_constituent_id"] = str(person.external_id)
    if person.phone:
        body["phone_numbers"] = [{"number": person.phone, "phone_type_name": "Home", "is_preferred": True}]
    street = person.address.get("street")
    if street or person.address.get("city"):
        body["street_addresses"] = [
            {
                "street": street,
                "city": person.address.get("city"),
                "state": person.address.get("state"),
                "postal_code": person.address.get("postal_code"),
                "country": person.address.get("country"),
                "street_type_name": "Home",
                "is_preferred": True,
            }
        ]
    return body


@dataclass
class KnownDonors:
    """The donor policy a job matches its gift's donor by, as data: for a person whose e-mail is in no constituent,
    ``crm.matching.resolve`` looks for a known one by ``how`` (``donors.matching``) on behalf of ``job`` (a person's
    decision for it comes first; a hold is recorded on it). What was decided is said in ``said`` (the job's outcome
    shows it)."""

    job: store.Row
    how: str
    said: list[str] = field(default_factory=list)


@dataclass
class Matching:
    """How this run matches a person to a constituent, as data: the new constituent's profile ``defaults``, when the
    run started (``fresh_since``, an ``store.iso`` time: before creating, the mirror is refreshed unless that already
    happened since then; now when None), the mirror's page size, and the donor policy for a person whose e-mail is in
    no constituent (``donors``: ``crm.matching``; None matches by e-mail alone). ``created`` collects the constituents
    created under it."""

    defaults: ProfileDefaults
    fresh_since: str | None = None
    page_size: int = 250
    donors: KnownDonors | None = None
    created: set[str] = field(default_factory=set)


def match_or_create(crm: CrmClient, work: Unit, person: Person, how: Matching, *, use_link: bool = True) -> tuple[str, bool]:
    """The constituent id for ``person`` and whether it was created now, by ``how``; with a donor policy
    (``how.donors``), a constituent who is the person by other evidence (``crm.matching.resolve``) is asked for before
    creating one (it may raise ``NeedsReview``). What it writes gathers in ``work``."""
    conn = work.conn
    fresh_since = how.fresh_since or store.iso()
    if use_link:
        known = linked(conn, person.email)
        if known:
            return known, False
    # one person at a time: two jobs for a new donor must not both create her (the lock commits, in a job, at the
    # point before the first request that follows: the mirror's refresh, or the create)
    with work.lock([f"person:{person.key or person.last_name}"]):
        if use_link:
            known = linked(conn, person.email)
            if known:
                return known, False
        found = lookup(conn, person)
        if found is None:
            mirror.ensure_fresh(crm, work, fresh_since, page_size=how.page_size)
            found = lookup(conn, person)
        if found is None and how.donors is not None and person.key:
            chosen, note = matching.resolve(work, person, how.donors.job, how.donors.how)
            if note:
                how.donors.said.append(note)
            if chosen is not None:
                found = {"id": chosen}
        created = found is None
        if found is None:
            found = _create(crm, work, person, how.defaults, how.page_size)
            how.created.add(str(found["id"]))
        constituent_id = str(found["id"])
        with work.gather():
            link(conn, person.email, constituent_id)
        return constituent_id, created


def _create(crm: CrmClient, work: Unit, person: Person, defaults: ProfileDefaults, page_size: int) -> JsonObject:
    body = create_body(person, defaults)
    conn = work.conn
    work.commit("before constituent create")  # the person's lock (and the refreshed mirror) first
    try:
        created = crm.create_constituent(body)
    except UncertainWrite:
        # the create may have happened: look before creating again
        mirror.refresh(crm, work, page_size=page_size)
        found = lookup(conn, person)
        if found is not None:
            return found
        work.commit("before constituent create")
        created = crm.create_constituent(body)
    # what the CRM answered commits at the job's next point (before its gift's create)
    with work.gather():
        # LGL answers a create with the whole record; the body's contacts stand in for any it leaves out
        mirror.put(conn, {**{k: v for k, v in body.items() if k in mirror.CONTACT_LISTS}, **created})
    return created


#: words with which a 400/422 body says the constituent it names is not there
GONE_WORDS = (
    "not found",
    "does not exist",
    "doesn't exist",
    "no longer",
    "deleted",
    "invalid",
    "unknown",
    "can't be blank",
    "is missing",
)


def is_gone(error: Exception) -> bool:
    """Whether a CRM error says the constituent no longer exists. LGL documents no 404 for it: a 404, or
    a 400/422 whose body names the constituent as missing, both count."""
    if not isinstance(error, RemoteError):
        return False
    if error.status == 404:
        return True
    message = str(error).lower()
    return error.status in (400, 422) and "constituent" in message and any(w in message for w in GONE_WORDS)


def revalidate(crm: CrmClient, work: Unit, constituent_id: str, email: str | None) -> bool:
    """Check a linked constituent still exists and still has ``email``; drop the link if not."""
    try:
        constituent = crm.get_constituent(constituent_id)
    except RemoteError as exc:
        if not is_gone(exc):
            raise
        constituent = None
    with work.gather() as conn:
        if constituent is None:
            mirror.forget(conn, constituent_id)
        else:
            mirror.put(conn, constituent)
        if constituent is None or (email and normalize_email(email) not in emails_of(constituent)):
            unlink(conn, email)
            return False
    return True
