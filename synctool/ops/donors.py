"""News about known donors (``crm.donor_changes``): list the proposed changes, apply or dismiss them."""

from __future__ import annotations

import sqlite3
from typing import Any, Literal, Optional

from pydantic import Field

from synctool.crm import donor_changes, environment
from synctool.errors import InvalidInput
from synctool.runtime import Runtime
from synctool.validation import Body, Query


class ChangesQuery(Query):
    """GET /api/donors/changes."""

    status: Optional[Literal["pending", "applied", "dismissed", "all"]] = "pending"
    limit: int = Field(200, ge=1, le=1000)


class DecideBody(Body):
    """POST /api/donors/changes/apply and /dismiss: the ids, or every pending change."""

    ids: list[int] = []
    all: bool = False


def changes(conn: sqlite3.Connection, query: ChangesQuery | None = None) -> dict[str, Any]:
    query = query or ChangesQuery()
    status = None if query.status == "all" else query.status
    items = donor_changes.listing(conn, status, query.limit)
    return {"items": items, "pending": donor_changes.pending_count(conn)}


def _ids(conn: sqlite3.Connection, body: DecideBody) -> list[int]:
    if body.all and body.ids:
        raise InvalidInput("give the ids or --all, not both")
    ids = donor_changes.pending_ids(conn) if body.all else body.ids
    if not ids and not body.all:
        raise InvalidInput("no change named", "give one or more ids (synctool donors changes lists them), or --all")
    return ids


def apply(conn: sqlite3.Connection, rt: Runtime, body: DecideBody) -> dict[str, Any]:
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


def dismiss(conn: sqlite3.Connection, body: DecideBody) -> dict[str, Any]:
    results = donor_changes.decide(None, conn, _ids(conn, body), apply=False)
    return {"results": results, "dismissed": sum(r["result"] == "dismissed" for r in results)}
