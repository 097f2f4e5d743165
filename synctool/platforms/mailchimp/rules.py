"""Mailing (Mailchimp) unsubscribes and bounces -> CRM tags, by tag rules for the event's list mapping.

No gift is created. The constituent is found by e-mail (the local link, else the CRM mirror: the merge
names with an exact e-mail filter, or the e-mail alone when the event carries no names, as ``cleaned``
events do). No match is logged as skipped, not failed; a duplicate event re-applies the
same tags harmlessly; while mailing sync is disabled nothing reaches the CRM.
"""

from __future__ import annotations

from synctool.platform import Event, Job, Outcome, PermanentError, Skip, constituents, mappings, mirror, settings
from synctool.platforms.mailchimp.settings import ENABLED
from synctool.platforms.mailchimp.webhook import AudienceEvent


def rules_for(conn, list_id: str, event: str) -> dict | None:
    return mappings.get(conn, "tag_rule", f"{list_id}:{event}") or mappings.get(conn, "tag_rule", f"*:{event}")


def find_constituent(job: Job, email: str, first: str | None, last: str | None) -> str | None:
    """The link, else the mirror (refreshed once in this run if needed): the name rule when the event
    has merge names, else the e-mail alone, as LGL's ``eaddr`` search would."""
    known = constituents.linked(job.conn, email)
    if known:
        return known
    person = constituents.Person(first, last, email)

    def look() -> dict | None:
        if first or last:
            return constituents.lookup(job.conn, person)
        return next(iter(mirror.with_email(job.conn, email)), None)

    found = look()
    if found is None:
        mirror.ensure_fresh(job.crm, job.unit, job.run_started, page_size=job.config.crm.mirror_page_size)
        found = look()
    if found is None:
        return None
    with job.unit.gather():
        constituents.link(job.conn, email, found["id"])
    return str(found["id"])


def apply_event(delivered: Event, job: Job) -> Outcome:
    event = job.row["entity_type"]
    if not settings.get(job.conn, ENABLED, True):
        raise Skip("mailing sync is disabled (synctool settings mailing-sync-enabled on)")
    if not isinstance(delivered.data, AudienceEvent):
        raise PermanentError("the job has no Mailchimp event (its delivery is gone)")
    event_data = delivered.data.data
    list_id = event_data.list_id or ""
    mapping = mappings.get(job.conn, "list_mapping", list_id)
    if not mapping or not mapping.get("enabled", True):
        raise Skip(f"list {list_id or '(none)'} is not mapped (synctool mailing mappings set {list_id or 'LIST_ID'})")
    rules = rules_for(job.conn, list_id, event)
    if not rules or not (rules.get("add") or rules.get("remove")):
        raise Skip(f"no tag rules for {event} on list {list_id}")
    email = event_data.email or job.row["entity_id"]
    constituent_id = find_constituent(job, email, event_data.merges.FNAME or None, event_data.merges.LNAME or None)
    if constituent_id is None:
        raise Skip(f"no CRM constituent has the e-mail {email}; nothing to tag")
    for keyword in rules.get("add") or []:
        job.crm.add_keyword(constituent_id, keyword)
    for keyword in rules.get("remove") or []:
        job.crm.remove_keyword(constituent_id, keyword)
    reason = event_data.reason or event_data.action or ""
    return Outcome(
        "succeeded",
        f"{event} ({reason}) on list {list_id}: added {rules.get('add') or []}, removed {rules.get('remove') or []}",
        crm_constituent_id=constituent_id,
    )
