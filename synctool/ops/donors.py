"""Known donors: the news their gifts carried (``crm.donor_changes``: list, apply, dismiss), and the gifts held
because their donor may be a known constituent under a new e-mail (``crm.matching``: list, accept, new)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, Optional, TypedDict

from pydantic import Field, field_validator

from synctool.crm import donor_changes, environment, matching
from synctool.errors import InvalidInput
from synctool.runtime import Runtime
from synctool.validation import Body, Query

if TYPE_CHECKING:
    from synctool import store


class ChangesQuery(Query):
    """GET /api/donors/changes."""

    status: Optional[Literal["pending", "applied", "dismissed", "all"]] = "pending"
    limit: int = Field(200, ge=1, le=1000)


class DecideBody(Body):
    """POST /api/donors/changes/apply and /dismiss: the ids, or every pending change."""

    ids: list[int] = []
    all: bool = False


class Waiting(TypedDict):
    """What waits for a person's decision, and how many are pending."""

    items: Sequence[Mapping[str, object]]
    pending: int


class Applied(TypedDict):
    results: Sequence[donor_changes.Decided]
    applied: int


class Dismissed(TypedDict):
    results: Sequence[donor_changes.Decided]
    dismissed: int


class SettledMatch(TypedDict):
    match: int
    decision: str
    settled: list[int]
    jobs_queued: int
    next: str


def changes(conn: store.Connection, query: ChangesQuery | None = None) -> Waiting:
    query = query or ChangesQuery()
    status = None if query.status == "all" else query.status
    items = donor_changes.listing(conn, status, query.limit)
    return {"items": items, "pending": donor_changes.pending_count(conn)}


def _ids(conn: store.Connection, body: DecideBody) -> list[int]:
    if body.all and body.ids:
        raise InvalidInput("give the ids or --all, not both")
    ids = donor_changes.pending_ids(conn) if body.all else body.ids
    if not ids and not body.all:
        raise InvalidInput("no change named", "give one or more ids (synctool donors changes lists them), or --all")
    return ids


def apply(conn: store.Connection, rt: Runtime, body: DecideBody) -> Applied:
    """Add each change to its constituent as a non-preferred contact point: one CRM request each."""
    ids = _ids(conn, body)
    if not ids:
        return {"results": [], "applied": 0}
    client = environment.open_client(conn, rt)
    try:
        results = donor_changes.decide(client, conn, ids, apply=True)
    finally:
        client.close()
    return {"results": results, "applied": sum(r["result"] == "applied" for r in results)}


def dismiss(conn: store.Connection, body: DecideBody) -> Dismissed:
    results = donor_changes.decide(None, conn, _ids(conn, body), apply=False)
    return {"results": results, "dismissed": sum(r["result"] == "dismissed" for r in results)}


class MatchesQuery(Query):
    """GET /api/donors/matches."""

    status: Optional[Literal["pending", "accepted", "new", "all"]] = "pending"
    limit: int = Field(200, ge=1, le=1000)


class AcceptMatchBody(Body):
    """POST /api/donors/matches/:id/accept: the candidate the gift goes to (needed when there are several)."""

    constituent_id: Optional[str] = None

    @field_validator("constituent_id", mode="before")
    @classmethod
    def as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def matches(conn: store.Connection, query: MatchesQuery | None = None) -> Waiting:
    """The gifts held for a person's decision about their donor, each with its candidates and the evidence."""
    query = query or MatchesQuery()
    status = None if query.status == "all" else query.status
    return {"items": matching.listing(conn, status, query.limit), "pending": matching.pending_count(conn)}


def _settle(conn: store.Connection, match_id: int, *, constituent_id: str | None, new: bool, by: str) -> SettledMatch:
    from synctool.queue import jobs

    settled = matching.decide(conn, match_id, constituent_id=constituent_id, new=new, by=by)
    queued = jobs.release_held(conn, [m["job_id"] for m in settled])
    return {
        "match": match_id,
        "decision": "new constituent" if new else f"constituent {settled[0]['constituent_id']}",
        "settled": [m["id"] for m in settled],
        "jobs_queued": queued,
        "next": "the next drain writes each gift through the normal path",
    }


def accept_match(conn: store.Connection, match_id: int, body: AcceptMatchBody | None = None, *, by: str) -> SettledMatch:
    """The held gift goes to the chosen candidate (the only one, when there is one): its job is queued again
    and writes the gift once; the new e-mail becomes a proposed donor change (``donors.updates``). Every other
    gift held for the same e-mail is settled alike."""
    return _settle(conn, match_id, constituent_id=(body or AcceptMatchBody()).constituent_id, new=False, by=by)


def new_constituent(conn: store.Connection, match_id: int, *, by: str) -> SettledMatch:
    """The held gift's donor is someone new: its job is queued again and creates a constituent."""
    return _settle(conn, match_id, constituent_id=None, new=True, by=by)
