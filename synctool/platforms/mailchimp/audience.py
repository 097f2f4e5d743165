"""Donors back to the mailing list: a donor from donations or POS who gave e-mail consent is added to (or
updated on) every mapped Mailchimp audience whose list mapping opts in (``push_donors``), tagged with
where the money came from.

After a gift job succeeds, one ``mailing`` job per opted-in list is queued (``platforms/mailing_list.py``; an
identical job still waiting is reused); drain runs it: ``PUT /lists/{id}/members/{hash}`` (Mailchimp's upsert: a new member is subscribed,
an existing one keeps their status, so an unsubscribe is never undone) and ``POST .../tags``. Both are
idempotent, so a retry or a repeat gift changes nothing twice. Each push is a row of the sync log. Mailchimp
allows 10 connections at once; drain runs at most 3 jobs at once.

Consent: Givebutter's ``communication_opt_in: true``. Square has no opt-in; a customer whose
``preferences.email_unsubscribed`` is explicitly ``false`` counts, as Square's own marketing e-mails do.
"""

from __future__ import annotations

from synctool.platform import Event, Job, Outcome, Skip, mappings
from synctool.platforms.mailchimp.client import MailingClient


def push(event: Event, job: Job) -> Outcome:
    data = event.payload
    mapping = mappings.get(job.conn, "list_mapping", data["list_id"])
    if not mapping or not mapping.get("enabled", True) or not mapping.get("push_donors"):
        raise Skip(
            f"list {data['list_id']} no longer takes donors (synctool mailing mappings set {data['list_id']} --push-donors)"
        )
    merge = {k: v for k, v in (("FNAME", data.get("first_name")), ("LNAME", data.get("last_name"))) if v}
    client = job.client("mailing", MailingClient)
    member = client.upsert_member(data["list_id"], data["email"], merge)
    if data.get("tags"):
        client.tag_member(data["list_id"], data["email"], data["tags"])
    return Outcome(
        "succeeded",
        f"{data['email']} on list {mapping.get('label') or data['list_id']} "
        f"({member.get('status', 'subscribed')}), tags {', '.join(data.get('tags') or []) or 'none'}",
    )
