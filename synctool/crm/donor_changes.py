"""News about known donors: a contact point a matched donor's platform data carries and the CRM lacks.

A returning donor who moved gives with a new address; synctool matches her (rightly) and, by the policy
``donors.updates`` (``synctool settings donor-updates`` wins), records a proposed change for a person to
apply or dismiss (``review``, the default), adds it at once as a non-preferred contact point (``add``), or
drops it (``off``). Only e-mails, phones and addresses: names are never changed (a person may have
corrected one in the CRM). Comparing costs no CRM request (the mirror holds each constituent's contact
rows); applying costs one per contact point and updates the mirror. Each change is recorded before it is
applied, once per constituent, kind and value: with ``add``, a CRM error leaves it pending for a person (the
job retries for its gift, not for the contact point).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict, cast

from synctool import settings, store
from synctool.crm import mirror
from synctool.crm.client import CrmClient
from synctool.crm.constituents import Person
from synctool.crm.matching import street_key
from synctool.errors import InvalidInput, NotFound, RemoteError
from synctool.queue.unit import Unit

if TYPE_CHECKING:
    from synctool.config import Config

POLICIES = ("review", "add", "off")
#: the run-time setting that wins over ``donors.updates``
SETTING = "donor_updates"
#: a change's kind -> the CRM's contact list it is added to
LISTS = {"email": "email_addresses", "phone": "phone_numbers", "address": "street_addresses"}
STATUSES = ("pending", "applied", "dismissed")
#: a contact point a gift taught: ``{address}``, ``{number}`` or a street address's fields
ContactPoint = dict[str, str | None]


class ProposedChange(TypedDict):
    """A ``donor_changes`` row as the staff read it: its contact point in words."""

    id: int
    constituent_id: str
    kind: str
    value: str
    status: str
    source: str | None
    external_id: str | None
    job_id: str | None
    crm_row_id: str | None
    created_at: str
    decided_at: str | None


class Decided(ProposedChange):
    """A change as ``decide`` left it, and what happened to it."""

    result: str


def policy(conn: store.Connection, config: Config) -> str:
    return str(settings.get(conn, SETTING, config.donors.updates))


def _key(text: object) -> str:
    return " ".join(str(text or "").lower().replace(",", " ").replace(".", " ").split())


def news(conn: store.Connection, constituent_id: str, person: Person) -> list[tuple[str, ContactPoint, str]]:
    """The person's contact points the mirrored constituent lacks: (kind, CRM row, match key) each."""
    have = mirror.contacts(conn, constituent_id)
    found: list[tuple[str, ContactPoint, str]] = []
    email = mirror.normalize_email(person.email)
    if email and email not in {r["normalized"] for r in have["emails"]}:
        found.append(("email", {"address": person.email.strip() if person.email else email}, email))
    number = mirror.digits(person.phone)
    if len(number) >= 7 and not any(
        r["digits"].endswith(number[-10:]) or number.endswith(r["digits"][-10:]) for r in have["phones"] if r["digits"]
    ):
        found.append(("phone", {"number": person.phone}, number))
    street = person.address.get("street")
    if street:
        key = _key(f"{street} {person.address.get('postal_code') or person.address.get('city') or ''}")
        known = {_key(f"{r['street']} {r['postal_code'] or r['city'] or ''}") for r in have["addresses"]}
        # the same street spelled another way (St. / Street) is not news
        streets = {street_key(r["street"]) for r in have["addresses"]}
        if key not in known and street_key(street) not in streets:
            row = {k: person.address.get(k) for k in ("street", "city", "state", "postal_code", "country")}
            found.append(("address", row, key))
    return found


def record(
    crm: CrmClient,
    work: Unit,
    constituent_id: str,
    person: Person,
    *,
    how: str,
    source: str,
    external_id: str | None,
    job_id: str | None,
) -> list[str]:
    """Keep what this gift taught about its donor by the policy ``how``; what was kept, in words. The proposed changes
    gather in ``work`` (in a job: committed at its next point); with ``add``, each commits before its CRM write and its
    answer after it (``before contact point add``, ``after contact point add``)."""
    if how == "off":
        return []
    said = []
    for kind, row, key in news(work.conn, constituent_id, person):
        with work.gather() as conn:
            change_id = conn.execute(
                "INSERT INTO donor_changes (constituent_id, kind, value, match_key, status, source, external_id, job_id,"
                " created_at) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?)"
                " ON CONFLICT (constituent_id, kind, match_key) DO NOTHING RETURNING id",
                (str(constituent_id), kind, json.dumps(row), key, source, external_id, job_id, store.iso()),
            ).fetchone()
        if change_id is None:
            continue  # proposed (or decided) before
        if how == "add":
            _apply(crm, work, _get(work.conn, change_id[0]))
            said.append(f"new {kind} added to constituent {constituent_id}")
        else:
            said.append(f"new {kind} proposed for constituent {constituent_id} (synctool donors changes)")
    return said


def _get(conn: store.Connection, change_id: int) -> store.Row:
    row = conn.execute("SELECT * FROM donor_changes WHERE id = ?", (change_id,)).fetchone()
    if row is None:
        raise NotFound(f"no proposed change {change_id}", "synctool donors changes lists them")
    return row


def _body(kind: str, row: Mapping[str, object]) -> dict[str, object]:
    """The contact row as LGL takes it: not preferred, so the one the donor's record prefers stays so."""
    kind_field = {"email": "email_type_name", "phone": "phone_type_name", "address": "street_type_name"}[kind]
    return {**{k: v for k, v in row.items() if v not in (None, "")}, kind_field: "Home", "is_preferred": False}


def _apply(crm: CrmClient, work: Unit, change: store.Row) -> ProposedChange:
    row = json.loads(change["value"])
    work.commit("before contact point add")  # the proposed change, before the write that applies it
    created = crm.add_contact(change["constituent_id"], LISTS[change["kind"]], _body(change["kind"], row))
    with work.gather() as conn:
        mirror.add_contact(conn, change["constituent_id"], LISTS[change["kind"]], row)
        conn.execute(
            "UPDATE donor_changes SET status = 'applied', decided_at = ?, crm_row_id = ? WHERE id = ?",
            (store.iso(), str(created.get("id") or "") or None, change["id"]),
        )
    work.commit("after contact point add")
    return as_dict(_get(work.conn, change["id"]))


def as_dict(row: store.Row) -> ProposedChange:
    found = dict(row)
    value = json.loads(found.pop("value"))
    found.pop("match_key", None)
    found["value"] = ", ".join(str(v) for v in value.values() if v)
    return cast(ProposedChange, found)


def listing(conn: store.Connection, status: str | None = "pending", limit: int = 200) -> list[ProposedChange]:
    """The proposed changes (newest first), with the gift that brought each."""
    where, args = ("WHERE status = ?", [status]) if status else ("", [])
    rows = conn.execute(f"SELECT * FROM donor_changes {where} ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
    return [as_dict(r) for r in rows]


def pending_count(conn: store.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM donor_changes WHERE status = 'pending'").fetchone()[0])


def decide(crm: CrmClient | None, conn: store.Connection, ids: list[int], *, apply: bool) -> list[Decided]:
    """Apply (one CRM request each) or dismiss these pending changes; one result per id, in order. A change
    already decided is reported as it stands; a CRM error on one is reported and the others go on."""
    results: list[Decided] = []
    for change_id in ids:
        change = _get(conn, change_id)
        if change["status"] != "pending":
            results.append({**as_dict(change), "result": f"already {change['status']}"})
            continue
        if not apply:
            with store.atomic(conn):
                conn.execute(
                    "UPDATE donor_changes SET status = 'dismissed', decided_at = ? WHERE id = ?", (store.iso(), change_id)
                )
            results.append({**as_dict(_get(conn, change_id)), "result": "dismissed"})
            continue
        if crm is None:
            raise InvalidInput("applying a change needs the CRM client")
        try:
            results.append({**_apply(crm, Unit(conn), change), "result": "applied"})
        except RemoteError as exc:
            results.append({**as_dict(change), "result": f"error: {exc}"})
    return results


def pending_ids(conn: store.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM donor_changes WHERE status = 'pending' ORDER BY id")]
