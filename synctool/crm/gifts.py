"""Creating a gift exactly once for an external id (invariant 4).

The ``crm_writes`` ledger records the intent (``pending``) before the POST and the CRM's gift id
(``done``) after it. A ``done`` entry costs no request; a ``pending`` one means an earlier attempt's
outcome is unknown (a timeout, a crash), so the CRM is searched by external id before anything is
created. LGL's 422 "External Gift ID already exists" is handled the same way.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from synctool import store
from synctool.crm.client import CrmClient
from synctool.errors import RemoteError, UncertainWrite
from synctool.timeutil import parse_iso


def zone(name: str | None) -> ZoneInfo | None:
    """The IANA time zone ``name`` (``America/New_York``), or None when it is empty or unknown."""
    if not name:
        return None
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        return None


def gift_date(moment: str | None, *zones: str | None) -> str:
    """The calendar day of ``moment`` (ISO 8601 with an offset) where the money was given: the first known
    time zone of ``zones`` (the platform's, then the organisation's), else UTC. An evening gift in
    California on 31 December belongs to that year, not the next."""
    where = next((z for z in map(zone, zones) if z is not None), UTC)
    if not moment:
        return datetime.now(where).strftime("%Y-%m-%d")
    parsed = parse_iso(moment, assume_utc=False)
    if parsed is None:
        return str(moment)[:10]
    if parsed.tzinfo is None:  # a time without an offset is already local to the platform
        return parsed.strftime("%Y-%m-%d")
    return parsed.astimezone(where).strftime("%Y-%m-%d")


def recorded(conn: sqlite3.Connection, external_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM crm_writes WHERE key = ? AND kind = 'gift'", (external_id,)).fetchone()


def _mark(conn: sqlite3.Connection, external_id: str, state: str, crm_id: Any = None, job_id: str | None = None) -> None:
    with store.atomic(conn):
        conn.execute(
            "INSERT INTO crm_writes (key, kind, state, crm_id, job_id, updated_at) VALUES (?, 'gift', ?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET state = excluded.state, crm_id = coalesce(excluded.crm_id, crm_id),"
            " job_id = coalesce(excluded.job_id, job_id), updated_at = excluded.updated_at",
            (external_id, state, None if crm_id is None else str(crm_id), job_id, store.iso()),
        )


def find(crm: CrmClient, external_id: str) -> dict[str, Any] | None:
    for gift in crm.find_gifts_by_external_id(external_id):
        if str(gift.get("external_id")) == external_id:
            return gift
    return None


def create_once(
    crm: CrmClient,
    conn: sqlite3.Connection,
    constituent_id: str,
    body: dict[str, Any],
    *,
    job_id: str | None = None,
    force_lookup: bool = False,
) -> tuple[str, bool]:
    """The CRM gift id for ``body['external_id']`` and whether this call created it."""
    external_id = body["external_id"]
    entry = recorded(conn, external_id)
    if entry is not None and entry["state"] == "done" and not force_lookup:
        return entry["crm_id"], False
    if entry is not None or force_lookup:
        existing = find(crm, external_id)
        if existing is not None:
            _mark(conn, external_id, "done", existing["id"], job_id)
            return str(existing["id"]), False
    _mark(conn, external_id, "pending", job_id=job_id)
    for attempt in range(2):
        try:
            gift = crm.create_gift(constituent_id, body)
            break
        except UncertainWrite:
            existing = find(crm, external_id)
            if existing is not None:
                _mark(conn, external_id, "done", existing["id"], job_id)
                return str(existing["id"]), False
            if attempt == 1:
                raise  # still unknown: the job retries later and looks again first
        except RemoteError as exc:
            if exc.status == 422 and "already exists" in str(exc).lower():
                existing = find(crm, external_id)
                if existing is not None:
                    _mark(conn, external_id, "done", existing["id"], job_id)
                    return str(existing["id"]), False
            raise
    _mark(conn, external_id, "done", gift["id"], job_id)
    return str(gift["id"]), True


def for_person(ctx, person, body: dict[str, Any]) -> tuple[str, str, bool]:
    """Match or create the person's constituent, then create the gift once. A linked constituent the CRM
    no longer has (``constituents.is_gone``) is unlinked, dropped from the mirror, and the person matched
    again, once."""
    from synctool.crm import mirror
    from synctool.crm.constituents import is_gone, unlink
    from synctool.queue import jobs

    force = bool(ctx.job["force"])
    constituent_id, _ = ctx.match_or_create(person)
    try:
        gift_id, created = create_once(ctx.crm, ctx.conn, constituent_id, body, job_id=ctx.job["id"], force_lookup=force)
    except RemoteError as exc:
        if not is_gone(exc):
            raise
        with store.atomic(ctx.conn):
            unlink(ctx.conn, person.email)
            mirror.forget(ctx.conn, constituent_id)
        constituent_id, _ = ctx.match_or_create(person, use_link=False)
        gift_id, created = create_once(ctx.crm, ctx.conn, constituent_id, body, job_id=ctx.job["id"], force_lookup=True)
    with store.atomic(ctx.conn):
        jobs.record_crm_ids(ctx.conn, ctx.job["id"], constituent_id=constituent_id, gift_id=gift_id)
    return constituent_id, gift_id, created
