"""Donors back to the mailing list, as any money platform asks for it: after a gift, one ``mailing`` job per
mapped audience that opts in (``push_donors``), for a donor who gave e-mail consent. The job target
``mailing`` is declared by the mailing platform in use (``Platform.targets``), whose handler for
``audience_member`` jobs does the push (Mailchimp: ``platforms/mailchimp/audience.py``). Money platforms call
``queue_pushes``; none imports the mailing platform.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool import mappings
from synctool.crm.constituents import Person
from synctool.queue import jobs
from synctool.queue.unit import Unit

if TYPE_CHECKING:
    from synctool import store


def lists_to_push(conn: store.Connection) -> list[dict]:
    return [m for m in mappings.all_of(conn, "list_mapping") if m.get("enabled", True) and m.get("push_donors")]


def queue_pushes(work: Unit, person: Person, *, source: str, tags: list[str], consent: bool) -> list[str]:
    """The mailing jobs for a donor who just gave; none without consent, an e-mail or an opted-in list. In a job
    (``work`` is its unit) they commit at its end, with its row."""
    if not consent or not person.key:
        return []
    queued = []
    with work.gather() as conn:
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
