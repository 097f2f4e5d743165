"""The last reconcile, remembered, and the differences a person reviewed: ``reconcile accept`` records why a
difference is right, and later runs list it as ``accepted`` while it stays the same difference."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any, TypedDict, cast

from synctool import settings, store
from synctool.errors import InvalidInput, NotFound
from synctool.ops.reconcile.crm_side import rows_by_key
from synctool.ops.reconcile.items import SETTLED, Difference, ItemRow, kept
from synctool.validation import Body

LAST_RUN = "reconcile:last"


class AcceptDifferenceBody(Body):
    """POST /api/reconcile/accept (who is the signed-in user)."""

    external_id: str
    note: str


class Accepted(TypedDict):
    """A reviewed difference (a row of ``reconcile_accepted``)."""

    external_id: str
    status: str
    platform_amount: str | None
    crm_amount: str | None
    reason: str | None
    note: str
    accepted_by: str
    accepted_at: str


def last_run(conn: store.Connection) -> dict[str, Any] | None:
    """The last reconcile: when, its period and source, and its differences (``doctor``, the daily summary)."""
    return settings.get(conn, LAST_RUN)


def remember(
    conn: store.Connection, dates: tuple[date, date], source: str | None, result: dict[str, Any], items: list[ItemRow]
) -> None:
    """Keep this run as the last reconcile: its period, source, failures, counts and differences."""
    first, last = dates
    with store.atomic(conn):
        settings.put(
            conn,
            LAST_RUN,
            {"at": store.iso(), "from": str(first), "to": str(last), "source": source, "differences": result["differences"],
             "failed": result["failed"],
             "by_status": result["totals"]["by_status"],
             "items": [kept(r) for r in items if r["status"] not in SETTLED]},
        )  # fmt: skip


def accept(conn: store.Connection, external_id: str, note: str, by: str) -> Accepted:
    """Record that a person reviewed the last reconcile's difference on ``external_id`` (a test gift deleted on
    purpose, a gift edited by hand): later runs list it as ``accepted`` while it stays the same difference."""
    if not note.strip():
        raise InvalidInput("a note is required", "say why this difference is right (--note TEXT)")
    last = last_run(conn) or {}
    found = next((r for r in last.get("items") or [] if r["external_id"] == external_id), None)
    if found is None:
        raise NotFound(
            f"{external_id} is not among the last reconcile's differences"
            + (f" ({last['from']} .. {last['to']})" if last else " (no reconcile has run)"),
        )
    row: Accepted = {
        "external_id": external_id,
        "status": found["status"],
        "platform_amount": found["platform_amount"],
        "crm_amount": found["crm_amount"],
        "reason": found["reason"],
        "note": note.strip(),
        "accepted_by": by,
        "accepted_at": store.iso(),
    }
    with store.atomic(conn):
        store.put_row(
            conn, "reconcile_accepted", {"external_id": external_id}, {k: v for k, v in row.items() if k != "external_id"}
        )
    return row


def accepted(conn: store.Connection) -> dict[str, Any]:
    """Every reviewed difference, newest first."""
    rows = [dict(r) for r in conn.execute("SELECT * FROM reconcile_accepted ORDER BY accepted_at DESC")]
    return {"items": rows, "count": len(rows)}


def differences(conn: store.Connection) -> dict[str, Any]:
    """The last reconcile's differences as they stand now: each one a person reviewed since (and still the
    same difference) is ``accepted``, with who and why; ``open`` counts the others."""
    last = last_run(conn)
    if last is None:
        return {"ran": False, "items": [], "open": 0}
    items = cast("list[Difference]", [dict(r) for r in last.get("items") or []])
    mark_accepted(conn, items)
    return {
        "ran": True,
        **{k: last.get(k) for k in ("at", "from", "to", "source", "failed")},
        "items": items,
        "open": sum(1 for r in items if r["status"] not in SETTLED),
    }


def _fingerprint(row: Difference | store.Row) -> tuple[str, str | None, str | None]:
    """What makes a difference the same one again: its status and both amounts."""
    return (row["status"], row["platform_amount"], row["crm_amount"])


def mark_accepted(conn: store.Connection, items: Sequence[Difference]) -> None:
    """A difference a person accepted, still exactly as accepted, is ``accepted``, not a difference."""
    differing = [r for r in items if r["status"] not in SETTLED]
    found = rows_by_key(conn, "SELECT * FROM reconcile_accepted", "external_id", (r["external_id"] for r in differing))
    for r in differing:
        reviewed = found.get(r["external_id"])
        if reviewed is not None and _fingerprint(reviewed) == _fingerprint(r):
            r["status"] = "accepted"
            r["reason"] = (
                f"{reviewed['status']} accepted by {reviewed['accepted_by']} on {reviewed['accepted_at'][:10]}: "
                f"{reviewed['note']}"
            )
