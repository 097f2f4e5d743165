"""The local mirror of the CRM's constituents: what matching reads, so a known donor costs no request.

The CRM allows 300 requests in any 5 minutes for the whole account, and a name search per gift would
spend one of them on every gift. Instead synctool keeps the constituents' names, e-mails, phones and
street addresses in ``crm_constituents`` (+ ``crm_constituent_emails``/``_phones``/``_addresses``):

- **First load:** ``GET /constituents/search?q[]=updated_from=1970-01-01T00:00:00Z`` with the contacts
  expanded, sorted by ``date_updated``, in pages of ``crm.mirror_page_size`` (one request per page).
- **Incremental refresh:** the same search from the watermark (the newest ``updated_at`` seen, on the
  CRM's clock) less ``OVERLAP``, because the clause is inclusive and a change committed late may carry an
  earlier time. Upserts only; lists and searches show *active* constituents, so a deleted one leaves the
  mirror when the CRM says it is gone (a 404 on a gift) or at the next ``--full`` rebuild.
- **Write-through:** a constituent synctool creates, updates or re-reads goes into the mirror at once.

Freshness rule (no duplicate donors from a stale mirror): before a create, the mirror must have been
refreshed at or after the start of the current run (a drain run, or one operator command). ``ensure_fresh``
refreshes incrementally at most once per run, under a lock shared by every process, and only when a job
needed it: a person not found locally.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from synctool import store
from synctool.crm.client import CrmClient
from synctool.crm.types import CrmId, JsonObject, MirrorRefresh, MirrorStatus
from synctool.queue.unit import Unit
from synctool.timeutil import age_s, parse_iso

EPOCH = "1970-01-01T00:00:00Z"
OVERLAP = timedelta(seconds=60)
WATERMARK_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
CONTACT_LISTS = ("email_addresses", "phone_numbers", "street_addresses")
NAME_FIELDS = ("first_name", "middle_name", "last_name", "nick_name", "maiden_name", "org_name")
LOCK = "crm_mirror"


def normalize_email(email: str | None) -> str:
    return (email or "").strip().lower()


def digits(number: object) -> str:
    return "".join(ch for ch in str(number or "") if ch.isdigit())


# -- writing ---------------------------------------------------------------------------------------


def put(conn: store.Connection, record: JsonObject) -> None:
    """Upsert one constituent as the CRM returned it. Contact lists missing from ``record`` are kept as
    they were; a list that is present replaces the mirrored one. Call inside a transaction."""
    cid = int(record["id"])
    columns = {name: record.get(name) for name in NAME_FIELDS}
    columns.update(
        is_org=int(bool(record.get("is_org"))),
        created_at=record.get("created_at"),
        updated_at=record.get("updated_at"),
        mirrored_at=store.iso(),
        external_constituent_id=None
        if record.get("external_constituent_id") in (None, "")
        else str(record["external_constituent_id"]),
    )
    names = ", ".join(columns)
    updates = ", ".join(f"{name} = excluded.{name}" for name in columns)
    conn.execute(
        f"INSERT INTO crm_constituents (id, {names}) VALUES (?, {', '.join('?' * len(columns))})"
        f" ON CONFLICT (id) DO UPDATE SET {updates}",
        (cid, *columns.values()),
    )
    if "email_addresses" in record:
        conn.execute("DELETE FROM crm_constituent_emails WHERE constituent_id = ?", (cid,))
        conn.executemany(
            "INSERT INTO crm_constituent_emails (constituent_id, address, normalized) VALUES (?, ?, ?)",
            [(cid, r["address"], normalize_email(r["address"])) for r in record["email_addresses"] or [] if r.get("address")],
        )
    if "phone_numbers" in record:
        conn.execute("DELETE FROM crm_constituent_phones WHERE constituent_id = ?", (cid,))
        conn.executemany(
            "INSERT INTO crm_constituent_phones (constituent_id, number, digits) VALUES (?, ?, ?)",
            [(cid, r["number"], digits(r["number"])) for r in record["phone_numbers"] or [] if r.get("number")],
        )
    if "street_addresses" in record:
        conn.execute("DELETE FROM crm_constituent_addresses WHERE constituent_id = ?", (cid,))
        conn.executemany(
            "INSERT INTO crm_constituent_addresses (constituent_id, street, city, state, postal_code,"
            " country) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (cid, r.get("street"), r.get("city"), r.get("state"), r.get("postal_code"), r.get("country"))
                for r in record["street_addresses"] or []
            ],
        )


def add_contact(conn: store.Connection, constituent_id: CrmId, kind: str, row: JsonObject) -> None:
    """Mirror one contact row synctool just added to a constituent (``email_addresses``, ...). Call inside a
    transaction."""
    cid = int(constituent_id)
    if kind == "email_addresses":
        conn.execute(
            "INSERT INTO crm_constituent_emails (constituent_id, address, normalized) VALUES (?, ?, ?)",
            (cid, row["address"], normalize_email(row["address"])),
        )
    elif kind == "phone_numbers":
        conn.execute(
            "INSERT INTO crm_constituent_phones (constituent_id, number, digits) VALUES (?, ?, ?)",
            (cid, row["number"], digits(row["number"])),
        )
    else:
        conn.execute(
            "INSERT INTO crm_constituent_addresses (constituent_id, street, city, state, postal_code, country)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (cid, row.get("street"), row.get("city"), row.get("state"), row.get("postal_code"), row.get("country")),
        )


def contacts(conn: store.Connection, constituent_id: CrmId) -> dict[str, list[dict[str, Any]]]:
    """A mirrored constituent's contact rows: e-mails (normalised), phones (digits) and addresses."""
    cid = int(constituent_id)
    return {
        "emails": [dict(r) for r in conn.execute("SELECT * FROM crm_constituent_emails WHERE constituent_id = ?", (cid,))],
        "phones": [dict(r) for r in conn.execute("SELECT * FROM crm_constituent_phones WHERE constituent_id = ?", (cid,))],
        "addresses": [dict(r) for r in conn.execute("SELECT * FROM crm_constituent_addresses WHERE constituent_id = ?", (cid,))],
    }


def forget(conn: store.Connection, constituent_id: CrmId) -> None:
    """Drop a constituent the CRM no longer has. Call inside a transaction."""
    conn.execute("DELETE FROM crm_constituents WHERE id = ?", (int(constituent_id),))


def refresh(crm: CrmClient, work: Unit, *, full: bool = False, page_size: int = 250) -> MirrorRefresh:
    """Load what changed in the CRM since the watermark (everything when ``full`` or never loaded), in ``work`` (a
    job's unit, or an unbound ``Unit(conn)`` for an operator's command)."""
    with work.lock([LOCK]):
        return _load(crm, work, full=full, page_size=page_size)


def _load(crm: CrmClient, work: Unit, *, full: bool, page_size: int) -> MirrorRefresh:
    conn = work.conn
    started_iso = store.iso()
    started = time.monotonic()
    watermark = _state(conn, "watermark")
    full = full or not watermark
    since = EPOCH
    parsed = parse_iso(watermark) if watermark else None
    if not full and parsed is not None:
        since = (parsed - OVERLAP).strftime(WATERMARK_FORMAT)
    newest = parse_iso(watermark) if not full else None
    requests = rows = 0
    # in a job: the lock first; then each page but the last commits as the next page is asked for (the client
    # commits what is gathered before it sends), the last with what the job does next
    work.commit("before mirror refresh")
    for items in crm.constituents_updated_since(since, page_size=page_size):
        requests += 1
        with work.gather():
            for record in items:
                put(conn, record)
                moment = parse_iso(record.get("updated_at"))
                if moment is not None and (newest is None or moment > newest):
                    newest = moment
        rows += len(items)
    with work.gather():  # with the last page, at the job's next point
        if full:  # whatever the full load did not see is no longer an active constituent
            conn.execute("DELETE FROM crm_constituents WHERE mirrored_at < ?", (started_iso,))
        conn.execute(
            "UPDATE crm_mirror_state SET watermark = ?, refreshed_at = ?, last_kind = ?, last_requests = ?,"
            " last_rows = ?, last_seconds = ?, full_loaded_at = CASE WHEN ? = 1 THEN ? ELSE full_loaded_at END"
            " WHERE id = 1",
            (
                newest.strftime(WATERMARK_FORMAT) if newest else EPOCH,
                started_iso,
                "full" if full else "incremental",
                requests,
                rows,
                round(time.monotonic() - started, 3),
                int(full),
                started_iso,
            ),
        )
    return {"kind": "full" if full else "incremental", "since": since, "requests": requests, "rows": rows}


def ensure_fresh(crm: CrmClient, work: Unit, since: str, *, page_size: int = 250) -> MirrorRefresh | None:
    """Refresh incrementally unless a refresh started at or after ``since`` (an ``iso`` time: the start
    of this run). Returns what the refresh did, or None when the mirror was fresh enough."""
    if (_state(work.conn, "refreshed_at") or "") >= since:
        return None
    with work.lock([LOCK]):
        if (_state(work.conn, "refreshed_at") or "") >= since:  # another worker refreshed while we waited
            return None
        return _load(crm, work, full=False, page_size=page_size)


# -- reading ---------------------------------------------------------------------------------------


def _state(conn: store.Connection, column: str) -> str | None:
    return conn.execute(f"SELECT {column} FROM crm_mirror_state WHERE id = 1").fetchone()[0]


def status(conn: store.Connection) -> MirrorStatus:
    """What the operator sees (`crm mirror`, `crm budget`, `doctor`): rows, watermark, age, last refresh."""
    row = conn.execute("SELECT * FROM crm_mirror_state WHERE id = 1").fetchone()
    age = age_s(row["refreshed_at"])
    return {
        "constituents": conn.execute("SELECT count(*) FROM crm_constituents").fetchone()[0],
        "emails": conn.execute("SELECT count(*) FROM crm_constituent_emails").fetchone()[0],
        "watermark": row["watermark"],
        "refreshed_at": row["refreshed_at"],
        "age_s": None if age is None else round(age, 1),
        "full_loaded_at": row["full_loaded_at"],
        "last_refresh": {
            "kind": row["last_kind"],
            "requests": row["last_requests"],
            "rows": row["last_rows"],
            "seconds": row["last_seconds"],
        },
    }


def _records(conn: store.Connection, ids: list[int]) -> list[JsonObject]:
    """Mirrored constituents in the shape LGL answers one (its name fields, contact lists), so matching reads
    either alike."""
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    records = {
        r["id"]: {**dict(r), "email_addresses": [], "phone_numbers": [], "street_addresses": []}
        for r in conn.execute(f"SELECT * FROM crm_constituents WHERE id IN ({marks}) ORDER BY id", ids)
    }
    for r in conn.execute(f"SELECT constituent_id, address FROM crm_constituent_emails WHERE constituent_id IN ({marks})", ids):
        records[r[0]]["email_addresses"].append({"address": r[1]})
    for r in conn.execute(f"SELECT constituent_id, number FROM crm_constituent_phones WHERE constituent_id IN ({marks})", ids):
        records[r[0]]["phone_numbers"].append({"number": r[1]})
    for r in conn.execute(f"SELECT * FROM crm_constituent_addresses WHERE constituent_id IN ({marks})", ids):
        records[r["constituent_id"]]["street_addresses"].append(
            {k: r[k] for k in ("street", "city", "state", "postal_code", "country")}
        )
    return list(records.values())


def with_email(conn: store.Connection, email: str | None) -> list[JsonObject]:
    """Mirrored constituents that have ``email`` (normalised, exact), with their contacts."""
    key = normalize_email(email)
    if not key:
        return []
    ids = [r[0] for r in conn.execute("SELECT DISTINCT constituent_id FROM crm_constituent_emails WHERE normalized = ?", (key,))]
    return _records(conn, ids)


def has_name(record: JsonObject, name: str) -> bool:
    """LGL's ``name`` search term: any name field contains the text, ignoring case."""
    needle = name.strip().lower()
    return bool(needle) and any(needle in str(record.get(f) or "").lower() for f in NAME_FIELDS)


def find(conn: store.Connection, text: str, *, limit: int = 50) -> list[JsonObject]:
    """Operator search: by e-mail (contains), phone digits (contains, 4 or more), or any name field."""
    needle = text.strip().lower()
    if not needle:
        return []
    like = f"%{needle}%"
    queries = [
        ("SELECT constituent_id FROM crm_constituent_emails WHERE normalized LIKE ?", like),
        (
            "SELECT id FROM crm_constituents WHERE " + " OR ".join(f"lower({f}) LIKE ?" for f in NAME_FIELDS),
            (like,) * len(NAME_FIELDS),
        ),
    ]
    if len(digits(needle)) >= 4:
        queries.append(("SELECT constituent_id FROM crm_constituent_phones WHERE digits LIKE ?", f"%{digits(needle)}%"))
    ids: set[int] = set()
    for sql, params in queries:
        ids.update(r[0] for r in conn.execute(sql, params if isinstance(params, tuple) else (params,)))
    return _records(conn, sorted(ids)[:limit])
