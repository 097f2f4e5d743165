"""Donors back to the mailing list: a donor from donations or POS who gave e-mail consent is added to (or
updated on) every mapped Mailchimp audience whose list mapping opts in (``push_donors``), tagged with
where the money came from.

After a gift job succeeds, one ``mailing`` job per opted-in list is queued (an identical job still waiting is
reused); drain runs it: ``PUT /lists/{id}/members/{hash}`` (Mailchimp's upsert: a new member is subscribed,
an existing one keeps their status, so an unsubscribe is never undone) and ``POST .../tags``. Both are
idempotent, so a retry or a repeat gift changes nothing twice. Each push is a row of the sync log. Mailchimp
allows 10 connections at once; drain runs at most 3 jobs at once.

Consent: Givebutter's ``communication_opt_in: true``. Square has no opt-in; a customer whose
``preferences.email_unsubscribed`` is explicitly ``false`` counts, as Square's own marketing e-mails do.
"""

from __future__ import annotations

import sqlite3

from synctool import mappings, store
from synctool.crm.constituents import Person
from synctool.errors import Skip
from synctool.platforms.context import Job
from synctool.platforms.webhook import Event
from synctool.queue import jobs
from synctool.queue.handlers import ANY_SOURCE, handler
from synctool.queue.jobs import Outcome


def lists_to_push(conn: sqlite3.Connection) -> list[dict]:
    return [m for m in mappings.all_of(conn, "list_mapping") if m.get("enabled", True) and m.get("push_donors")]


def queue_pushes(conn: sqlite3.Connection, person: Person, *, source: str, tags: list[str], consent: bool) -> list[str]:
    """The mailing jobs for a donor who just gave; none without consent, an e-mail or an opted-in list."""
    if not consent or not person.key:
        return []
    queued = []
    with store.atomic(conn):
        for mapping in lists_to_push(conn):
            queued.append(
                jobs.enqueue_unless_waiting(
                    conn,
                    source=source,
                    target="mailing",
                    entity_type="audience_member",
                    entity_id=f"{mapping['key']}:{person.key}",
                    email=person.email,
                    name=" ".join(p for p in (person.first_name, person.last_name) if p) or None,
                    payload={
                        "list_id": mapping["key"],
                        "email": (person.email or "").strip(),
                        "first_name": person.first_name,
                        "last_name": person.last_name,
                        "tags": [t for t in tags if t],
                    },
                )
            )
    return queued


@handler(ANY_SOURCE, "audience_member")
def push(event: Event, ctx: Job) -> Outcome:
    data = event.payload
    mapping = mappings.get(ctx.conn, "list_mapping", data["list_id"])
    if not mapping or not mapping.get("enabled", True) or not mapping.get("push_donors"):
        raise Skip(
            f"list {data['list_id']} no longer takes donors (synctool mailing mappings set {data['list_id']} --push-donors)"
        )
    merge = {k: v for k, v in (("FNAME", data.get("first_name")), ("LNAME", data.get("last_name"))) if v}
    member = ctx.client("mailing").upsert_member(data["list_id"], data["email"], merge)
    if data.get("tags"):
        ctx.client("mailing").tag_member(data["list_id"], data["email"], data["tags"])
    return Outcome(
        "succeeded",
        f"{data['email']} on list {mapping.get('label') or data['list_id']} "
        f"({member.get('status', 'subscribed')}), tags {', '.join(data.get('tags') or []) or 'none'}",
    )
