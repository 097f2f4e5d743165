"""A portal family link becomes a CRM relationship between the two members' constituents (spec: portal-sync.md,
rule 7)."""

from __future__ import annotations

from typing import Any

from synctool.platform import Event, Job, Outcome, Skip, mappings
from synctool.platforms.portal import records as portal_records
from synctool.platforms.portal.users import constituent_for, user_locked, user_of

#: sharing flags sent on every family relationship (the spec leaves their values open)
SHARING = {"share_address": 1, "share_phone": 1, "auto_soft_credit": False, "also_acknowledge": False}


@user_locked(user_of("family_link", "primary_user_id", "member_user_id"))
def relationship(event: Event, job: Job) -> Outcome:
    link = portal_records.get(job.conn, "family_link", job.row["entity_id"])
    if link.get("crm_relationship_id"):
        raise Skip(f"family link {link['id']} is already CRM relationship {link['crm_relationship_id']}")
    primary = constituent_for(job, link["primary_user_id"])
    member = constituent_for(job, link["member_user_id"])
    default = mappings.get(job.conn, "portal_relationship_type", "default") or {}
    type_id = link.get("crm_relationship_type_id") or default.get("id")
    body: dict[str, Any] = {"related_constituent_id": int(member), **SHARING}
    if type_id:
        body["relationship_type_id"] = int(type_id)
    else:
        body["name"] = "Family"  # the deprecated name-based path: LGL resolves the type by name
    created = job.crm.create_relationship(primary, body)
    with job.unit.gather() as conn:
        portal_records.set_link(conn, "family_link", link["id"], crm_relationship_id=str(created["id"]))
    return Outcome(
        "succeeded",
        f"CRM relationship {created['id']} ({'type ' + str(type_id) if type_id else 'by name'})",
        crm_constituent_id=primary,
        crm_ids={"relationship_id": str(created["id"])},
    )
