"""A portal user becomes a CRM constituent (spec: portal-sync.md, rules 1 and 2), and the lock every CRM handler
of a member holds."""

from __future__ import annotations

from typing import Any

from synctool.platform import Event, Job, Outcome, PermanentError, PostalAddress, constituents, mirror
from synctool.platforms.portal import records as portal_records


#: a portal user's billing address (``portal/tables.py``), read as every platform's address is
class BillingAddress(PostalAddress):
    model_config = PostalAddress.named(
        line_1="billing_address_1",
        line_2="billing_address_2",
        city="billing_city",
        state="billing_state",
        postal_code="billing_postcode",
        country="billing_country",
    )


def user_person(user: dict[str, Any]) -> constituents.Person:
    return constituents.Person(
        user.get("first_name"),
        user.get("last_name"),
        user["email"],
        phone=user.get("phone"),
        external_id=user["id"],
        address=BillingAddress.model_validate(user).person_address(),
    )


def sync_user(job: Job, user_id: str) -> str:
    """Rule 1 and 2: re-validate the link against the CRM e-mails; else match or create; then contacts."""
    user = portal_records.get(job.conn, "user", user_id)
    person = user_person(user)
    crm = job.crm
    linked = user.get("crm_constituent_id")
    if linked and constituents.revalidate(crm, job.unit, linked, user["email"]):
        body = {
            "first_name": person.first_name,
            "last_name": person.last_name or person.email,
            "external_constituent_id": user["id"],
        }
        updated = crm.update_constituent(linked, body)
        contacts = {"email_addresses": [{"address": user["email"], "email_type_name": "Home"}]}
        if person.phone:
            contacts["phone_numbers"] = [{"number": person.phone, "phone_type_name": "Home"}]
        if person.address.get("street"):
            contacts["street_addresses"] = [{**{k: v for k, v in person.address.items() if v}, "street_type_name": "Home"}]
        for kind, rows in contacts.items():
            crm.replace_contacts(linked, kind, rows)
        with job.unit.gather():
            mirror.put(job.conn, {**updated, "id": linked, **contacts})
        constituent_id = linked
    else:
        with job.unit.gather():
            constituents.unlink(job.conn, user["email"])
        constituent_id, _ = job.match_or_create(person, use_link=False)
    with job.unit.gather() as conn:
        portal_records.set_link(conn, "user", user_id, crm_constituent_id=constituent_id)
    return constituent_id


def constituent_for(job: Job, user_id: str) -> str:
    """The user's constituent, running the user sync first when there is none (rules 3, 4, 7)."""
    user = portal_records.find(job.conn, "user", user_id)
    if user is None:
        raise PermanentError(f"portal user {user_id} is unknown to synctool (push or import it first)")
    return user["crm_constituent_id"] or sync_user(job, user_id)


def user_locked(*user_ids_of):
    """Run a CRM handler while holding the lock of every portal user it touches, so two jobs for one
    member (a user sync and a payment, two memberships) never run side by side."""

    def wrap(fn):
        def handler_(event: Event, job: Job) -> Outcome:
            users = [u for get in user_ids_of for u in get(job) if u]
            with job.unit.lock([f"portal_user:{u}" for u in users]):
                return fn(event, job)

        handler_.__name__ = fn.__name__
        handler_.__doc__ = fn.__doc__
        return handler_

    return wrap


def user_of(kind: str, *fields: str):
    def get(job: Job) -> list[str | None]:
        record = portal_records.find(job.conn, kind, job.row["entity_id"]) or {}
        return [record.get(f) for f in fields]

    return get


@user_locked(lambda job: [job.row["entity_id"]])
def user(event: Event, job: Job) -> Outcome:
    constituent_id = sync_user(job, job.row["entity_id"])
    return Outcome("succeeded", f"user linked to constituent {constituent_id}", crm_constituent_id=constituent_id)
