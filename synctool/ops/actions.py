"""Staff actions: who did what, wherever it was taken (a retry, a resolve, an accepted difference, a donor change
applied, a user invited, a setting changed): through the staff page (``via`` ``page``), the admin API (``api``) or
the command line (``cli``: the OS user who ran the command, role ``cli``; ``console.action`` marks the commands
that change something), kept beside the sync log and shown with it (`synctool syncs actions`,
``GET /api/actions``, the staff page's sync log). An action that was refused is written too, with why, so a
forged or mistaken request leaves a trace."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import Field

from synctool import store
from synctool.validation import Query

MAX_LIMIT = 500


class ActionsQuery(Query):
    target: Optional[str] = None
    who: Optional[str] = None
    page: int = Field(1, ge=1)
    limit: int = Field(50, ge=1, le=MAX_LIMIT)


def record(
    conn: store.Connection,
    *,
    who: str,
    role: str | None,
    via: str,
    action: str,
    target: str | None = None,
    note: str | None = None,
    outcome: str = "done",
) -> None:
    """Write one action (inside the caller's transaction, or in one of its own)."""
    with store.atomic(conn):
        conn.execute(
            "INSERT INTO staff_actions (at, who, role, via, action, target, note, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (store.iso(), who, role, via, action, target, note, outcome),
        )


def list_actions(conn: store.Connection, query: ActionsQuery | None = None) -> dict[str, Any]:
    """Newest first; ``target`` (a sync record's id, an external id, a user's e-mail) and ``who`` (an e-mail, or
    the OS user of a command) filter."""
    query = query or ActionsQuery()
    where = store.Where()
    if query.target:
        where.add("target = ?", query.target)
    if query.who:
        where.add("who = ?", query.who.lower())
    total = conn.execute(f"SELECT count(*) FROM staff_actions {where}", where.params).fetchone()[0]
    rows = conn.execute(
        f"SELECT * FROM staff_actions {where} ORDER BY id DESC LIMIT ? OFFSET ?",
        (*where.params, query.limit, (query.page - 1) * query.limit),
    )
    return {
        "items": [dict(r) for r in rows],
        "total": total,
        "page": query.page,
        "limit": query.limit,
        "pages": (total + query.limit - 1) // query.limit,
    }
