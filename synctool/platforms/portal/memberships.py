"""A portal membership becomes a CRM membership (spec: portal-sync.md, rule 3): the one it overlaps ended by
their dates, and a scholarship's group joined."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from synctool.platform import Event, Job, Outcome, PermanentError, gifts, mappings
from synctool.platforms.portal import records as portal_records
from synctool.platforms.portal.users import constituent_for, user_locked, user_of


def level_for(job: Job, membership: dict[str, Any]) -> int:
    for key in (membership.get("product_id"), membership.get("level"), "*"):
        if key:
            mapped = mappings.get(job.conn, "portal_level", str(key))
            if mapped:
                return int(mapped["membership_level_id"])
    raise PermanentError(
        f"no membership level mapping for product {membership.get('product_id')!r} or level "
        f"{membership.get('level')!r}, and no global default (synctool portal mappings levels set)"
    )


def finish_before(start: str, existing_start: str | None) -> str:
    """The day before the new membership starts, but never before the old one started (start-date-safe)."""
    finish = date.fromisoformat(start[:10]) - timedelta(days=1)
    if existing_start:
        finish = max(finish, date.fromisoformat(existing_start[:10]))
    return finish.isoformat()


def overlaps(current: dict[str, Any], start: str) -> bool:
    """Whether a CRM membership still runs on the day a new one starts (no finish date: it runs on). Decided by
    the two memberships' own dates, never by today's: a renewal synced late ends the old one the same way."""
    finish = str(current.get("finish_date") or "")[:10]
    return not finish or finish >= start[:10]


def local_today(job: Job) -> str:
    """Today in the organisation's time zone (``timezone:``; UTC when unset), from the runtime's clock."""
    zone = gifts.zone(job.config.timezone)
    now = job.rt.clock()
    return (now.astimezone(zone) if zone else now).date().isoformat()


@user_locked(user_of("membership", "user_id"))
def membership(event: Event, job: Job) -> Outcome:
    record = portal_records.get(job.conn, "membership", job.row["entity_id"])
    constituent_id = constituent_for(job, record["user_id"])
    crm = job.crm
    level_id = level_for(job, record)
    body = {
        "membership_level_id": level_id,
        "date_start": str(record.get("start_date") or local_today(job))[:10],
        "finish_date": record.get("renewal_date"),
        "note": f"portal membership {record['id']} ({record.get('level') or record.get('product_id') or 'level'}), "
        f"status {record.get('status')}, synced by synctool",
    }
    ended = 0
    if record.get("crm_membership_id"):
        crm.update_membership(record["crm_membership_id"], body)
        membership_id = record["crm_membership_id"]
    else:
        for current in crm.list_memberships(constituent_id):
            if not overlaps(current, str(body["date_start"])):
                continue  # over before the new one starts
            crm.update_membership(
                current["id"],
                {"finish_date": finish_before(str(body["date_start"]), str(current.get("date_start") or "") or None)},
            )
            ended += 1
        membership_id = str(crm.create_membership(constituent_id, body)["id"])
        with job.unit.gather() as conn:
            portal_records.set_link(conn, "membership", record["id"], crm_membership_id=membership_id)
    group = {"full": job.config.crm.scholarship_group_full, "partial": job.config.crm.scholarship_group_partial}.get(
        record.get("subsidy_tier") or ""
    )
    if record.get("subsidy_tier") in ("full", "partial"):
        if not group:
            raise PermanentError(
                f"{record['subsidy_tier']} scholarship membership, but "
                f"CRM_GROUP_ID_SCHOLARSHIP_{record['subsidy_tier'].upper()} is not set"
            )
        in_group = any(str(g.get("group_id")) == str(group) for g in crm.list_group_memberships(constituent_id))
        if not in_group:
            crm.add_to_group(
                constituent_id,
                {
                    "group_id": int(group),
                    "date_start": body["date_start"],
                    "date_end": record.get("renewal_date"),
                    "is_current": True,
                },
            )
    return Outcome(
        "succeeded",
        f"CRM membership {membership_id}" + (f"; ended {ended} current" if ended else ""),
        crm_constituent_id=constituent_id,
        crm_ids={"membership_id": membership_id},
    )
