"""Comparing a period's platform money with the CRM's gifts: each platform item gets one status, and each CRM
gift with synctool's external id that no item explains is ``extra``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from synctool import platforms
from synctool.crm import currency
from synctool.money import dollars
from synctool.ops.per_platform import each, requests_by_source, words
from synctool.ops.reconcile.crm_side import CrmGift, CrmSide, crm_client, read_crm, source_of
from synctool.ops.reconcile.fixes import fix as fix_items
from synctool.ops.reconcile.holds import apply_hold, held_words, refunded_to
from synctool.ops.reconcile.items import SETTLED, STATUSES, ItemRow
from synctool.ops.reconcile.periods import period
from synctool.ops.reconcile.review import mark_accepted, remember
from synctool.ops.reconcile.totals import totals
from synctool.platforms.reconcile import Expected
from synctool.queue import log
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool import store
    from synctool.crm.client import CrmClient


def reconcile(
    conn: store.Connection,
    rt: Runtime,
    *,
    start: str | None = None,
    end: str | None = None,
    source: str | None = None,
    fix: bool = False,
    client: CrmClient | None = None,
    plans: bool = False,
) -> dict[str, Any]:
    """Compare a period's platform money with the CRM's gifts; with ``fix``, queue a job for each item that
    should sync and each refund not applied (the CRM itself is never written here). The plan donors' group is
    checked too (``result["plans"]``, from the ledgers; with ``plans``, also one CRM read a donor)."""
    from synctool.ops.reconcile import plans as plan_check

    result = compare(conn, rt, period(start, end), source=source, fix=fix, client=client).result
    result["plans"] = plan_check.run(conn, rt, read_crm=plans, fix=fix, client=client)
    return result


@dataclass
class Comparison:
    """A reconcile's result, with what it compared: each item with its platform side (``_item``), and every
    CRM gift it read, by id (``year-end check`` looks at their deductible amounts, acknowledgements, donors)."""

    result: dict[str, Any]
    items: list[ItemRow]
    gifts: dict[str, CrmGift]


def compare(
    conn: store.Connection,
    rt: Runtime,
    dates: tuple[date, date],
    *,
    source: str | None = None,
    fix: bool = False,
    client: CrmClient | None = None,
) -> Comparison:
    """``reconcile`` over ``dates`` (first, last), remembered as the last reconcile."""
    first, last = dates
    chosen = platforms.chosen(rt.config, source, lambda p: p.expected)
    listings, failed = each(chosen, lambda p: platforms.listing(p, conn, rt, first, last))
    expected: list[Expected] = [item for listed, _ in listings.values() for item in listed]
    platform_requests = {name: spent for name, (_, spent) in listings.items()}
    with crm_client(conn, rt, client) as crm:
        side = read_crm(conn, crm, dates, expected)
    holds = currency.by_external_id(conn, [item.external_id for item in expected])
    items = [_item_row(conn, item, side, holds.get(item.external_id)) for item in expected]
    # only the platforms read are compared: a CRM gift of one that failed, or is not in use, is no "extra"
    items += _extras(conn, side, compared=set(listings), narrowed=bool(source or failed))
    mark_accepted(conn, items)
    items.sort(key=lambda r: (STATUSES.index(r["status"]), r["source"], r["external_id"]))
    fixed = fix_items(conn, rt, items) if fix else []
    result = {
        "from": str(first),
        "to": str(last),
        "items": [{k: v for k, v in r.items() if not k.startswith("_")} for r in items],
        "totals": totals(items, side.others),
        "soft_credits": side.soft_count,
        "crm_requests": side.requests,
        "platform_requests": platform_requests,
        "sources": requests_by_source(chosen, platform_requests, failed),
        "failed": words(failed),
        "fixed": fixed,
        "differences": sum(1 for r in items if r["status"] not in SETTLED),
    }
    remember(conn, dates, source, result, items)
    return Comparison(result, items, side.read)


def _item_row(conn: store.Connection, item: Expected, side: CrmSide, hold: store.Row | None) -> ItemRow:
    """One platform item against the CRM gift made for it (in the period, or dated elsewhere), if any."""
    gift = side.by_ext.pop(item.external_id, None) or side.elsewhere.get(item.external_id)
    row: ItemRow = {
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
        "status": "missing",
    }
    if gift is None:
        _without_gift(conn, row, item, side.ledger.get(item.external_id))
    else:
        _with_gift(row, item, gift, hold if hold is not None and hold["status"] == "released" else None)
    row["_item"] = item
    apply_hold(row, hold)
    return row


def _without_gift(conn: store.Connection, row: ItemRow, item: Expected, entry: store.Row | None) -> None:
    """No gift: matched when none is due (no money, or refunded in full), else missing, with why."""
    if item.no_gift and (entry is None or entry["state"] == "deleted"):
        row["status"], row["reason"] = "matched", f"no gift: {item.no_gift}"
    elif item.amount == 0 and (entry is None or entry["state"] == "deleted"):
        row["status"], row["reason"] = "matched", "refunded in full; no gift" + (" (deleted by policy)" if entry else "")
    else:
        reason, job = _why_missing(conn, item)
        vanished = entry is not None and entry["state"] == "done"
        if entry is not None and vanished:
            reason = f"CRM gift {entry['crm_id']} that synctool made is no longer in the CRM"
        row["status"], row["reason"] = "missing", reason
        row["_job"], row["_vanished"] = job, vanished


def _with_gift(row: ItemRow, item: Expected, gift: CrmGift, released: store.Row | None) -> None:
    """A gift: matched, or how it differs (its amount, its date, a refund it does not show)."""
    crm_amount = dollars(gift.get("received_amount") or 0)
    row["crm_amount"] = str(crm_amount)
    row["crm_gift_id"] = str(gift.get("id"))
    row["crm_date"] = gift.get("received_date")
    row["fund"] = gift.get("fund_name")
    if crm_amount == item.amount:
        if gift.get("received_date") == item.date:
            row["status"] = "matched"
        else:
            row["status"], row["reason"] = (
                "date_differs",
                f"the CRM dates it {gift.get('received_date')}, the platform {item.date}",
            )
    elif released is not None and crm_amount == dollars(released["released_amount"]) - refunded_to(item, released):
        row["status"], row["reason"] = "matched", held_words(released)
    elif crm_amount == item.gross and item.amount < item.gross:
        row["status"], row["reason"] = "refund_not_applied", f"{item.gross - item.amount} refunded on the platform"
    else:
        row["status"], row["reason"] = "amount_differs", f"expected {item.amount}, the CRM holds {crm_amount}"


def _why_missing(conn: store.Connection, item: Expected) -> tuple[str, store.Row | None]:
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


def _extras(conn: store.Connection, side: CrmSide, *, compared: set[str], narrowed: bool) -> list[ItemRow]:
    """The CRM gifts with synctool's external id that no platform item explained: of a platform compared, or of
    none known when every platform in use was read."""
    found: list[ItemRow] = []
    for ext, gift in side.by_ext.items():
        origin = source_of(conn, gift, side.made)
        if origin not in compared and (origin != "unknown" or narrowed):
            continue
        found.append(
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
    return found
