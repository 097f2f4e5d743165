"""Monthly donors (issue 53): what synctool wrote to the CRM for recurring plans. LGL's group memberships and
contact reports carry no external id, so these two ledgers are what makes each write happen once
(``crm.group_memberships``, ``crm.contact_reports``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlite_utils import Database


def m019_plan_crm_ledgers(db: Database) -> None:
    """``crm_group_memberships``: one row per (constituent, group) synctool put in a group, its LGL id once known
    and its state (pending | unconfirmed | current | ending | ended); ``crm_contact_reports``: one row per contact
    report a caller's key asked for (pending | unconfirmed | done), with the body sent."""
    db.table("crm_group_memberships").create(
        {"constituent_id": str, "group_id": int, "crm_membership_id": int, "date_start": str, "date_end": str,
         "state": str, "job_id": str, "error": str, "updated_at": str},
        pk=("constituent_id", "group_id"),
        not_null={"constituent_id", "group_id", "date_start", "state", "updated_at"},
    )  # fmt: skip
    db.table("crm_group_memberships").create_index(["group_id", "state"])
    db.table("crm_contact_reports").create(
        {"key": str, "constituent_id": str, "crm_report_id": int, "state": str, "body": str, "job_id": str,
         "error": str, "created_at": str, "written_at": str},
        pk="key",
        not_null={"key", "constituent_id", "state", "body", "created_at"},
    )  # fmt: skip
    db.table("crm_contact_reports").create_index(["constituent_id"])
