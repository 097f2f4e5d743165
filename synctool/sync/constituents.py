"""Finding or creating the CRM constituent for a person (spec: matching).

A name search, then an exact, normalised e-mail filter on the client (LGL's e-mail search is not
used); create when nothing matches exactly, with the configured default profile fields and the
contact rows nested in the same request. A local e-mail -> constituent link makes a returning donor
cost no search; when the CRM says the linked constituent is gone, or its e-mail changed, the link is
dropped and the person matched again.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from synctool import settings, store
from synctool.config import ProfileDefaults
from synctool.platforms.lgl import CrmClient, CrmPermanentError, UncertainWrite

LINKS = "email_link"


def normalize_email(email: str | None) -> str:
    return (email or "").strip().lower()


@dataclass
class Person:
    first_name: str | None = None
    last_name: str | None = None
    email: str | None = None
    phone: str | None = None
    address: dict[str, Any] = field(default_factory=dict)  # street, city, state, postal_code, country
    external_id: str | None = None
    org_name: str | None = None

    @property
    def key(self) -> str:
        return normalize_email(self.email)


def linked(conn: sqlite3.Connection, email: str | None) -> str | None:
    value = settings.cache_get(conn, LINKS, normalize_email(email)) if email else None
    return str(value["constituent_id"]) if value else None


def link(conn: sqlite3.Connection, email: str | None, constituent_id: Any) -> None:
    if normalize_email(email):
        settings.cache_put(conn, LINKS, normalize_email(email), {"constituent_id": str(constituent_id)})


def unlink(conn: sqlite3.Connection, email: str | None) -> None:
    settings.cache_delete(conn, LINKS, normalize_email(email))


def emails_of(constituent: dict[str, Any]) -> set[str]:
    return {normalize_email(e.get("address")) for e in constituent.get("email_addresses") or [] if e.get("address")}


def search(crm: CrmClient, person: Person) -> dict[str, Any] | None:
    """Name search (with contacts expanded), then the exact e-mail filter; None when nothing matches."""
    name = person.last_name or person.first_name or person.org_name
    if not name or not person.key:
        return None
    matches = [c for c in crm.search_constituents({"name": name.strip()}) if person.key in emails_of(c)]
    if not matches:
        return None
    first = normalize_email(person.first_name)
    # two constituents can share an e-mail (spouses): prefer the one whose first name matches, then the oldest
    matches.sort(key=lambda c: (normalize_email(c.get("first_name")) != first, int(c.get("id") or 0)))
    return matches[0]


def create_body(person: Person, defaults: ProfileDefaults) -> dict[str, Any]:
    names = {"first_name": person.first_name or "", "last_name": person.last_name or ""}
    body: dict[str, Any] = {
        "is_org": defaults.is_org if not person.org_name else True,
        "first_name": person.first_name or None,
        "last_name": person.last_name or person.org_name or person.email,
        "constituent_contact_type_name": defaults.constituent_contact_type_name,
        "email_addresses": [{"address": person.email.strip(), "email_type_name": "Home", "is_preferred": True}]
        if person.email else [],
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
        body["street_addresses"] = [{
            "street": street, "city": person.address.get("city"), "state": person.address.get("state"),
            "postal_code": person.address.get("postal_code"), "country": person.address.get("country"),
            "street_type_name": "Home", "is_preferred": True}]
    return body


def match_or_create(crm: CrmClient, conn: sqlite3.Connection, person: Person, defaults: ProfileDefaults,
                    *, use_link: bool = True) -> tuple[str, bool]:
    """The constituent id for ``person`` and whether it was created now."""
    if use_link:
        known = linked(conn, person.email)
        if known:
            return known, False
    # one person at a time: two jobs for a new donor must not both create her
    with store.named_lock(conn, [f"person:{person.key or person.last_name}"]):
        if use_link:
            known = linked(conn, person.email)
            if known:
                return known, False
        return _match_or_create(crm, conn, person, defaults)


def _match_or_create(crm: CrmClient, conn: sqlite3.Connection, person: Person,
                     defaults: ProfileDefaults) -> tuple[str, bool]:
    found = search(crm, person)
    created = False
    if found is None:
        try:
            found = crm.create_constituent(create_body(person, defaults))
            created = True
        except UncertainWrite:
            # the create may have happened: look before creating again
            found = search(crm, person)
            if found is None:
                found = crm.create_constituent(create_body(person, defaults))
                created = True
    constituent_id = str(found["id"])
    with store.transaction(conn):
        link(conn, person.email, constituent_id)
    return constituent_id, created


def is_gone(error: Exception) -> bool:
    """Whether a CRM error says the constituent no longer exists."""
    return isinstance(error, CrmPermanentError) and error.status == 404


def revalidate(crm: CrmClient, conn: sqlite3.Connection, constituent_id: str, email: str | None) -> bool:
    """Check a linked constituent still exists and still has ``email``; drop the link if not."""
    try:
        constituent = crm.get_constituent(constituent_id)
    except CrmPermanentError as exc:
        if not is_gone(exc):
            raise
        constituent = None
    if constituent is None or (email and normalize_email(email) not in emails_of(constituent)):
        with store.transaction(conn):
            unlink(conn, email)
        return False
    return True
