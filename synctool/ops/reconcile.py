"""`synctool reconcile`: prove that every platform dollar of a period is in the CRM, exactly once, at the
right amount (invariant 9: it reads; ``--fix`` only queues jobs that take the normal path).

The platforms list their money (``platforms/<p>/reconcile.py``); the CRM's gifts of the period come from
``GET /gifts/search`` with ``date_from`` / ``date_to``, at the largest page synctool asks for (250), so a
month of 2,000 gifts costs 8 requests. Both sides meet on the external id. Each platform item gets one
status: ``matched``, ``missing`` (with the sync log's reason), ``amount_differs``, ``date_differs`` or
``refund_not_applied``; a CRM gift with synctool's external id that no platform item explains is
``extra``. Gifts made by other tools (no synctool external id) are counted apart.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Optional

from pydantic import Field

from synctool import platforms, settings, store
from synctool.crm import currency, soft_credits
from synctool.crm import environment as crm_environment
from synctool.crm.client import search_params
from synctool.errors import InvalidInput, NotFound
from synctool.money import dollars
from synctool.ops import exports
from synctool.ops.each import each, requests_by_source, words
from synctool.platforms.reconcile import Expected
from synctool.queue import jobs, log
from synctool.runtime import Runtime
from synctool.timeutil import parse_duration
from synctool.validation import Body, Query

STATUSES = ("missing", "held", "refund_not_applied", "amount_differs", "date_differs", "extra", "accepted", "matched")
#: statuses that are not a difference
SETTLED = ("matched", "accepted")
PAGE = 250
LAST_RUN = "reconcile:last"


def period(start: str | None, end: str | None, today: date | None = None) -> tuple[date, date]:
    """The inclusive period: dates (``2026-10-01``) or a duration back from today (``30d``); by default the
    last full calendar month."""
    today = today or store.utcnow().date()

    def day(value: str) -> date:
        try:
            return date.fromisoformat(value)
        except ValueError:
            return today - parse_duration(value)  # InvalidInput names the value when it is neither

    if start is None and end is None:
        last = today.replace(day=1) - timedelta(days=1)
        return last.replace(day=1), last
    first = day(start) if start else today.replace(day=1)
    final = day(end) if end else today
    if final < first:
        raise InvalidInput(f"--to {final} is before --from {first}")
    return first, final


def _rows_by_key(conn: sqlite3.Connection, select: str, column: str, keys: Any) -> dict[str, sqlite3.Row]:
    """``select`` (``SELECT ... FROM table``) for the rows whose ``column`` is one of ``keys``, 500 at a time."""
    keys = list(keys)
    found: dict[str, sqlite3.Row] = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        found.update({r[column]: r for r in conn.execute(f"{select} WHERE {column} IN ({marks})", chunk)})
    return found


def _ledger(conn: sqlite3.Connection, keys: Any) -> dict[str, sqlite3.Row]:
    """synctool's ledger rows (``crm_writes``) for these external ids."""
    return _rows_by_key(conn, "SELECT key, state, crm_id, job_id FROM crm_writes", "key", keys)


def _gifts_by_id(crm: Any, gift_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The CRM's gifts with these ids (the ones it still holds), 100 ids a search."""
    found: dict[str, dict[str, Any]] = {}
    for chunk in (gift_ids[i : i + 100] for i in range(0, len(gift_ids), 100)):
        for g in crm.iter_items("/gifts/search", search_params({"gift_ids": ",".join(chunk)}), page_size=PAGE):
            found[str(g.get("id"))] = g
    return found


def _source_of(conn: sqlite3.Connection, gift: dict[str, Any], made: dict[str, sqlite3.Row]) -> str:
    """The platform a synctool gift came from: its external id's prefix, else the source of the job that made it."""
    ext = str(gift.get("external_id") or "")
    found = platforms.source_of_gift(ext)
    if found is None and ext in made and made[ext]["job_id"]:
        job = jobs.get(conn, made[ext]["job_id"])
        found = job["source"] if job is not None else None
    return found or "unknown"


def _why_missing(conn: sqlite3.Connection, item: Expected) -> tuple[str, sqlite3.Row | None]:
    """The sync log's account of an item with no CRM gift, and its newest job."""
    job = log.gift_job(conn, item.sync_job.get("external_id") or item.external_id)
    if job is None:
        return "never arrived (no webhook, not found by the poll)", None
    if job["status"] == "failed":
        resolved = " (marked resolved)" if job["resolved_at"] else ""
        return f"failed{resolved}: {job['last_error']}", job
    if job["status"] == "skipped":
        return f"skipped: {job['message']}", job
    if job["status"] in ("queued", "running"):
        return f"still {job['status']}" + (f": {job['message']}" if job["message"] else ""), job
    if job["status"] == "review":
        return f"held for review (who is the donor?): `synctool donors matches`; {job['message']}", job
    if job["status"] == "previewed":
        return "previewed only: the sync mode is preview (`synctool sync-mode live`)", job
    return f"its job {job['id'][:8]} succeeded, but the CRM has no gift {item.external_id} in the period", job


def reconcile(
    conn: sqlite3.Connection,
    rt: Runtime,
    *,
    start: str | None = None,
    end: str | None = None,
    source: str | None = None,
    fix: bool = False,
    client: Any = None,
) -> dict[str, Any]:
    """Compare a period's platform money with the CRM's gifts; with ``fix``, queue a job for each item that
    should sync and each refund not applied (the CRM itself is never written here)."""
    return compare(conn, rt, period(start, end), source=source, fix=fix, client=client).result


@dataclass
class Comparison:
    """A reconcile's result, with what it compared: each item with its platform side (``_item``), and every
    CRM gift it read, by id (``year-end check`` looks at their deductible amounts, acknowledgements, donors)."""

    result: dict[str, Any]
    items: list[dict[str, Any]]
    gifts: dict[str, dict[str, Any]]


def compare(
    conn: sqlite3.Connection,
    rt: Runtime,
    dates: tuple[date, date],
    *,
    source: str | None = None,
    fix: bool = False,
    client: Any = None,
) -> Comparison:
    """``reconcile`` over ``dates`` (first, last), remembered as the last reconcile."""
    first, last = dates
    chosen = platforms.chosen(rt.config, source, lambda p: p.expected)
    listings, failed = each(chosen, lambda p: platforms.listing(p, conn, rt, first, last))
    expected: list[Expected] = [item for listed, _ in listings.values() for item in listed]
    platform_requests = {name: spent for name, (_, spent) in listings.items()}
    # only the platforms read are compared: a CRM gift of one that failed, or is not in use, is no "extra"
    compared = set(listings)
    owned = crm_environment.open_client(conn, rt) if client is None else None
    crm: Any = client or owned
    try:
        sent_before = crm.requests_sent
        clauses = search_params({"date_from": str(first), "date_to": str(last)})
        listed = [g for page in crm.iter_pages("/gifts/search", clauses, page_size=PAGE) for g in page]
        # a soft credit is not money: never extra, never in a total (crm/soft_credits.py)
        in_period = [g for g in listed if not soft_credits.is_soft_credit(g)]
        soft_count = len(listed) - len(in_period)
        # synctool's gifts: its external id prefixes, or an id in its ledger (a platform's without a prefix); the rest are other tools'
        made = _ledger(conn, {str(g["external_id"]) for g in in_period if g.get("external_id")})
        by_ext: dict[str, dict[str, Any]] = {}
        others: list[dict[str, Any]] = []
        for g in in_period:
            ext = str(g.get("external_id") or "")
            if ext and (platforms.source_of_gift(ext) or ext in made):
                by_ext[ext] = g
            else:
                others.append(g)
        # gifts synctool made for this period's money but dated outside it: one search for all of them
        ledger = _ledger(conn, {item.external_id for item in expected} - set(by_ext))
        elsewhere_ids = [r["crm_id"] for r in ledger.values() if r["state"] == "done" and r["crm_id"]]
        elsewhere = {str(g.get("external_id")): g for g in _gifts_by_id(crm, elsewhere_ids).values()}
        read = {str(g.get("id")): g for g in [*listed, *elsewhere.values()]}
        crm_requests = crm.requests_sent - sent_before
    finally:
        if owned is not None:
            owned.close()

    items: list[dict[str, Any]] = []
    holds = currency.by_external_id(conn, [item.external_id for item in expected])
    for item in expected:
        gift = by_ext.pop(item.external_id, None) or elsewhere.get(item.external_id)
        row: dict[str, Any] = {
            "source": item.source,
            "external_id": item.external_id,
            "platform_id": item.platform_id,
            "platform_amount": str(item.amount),
            "platform_date": item.date,
            "crm_amount": None,
            "crm_gift_id": None,
            "crm_date": None,
            "fund": None,
            "reason": None,
        }
        hold = holds.get(item.external_id)
        released = hold if hold is not None and hold["status"] == "released" else None
        if gift is None:
            entry = ledger.get(item.external_id)
            if item.no_gift and (entry is None or entry["state"] == "deleted"):
                row.update(status="matched", reason=f"no gift: {item.no_gift}")
            elif item.amount == 0 and (entry is None or entry["state"] == "deleted"):
                row.update(status="matched", reason="refunded in full; no gift" + (" (deleted by policy)" if entry else ""))
            else:
                reason, job = _why_missing(conn, item)
                vanished = entry is not None and entry["state"] == "done"
                if entry is not None and vanished:
                    reason = f"CRM gift {entry['crm_id']} that synctool made is no longer in the CRM"
                row.update(status="missing", reason=reason, _job=job, _vanished=vanished)
        else:
            crm_amount = dollars(gift.get("received_amount") or 0)
            row.update(
                crm_amount=str(crm_amount),
                crm_gift_id=str(gift.get("id")),
                crm_date=gift.get("received_date"),
                fund=gift.get("fund_name"),
            )
            if crm_amount == item.amount:
                if gift.get("received_date") == item.date:
                    row.update(status="matched")
                else:
                    row.update(
                        status="date_differs", reason=f"the CRM dates it {gift.get('received_date')}, the platform {item.date}"
                    )
            elif released is not None and crm_amount == dollars(released["released_amount"]) - refunded_to(item, released):
                row.update(status="matched", reason=held_words(released))
            elif crm_amount == item.gross and item.amount < item.gross:
                row.update(status="refund_not_applied", reason=f"{item.gross - item.amount} refunded on the platform")
            else:
                row.update(status="amount_differs", reason=f"expected {item.amount}, the CRM holds {crm_amount}")
        row["_item"] = item
        _held(row, hold)
        items.append(row)
    for ext, gift in by_ext.items():
        origin = _source_of(conn, gift, made)
        if origin not in compared and (origin != "unknown" or source or failed):
            continue
        items.append(
            {
                "source": origin,
                "external_id": ext,
                "platform_id": None,
                "status": "extra",
                "platform_amount": None,
                "platform_date": None,
                "crm_amount": str(dollars(gift.get("received_amount") or 0)),
                "crm_gift_id": str(gift.get("id")),
                "crm_date": gift.get("received_date"),
                "fund": gift.get("fund_name"),
                "reason": "no platform transaction in the period explains it",
            }
        )
    _mark_accepted(conn, items)
    items.sort(key=lambda r: (STATUSES.index(r["status"]), r["source"], r["external_id"]))
    fixed = _fix(conn, rt, items) if fix else []
    result = {
        "from": str(first),
        "to": str(last),
        "items": [{k: v for k, v in r.items() if not k.startswith("_")} for r in items],
        "totals": _totals(items, others),
        "soft_credits": soft_count,
        "crm_requests": crm_requests,
        "platform_requests": platform_requests,
        "sources": requests_by_source(chosen, platform_requests, failed),
        "failed": words(failed),
        "fixed": fixed,
    }
    differences = sum(1 for r in items if r["status"] not in SETTLED)
    result["differences"] = differences
    kept = (
        "external_id",
        "source",
        "status",
        "platform_amount",
        "crm_amount",
        "crm_gift_id",
        "platform_date",
        "crm_date",
        "reason",
    )
    with store.atomic(conn):
        settings.put(
            conn,
            LAST_RUN,
            {"at": store.iso(), "from": str(first), "to": str(last), "source": source, "differences": differences,
             "failed": result["failed"],
             "by_status": result["totals"]["by_status"],
             "items": [{k: r[k] for k in kept} for r in items if r["status"] not in SETTLED]},
        )  # fmt: skip
    return Comparison(result, items, read)


def held_words(hold: sqlite3.Row) -> str:
    """A currency hold, in words, for reconcile and year end."""
    said = f"{hold['amount']} {hold['currency']} in a {hold['organisation_currency']} organisation"
    if hold["status"] == "released":
        return f"{said}: released at {hold['released_amount']} by {hold['decided_by'] or 'someone'} (job {hold['job_id'][:8]})"
    if hold["status"] == "resolved":
        return f"{said}: resolved by {hold['decided_by'] or 'someone'} without a gift (job {hold['job_id'][:8]})"
    return f"held: {said}; `synctool jobs release {hold['job_id'][:8]} --amount ...` (what the bank credited) or `synctool syncs resolve`"


def refunded_to(item: Expected, released: sqlite3.Row) -> Decimal:
    """A released gift's refunds, in the organisation's currency: the platform's refunded share of the released
    amount (none when it refunded nothing)."""
    if item.gross <= 0 or item.amount >= item.gross:
        return Decimal("0.00")
    return (dollars(released["released_amount"]) * (item.gross - item.amount) / item.gross).quantize(Decimal("0.01"))


def _held(row: dict[str, Any], hold: sqlite3.Row | None) -> None:
    """Money in another currency than the organisation's is ``held`` while a person has not released it (never
    ``missing``); one they resolved without a gift is settled (``accepted``, saying so)."""
    if row["status"] not in ("missing", "amount_differs", "refund_not_applied"):
        return
    if hold is not None and hold["status"] == "pending" and row["crm_gift_id"] is None:
        row.update(status="held", reason=held_words(hold))
    elif hold is not None and hold["status"] == "resolved" and row["crm_gift_id"] is None:
        row.update(status="accepted", reason=held_words(hold))


def _fingerprint(row: Any) -> tuple:
    """What makes a difference the same one again: its status and both amounts."""
    return (row["status"], row["platform_amount"], row["crm_amount"])


def _mark_accepted(conn: sqlite3.Connection, items: list[dict[str, Any]]) -> None:
    """A difference a person accepted, still exactly as accepted, is ``accepted``, not a difference."""
    differing = [r for r in items if r["status"] not in SETTLED]
    found = _rows_by_key(conn, "SELECT * FROM reconcile_accepted", "external_id", (r["external_id"] for r in differing))
    for r in differing:
        reviewed = found.get(r["external_id"])
        if reviewed is not None and _fingerprint(reviewed) == _fingerprint(r):
            r.update(
                status="accepted",
                reason=f"{reviewed['status']} accepted by {reviewed['accepted_by']} on {reviewed['accepted_at'][:10]}: "
                f"{reviewed['note']}",
            )


class AcceptBody(Body):
    """POST /api/reconcile/accept (who is the signed-in user)."""

    external_id: str
    note: str


class PayoutsQuery(Query):
    """GET /api/payouts."""

    start: Optional[str] = Field(None, alias="from")
    end: Optional[str] = Field(None, alias="to")
    source: Optional[str] = None


def accept(conn: sqlite3.Connection, external_id: str, note: str, by: str) -> dict[str, Any]:
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
    row = {
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
        store.database(conn).table("reconcile_accepted").upsert(row, pk="external_id")
    return row


def accepted(conn: sqlite3.Connection) -> dict[str, Any]:
    """Every reviewed difference, newest first."""
    rows = [dict(r) for r in conn.execute("SELECT * FROM reconcile_accepted ORDER BY accepted_at DESC")]
    return {"items": rows, "count": len(rows)}


def _totals(items: list[dict[str, Any]], others: list[dict[str, Any]]) -> dict[str, Any]:
    by_status: dict[str, int] = {s: 0 for s in STATUSES}
    per_source: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"platform_count": 0, "platform_dollars": Decimal(0), "crm_count": 0, "crm_dollars": Decimal(0)}
    )
    per_fund: dict[str, dict[str, Any]] = defaultdict(lambda: {"crm_count": 0, "crm_dollars": Decimal(0)})
    for r in items:
        by_status[r["status"]] += 1
        side = per_source[r["source"]]
        if r["platform_amount"] is not None:
            side["platform_count"] += 1
            side["platform_dollars"] += Decimal(r["platform_amount"])
        if r["crm_amount"] is not None:
            side["crm_count"] += 1
            side["crm_dollars"] += Decimal(r["crm_amount"])
            fund = per_fund[r["fund"] or "(no fund)"]
            fund["crm_count"] += 1
            fund["crm_dollars"] += Decimal(r["crm_amount"])

    def text(d: dict[str, Any]) -> dict[str, Any]:
        return {k: f"{v:.2f}" if isinstance(v, Decimal) else v for k, v in d.items()}

    return {
        "by_status": by_status,
        "per_source": {k: text(v) for k, v in sorted(per_source.items())},
        "per_fund": {k: text(v) for k, v in sorted(per_fund.items())},
        "other_tools": {
            "count": len(others),
            "dollars": f"{sum((dollars(g.get('received_amount') or 0) for g in others), Decimal(0)):.2f}",
        },
    }


def _fix(conn: sqlite3.Connection, rt: Runtime, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each difference, queue what the normal path should do, or say why nothing: a failed job is retried,
    money that never arrived is queued as the backup poll would, a gift synctool made that vanished from the
    CRM is re-made (a forced job), a refund not applied gets its refund job. Nothing else changes."""
    done: list[dict[str, Any]] = []
    max_attempts = rt.config.queue.max_attempts

    def note(r: dict[str, Any], action: str, job_id: str | None = None, why: str | None = None) -> None:
        done.append({"external_id": r["external_id"], "status": r["status"], "action": action, "job_id": job_id, "why": why})

    for r in items:
        if r["status"] in SETTLED:
            continue
        item: Expected | None = r.get("_item")
        ext = r["external_id"]

        if item is None:  # extra: no platform item to sync from
            note(r, "nothing", why="no platform transaction explains it: delete it in the CRM, or `synctool reconcile accept`")
        elif r["status"] == "missing":
            job = r.get("_job")
            with store.atomic(conn):
                if r.get("_vanished"):
                    payload = {**item.sync_job.get("payload", {}), "origin": "reconcile --fix: re-made"}
                    spec = {**item.sync_job, "payload": payload}
                    job_id = jobs.enqueue(conn, max_attempts=max_attempts, force=True, **spec)
                    note(r, "re-made", job_id, f"{r['reason']}; a forced job makes it again through the normal path")
                elif job is None:
                    note(r, "queued", jobs.enqueue(conn, max_attempts=max_attempts, **item.sync_job))
                elif job["status"] == "failed":
                    jobs.requeue_failed(conn, job["id"])
                    note(r, "retried", job["id"])
                elif job["status"] in ("queued", "running"):
                    note(r, "nothing", job["id"], f"its job is {job['status']}: `synctool drain` runs it")
                elif job["status"] == "review":
                    note(r, "nothing", job["id"], "held until someone says who the donor is: `synctool donors matches`")
                else:
                    note(r, "nothing", job["id"], f"{r['reason']}: fix the cause, then `synctool jobs retry {job['id']}`")
        elif r["status"] == "held":
            note(r, "nothing", why=r["reason"])
        elif r["status"] == "refund_not_applied":
            if not item.refund_jobs:
                note(r, "nothing", why="the platform lists no refund to apply; check the gift in the CRM")
            for spec in item.refund_jobs:
                with store.atomic(conn):
                    if "retry" in spec:
                        row = jobs.get(conn, spec["retry"])
                        if row is not None and row["status"] == "failed":
                            jobs.requeue_failed(conn, spec["retry"])
                            note(r, "refund retried", spec["retry"])
                        else:
                            note(r, "nothing", spec["retry"], f"its refund job is {row['status'] if row else 'gone'}")
                        continue
                    note(r, "refund queued", jobs.enqueue(conn, max_attempts=max_attempts, **spec))
        else:  # amount_differs, date_differs: the CRM holds the gift, changed by a person or a rule
            note(r, "nothing", why="the gift is in the CRM as a person or a rule left it: correct it there, or "
                 f"`synctool reconcile accept {ext} --note ...`")  # fmt: skip
    return done


def write_csv(result: dict[str, Any], path: str | Path) -> None:
    """Every item, one row each (``exports.write_csv``: formulas neutralised, mode 0600)."""
    fields = ["source", "external_id", "platform_id", "status", "platform_amount", "crm_amount", "crm_gift_id",
              "platform_date", "crm_date", "fund", "reason"]  # fmt: skip
    exports.write_csv(path, fields, result["items"], numbers=("platform_amount", "crm_amount"))


def last_run(conn: sqlite3.Connection) -> dict[str, Any] | None:
    """The last reconcile: when, its period and source, and its differences (``doctor``, the daily summary)."""
    return settings.get(conn, LAST_RUN)


def differences(conn: sqlite3.Connection) -> dict[str, Any]:
    """The last reconcile's differences as they stand now: each one a person reviewed since (and still the
    same difference) is ``accepted``, with who and why; ``open`` counts the others."""
    last = last_run(conn)
    if last is None:
        return {"ran": False, "items": [], "open": 0}
    items = [dict(r) for r in last.get("items") or []]
    _mark_accepted(conn, items)
    return {
        "ran": True,
        **{k: last.get(k) for k in ("at", "from", "to", "source", "failed")},
        "items": items,
        "open": sum(1 for r in items if r["status"] not in SETTLED),
    }


def payouts(
    conn: sqlite3.Connection,
    rt: Runtime,
    *,
    start: str | None = None,
    end: str | None = None,
    source: str | None = None,
    write_deposits: bool = False,
    client: Any = None,
) -> dict[str, Any]:
    """One row per payout (bank deposit) of the period: gross, fees, refunds and net (gross - fees - refunds,
    to the cent), the payout's own amount and any difference, and which of its transactions have their gift
    in the CRM, as this run reads it (synctool's ledger names the gift; one CRM search per 100 gifts says
    whether the CRM still holds it). ``write_deposits`` queues, for each gift the CRM holds, a paced PATCH of
    its ``deposit_date`` and ``deposited_amount``; a gift it no longer holds is reported, never written."""
    first, last = period(start, end)
    chosen = platforms.chosen(rt.config, source, lambda p: p.payouts)

    def deposits(platform: platforms.Platform) -> tuple[list[Any], int]:
        assert platform.payouts is not None
        return platform.payouts(conn, rt, first, last)

    found, failed = each(chosen, deposits)
    requests = {name: spent for name, (_, spent) in found.items()}
    listed = [(name, payout) for name, (payouts_, _) in found.items() for payout in payouts_]
    keys = {line.external_id for _, payout in listed for line in payout.lines if line.external_id}
    ledger = {k: r["crm_id"] for k, r in _ledger(conn, keys).items() if r["state"] == "done" and r["crm_id"]}
    held: dict[str, dict[str, Any]] = {}
    crm_requests = 0
    if ledger:
        owned = crm_environment.open_client(conn, rt) if client is None else None
        crm: Any = client or owned
        try:
            sent_before = crm.requests_sent
            held = _gifts_by_id(crm, sorted(set(ledger.values())))
            crm_requests = crm.requests_sent - sent_before
        finally:
            if owned is not None:
                owned.close()
    rows, queued = [], 0
    for name, payout in listed:
        lines = [line for line in payout.lines if line.external_id]
        without = [line.external_id for line in lines if line.external_id not in ledger]
        gone = [line.external_id for line in lines if line.external_id in ledger and ledger[line.external_id] not in held]
        gross = sum((line.gross for line in payout.lines), Decimal(0))
        fees = sum((line.fee for line in payout.lines), Decimal(0))
        refunds = sum((line.refund for line in payout.lines), Decimal(0))
        net = sum((line.net for line in payout.lines), Decimal(0))
        problems = []
        if gross - fees - refunds != net:
            problems.append(f"its entries do not add up: {gross:.2f} - {fees:.2f} - {refunds:.2f} is not {net:.2f}")
        if payout.net is not None and payout.net != net:
            problems.append(f"the payout is {payout.net:.2f}, its entries {net:.2f} (difference {payout.net - net:.2f})")
        rows.append(
            {
                "source": name,
                "payout_id": payout.payout_id,
                "date": payout.date,
                "gross": f"{gross:.2f}",
                "fees": f"{fees:.2f}",
                "refunds": f"{refunds:.2f}",
                "net": f"{net:.2f}",
                "stated_net": None if payout.net is None else f"{payout.net:.2f}",
                "difference": None if payout.net is None else f"{payout.net - net:.2f}",
                "problem": "; ".join(problems) or None,
                "transactions": len(lines),
                "with_gift": len(lines) - len(without) - len(gone),
                "without_gift": without,
                "not_in_crm": gone,
            }
        )
        if write_deposits:
            with store.atomic(conn):
                for line in lines:
                    if line.external_id not in ledger or line.external_id in gone:
                        continue
                    jobs.enqueue_unless_waiting(
                        conn,
                        source=name,
                        target="crm",
                        entity_type="deposit",
                        entity_id=f"{payout.payout_id}:{line.external_id}",
                        external_id=line.external_id,
                        payload={
                            "payout_id": payout.payout_id,
                            "deposit_date": payout.date,
                            "deposited_amount": str(line.net),
                            "currency": payout.currency,
                        },
                    )
                    queued += 1
    return {
        "from": str(first),
        "to": str(last),
        "payouts": rows,
        "deposits_queued": queued,
        "platform_requests": requests,
        "crm_requests": crm_requests,
        "sources": requests_by_source(chosen, requests, failed),
        "failed": words(failed),
    }
