"""Year-end ready (`synctool year-end check YEAR`): whether the CRM's year is right before the giving
statements go out, naming each blocker with the gift, the donor and the command that fixes it.

In January the CRM's annual statements count the gifts of type "Gift" with their deductible amounts
(reference/lgl.md). What synctool got wrong during the year would become a wrong tax document, so the check
looks for, in the organisation's time zone (``timezone:``):

- ``missing`` / ``amount_differs`` / ``refund_not_applied`` / ``extra``: a year-long reconcile of every
  platform in use (refunds netted), run and remembered as reconcile's last run, so ``reconcile accept`` and
  ``reconcile --fix`` work on what it found; a difference reviewed with ``reconcile accept`` is listed as
  reviewed, not as a blocker;
- ``held``: money in another currency than the organisation's (``organisation.currency``), held until a person
  releases it with the amount the bank credited (listed as held, never as missing);
- ``wrong_year``: a gift whose platform day and CRM ``received_date`` fall on either side of 1 January (the
  reconcile reads a day more on each side of the year to see them);
- ``deductible``: a synced gift whose deductible amount is more than its source allows (a ticket's fair market
  value, a shop sale, a refund);
- ``no_address``: a donor whose deductible "Gift" total for the year is $250 or more (the written
  acknowledgement threshold) with no mailing address in the CRM (read from the mirror, refreshed first);
- ``no_acknowledgement``: a synced gift with neither an acknowledgement template nor ``do_not_ack``.

Soft credits are never money: they are counted apart and in no total. The check writes nothing to the CRM.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from synctool import settings, store
from synctool.crm import gifts as ledger
from synctool.crm import mirror, soft_credits
from synctool.errors import InvalidInput
from synctool.money import dollars
from synctool.ops import exports
from synctool.ops.reconcile import SETTLED, Comparison, ItemRow, compare
from synctool.ops.reconcile.crm_side import CrmGift, crm_client
from synctool.queue import log
from synctool.queue.unit import Unit
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool.crm.client import CrmClient

#: the written-acknowledgement threshold (IRS: a single contribution of $250 or more); applied to the year's
#: deductible total per donor, as the statements are sent per donor
THRESHOLD = Decimal("250.00")
KINDS = (
    "missing",
    "held",
    "amount_differs",
    "refund_not_applied",
    "extra",
    "wrong_year",
    "deductible",
    "no_address",
    "no_acknowledgement",
)
#: the stored result of the last check of each year (the daily summary counts its blockers in December)
SETTING = "year_end:{year}"
PAGE = 250
#: how many blockers the stored check keeps for the staff page (the command and its CSV have them all)
KEPT = 500


def _year(year: int, today: date) -> tuple[date, date]:
    if not 2000 <= year <= today.year:
        raise InvalidInput(f"no year {year} to check", f"a year from 2000 to {today.year}")
    return date(year, 1, 1), date(year, 12, 31)


def estimate(conn: store.Connection, rt: Runtime, year: int) -> dict[str, int | float]:
    """What the check will cost before it starts: CRM requests (the year's gift search, a page per 250 gifts,
    as the ledger counts the gifts synctool wrote, plus a mirror refresh and one look-up) and minutes at
    synctool's share of the CRM budget."""
    first, last = _year(year, today(rt))
    written = log.gifts_written_between(conn, f"{first - timedelta(days=1)}", f"{last + timedelta(days=2)}")
    requests = math.ceil(max(written, 1) / PAGE) + 2
    crm = rt.config.crm
    per_second = min(crm.share_requests / crm.rate_limit_window_s, 1000.0 / max(crm.min_interval_ms, 1.0))
    return {"gifts_synced": written, "crm_requests": requests, "seconds": round(requests / per_second, 1)}


def today(rt: Runtime) -> date:
    """Today in the organisation's time zone (``timezone:``; UTC when unset)."""
    zone = ledger.zone(rt.config.timezone)
    now = rt.clock()
    return now.astimezone(zone).date() if zone else now.date()


class Season(TypedDict):
    """The year whose statements are due, and its last check (None: not checked yet)."""

    year: int
    checked_at: str | None
    blockers: int | None
    by_kind: dict[str, int] | None


def season(conn: store.Connection, rt: Runtime) -> Season | None:
    """From 1 December to the end of January, the year whose statements are due and its last check (the daily
    summary and the staff page's overview count its blockers); None the rest of the year."""
    now = today(rt)
    if now.month not in (12, 1):
        return None
    year = now.year if now.month == 12 else now.year - 1
    found = last(conn, year) or {}
    return {"year": year, "checked_at": found.get("at"), "blockers": found.get("blockers"), "by_kind": found.get("by_kind")}


class Blocker(TypedDict):
    """One thing to put right before the statements go out, with the gift, the donor and the fix."""

    kind: str
    source: str | None
    external_id: str | None
    crm_gift_id: str | None
    constituent_id: str | None
    constituent: str | None
    platform_date: str | None
    crm_date: str | None
    platform_amount: str | None
    crm_amount: str | None
    detail: str
    fix: str
    #: a ``deductible`` one's amount in the CRM, and the most it may be
    deductible: NotRequired[str]
    allowed: NotRequired[str]


def check(
    conn: store.Connection,
    rt: Runtime,
    year: int,
    *,
    client: CrmClient | None = None,
    cost: dict[str, int | float] | None = None,
) -> dict[str, Any]:
    """Every blocker of ``year``'s statements, the reviewed differences, and the totals per platform."""
    first, last = _year(year, today(rt))
    cost = cost or estimate(conn, rt, year)  # the caller may have said it already, before starting
    started = store.utcnow()
    found, crm_requests = _compared(conn, rt, (first, last), client)
    review = _Review(conn, year, found, f"--from {first} --to {last}")
    for row in found.items:
        review.item(row)
    per_donor, soft = review.gifts()
    review.addresses(per_donor)
    blockers = review.sorted_blockers()
    result = {
        "year": year,
        "from": str(first),
        "to": str(last),
        "timezone": rt.config.timezone or "UTC",
        "estimate": cost,
        "blockers": blockers,
        "by_kind": {k: sum(1 for b in blockers if b["kind"] == k) for k in KINDS},
        "reviewed": review.reviewed,
        "totals": {
            s: {k: f"{v:.2f}" if isinstance(v, Decimal) else v for k, v in t.items()} for s, t in sorted(review.totals.items())
        },
        "soft_credits": soft,
        "crm_requests": crm_requests,
        "platform_requests": found.result["platform_requests"],
        "failed": found.result["failed"],
        "seconds": round((store.utcnow() - started).total_seconds(), 1),
        "clean": not blockers and not found.result["failed"],
    }
    with store.atomic(conn):
        settings.put(conn, SETTING.format(year=year), {"at": store.iso(), "blockers": len(blockers), "by_kind": result["by_kind"],
                                                       "failed": result["failed"], "items": blockers[:KEPT],
                                                       "totals": result["totals"], "reviewed": len(review.reviewed)})  # fmt: skip
    return result


def _compared(conn: store.Connection, rt: Runtime, year: tuple[date, date], client: CrmClient | None) -> tuple[Comparison, int]:
    """The donors' addresses refreshed, as of now, then a reconcile of the year with a day more on each side; and
    the CRM requests both took."""
    first, last = year
    with crm_client(conn, rt, client) as crm:
        sent_before = crm.requests_sent
        mirror.refresh(crm, Unit(conn), page_size=rt.config.crm.mirror_page_size)
        found = compare(conn, rt, (first - timedelta(days=1), last + timedelta(days=1)), client=crm)
        return found, crm.requests_sent - sent_before


ACCEPT = "or, if it is right, `synctool reconcile accept {ext} --note ...`"


@dataclass
class _Review:
    """A year's check as it goes: its blockers, the differences a person reviewed, the totals per platform."""

    conn: store.Connection
    year: int
    found: Comparison
    #: the year, as ``reconcile`` takes it
    span: str
    blockers: list[Blocker] = field(default_factory=list)
    reviewed: list[dict[str, object]] = field(default_factory=list)
    totals: dict[str, dict[str, int | Decimal]] = field(default_factory=dict)

    def in_year(self, day: object) -> bool:
        return bool(day) and str(day)[:4] == str(self.year)

    def gift_of(self, row: ItemRow) -> CrmGift:
        return self.found.gifts.get(str(row.get("crm_gift_id")), {})

    def block(
        self, kind: str, row: ItemRow, detail: str, fix: str, deductible: str | None = None, allowed: str | None = None
    ) -> None:
        gift = self.gift_of(row)
        blocker: Blocker = {
            "kind": kind,
            "source": row.get("source"),
            "external_id": row.get("external_id"),
            "crm_gift_id": row.get("crm_gift_id"),
            "constituent_id": None if not gift.get("constituent_id") else str(gift["constituent_id"]),
            "constituent": _name(self.conn, gift.get("constituent_id")),
            "platform_date": row.get("platform_date"),
            "crm_date": row.get("crm_date"),
            "platform_amount": row.get("platform_amount"),
            "crm_amount": row.get("crm_amount"),
            "detail": detail,
            "fix": fix,
        }
        if deductible is not None and allowed is not None:
            blocker["deductible"], blocker["allowed"] = deductible, allowed
        self.blockers.append(blocker)

    def item(self, row: ItemRow) -> None:
        """One row of the year's reconcile: counted in its platform's totals, then reviewed, or a blocker."""
        status = row["status"]
        platform_in, crm_in = self.in_year(row.get("platform_date")), self.in_year(row.get("crm_date"))
        if not platform_in and not crm_in:
            return  # the day before or after the year, rightly dated there
        self.count(row, platform_in, crm_in)
        if status == "accepted":
            self.reviewed.append({k: v for k, v in row.items() if not k.startswith("_")})
            return
        if row.get("crm_date") and row.get("platform_date") and platform_in != crm_in:
            self.block("wrong_year", row, f"the platform dates it {row['platform_date']}, the CRM {row['crm_date']}: "
                       f"the statements of {self.year} {'leave it out' if platform_in else 'count it'}",
                       f"set its received date to {row['platform_date']} in the CRM, " + ACCEPT.format(ext=row["external_id"]))  # fmt: skip
            return
        self.difference(row, platform_in, crm_in)
        if status in SETTLED or status == "date_differs":  # a refund not applied is its own blocker
            _deductible(row, self.gift_of(row), self.block)

    def count(self, row: ItemRow, platform_in: bool, crm_in: bool) -> None:
        """A platform item of the year (a comped ticket is no money, no gift), and its gift when the CRM dates it
        in the year too."""
        item = row.get("_item")
        no_gift = item is not None and item.no_gift and row.get("crm_gift_id") is None
        if not (platform_in and item is not None and not no_gift):
            return
        side = self.totals.setdefault(row["source"], {"platform_count": 0, "platform_dollars": Decimal(0), "crm_count": 0,
                                                      "crm_dollars": Decimal(0), "blockers": 0})  # fmt: skip
        side["platform_count"] += 1
        side["platform_dollars"] += Decimal(cast(str, row["platform_amount"]))
        if row.get("crm_amount") is not None and crm_in:
            side["crm_count"] += 1
            side["crm_dollars"] += Decimal(cast(str, row["crm_amount"]))

    def difference(self, row: ItemRow, platform_in: bool, crm_in: bool) -> None:
        """A difference of the year's reconcile, as a blocker with its fix."""
        ext, status, span = row["external_id"], row["status"], self.span
        if status == "missing" and platform_in:
            job = row.get("_job")
            fix = f"`synctool reconcile {span} --fix` (queues it; drain writes it)"
            if job is not None and job["status"] == "failed":
                fix = f"fix the cause, then `synctool jobs retry {job['id']}`"
            elif job is not None and job["status"] == "review":
                fix = "`synctool donors matches`: say who the donor is"
            self.block("missing", row, row.get("reason") or "not in the CRM", fix)
        elif status == "held" and platform_in:  # money in another currency: a person says what the bank credited
            job_id = str((row.get("_job") or {"id": ""})["id"])[:8] or "ID"
            self.block("held", row, row.get("reason") or "held: another currency",
                       f"`synctool jobs release {job_id} --amount ...` (what the bank credited), or `synctool syncs resolve {job_id}`")  # fmt: skip
        elif status == "refund_not_applied" and platform_in:
            self.block(
                "refund_not_applied", row, row.get("reason") or "", f"`synctool reconcile {span} --fix` (queues the refund)"
            )
        elif status == "amount_differs" and platform_in:
            self.block("amount_differs", row, row.get("reason") or "", "correct the gift in the CRM, " + ACCEPT.format(ext=ext))
        elif status == "extra" and crm_in:
            self.block("extra", row, row.get("reason") or "", "delete it in the CRM if it is no money, " + ACCEPT.format(ext=ext))

    def gifts(self) -> tuple[dict[str, Decimal], int]:
        """The CRM's gifts of the year: each synced one without an acknowledgement is a blocker; the deductible
        total per donor, and how many soft credits (never money) there were."""
        synced = {str(r["crm_gift_id"]): r for r in self.found.items if r.get("crm_gift_id")}
        soft = 0
        per_donor: dict[str, Decimal] = {}
        for gift_id, gift in self.found.gifts.items():
            if not self.in_year(gift.get("received_date")):
                continue
            if soft_credits.is_soft_credit(gift):
                soft += 1
                continue
            if gift_id in synced and not (gift.get("ack_template_name") or "").strip():
                self.block("no_acknowledgement", synced[gift_id], "neither an acknowledgement template nor do_not_ack",
                           "choose one in the CRM; for the next gifts, `synctool mappings types set ... --ack TEMPLATE` (or --no-ack)")  # fmt: skip
            if (gift.get("gift_type_name") or "Gift") == "Gift" and gift.get("constituent_id"):
                deductible = dollars(ledger.amounts_of(gift)[1] or 0)
                if deductible > 0:
                    key = str(gift["constituent_id"])
                    per_donor[key] = per_donor.get(key, Decimal(0)) + deductible
        return per_donor, soft

    def addresses(self, per_donor: dict[str, Decimal]) -> None:
        """A donor whose deductible total is $250 or more needs a mailing address for the acknowledgement."""
        for constituent_id, total in sorted(per_donor.items()):
            if total >= THRESHOLD and not _mailing_address(self.conn, constituent_id):
                self.blockers.append({
                    "kind": "no_address", "source": None, "external_id": None, "crm_gift_id": None,
                    "constituent_id": constituent_id, "constituent": _name(self.conn, constituent_id), "platform_date": None,
                    "crm_date": None, "platform_amount": None, "crm_amount": f"{total:.2f}",
                    "detail": f"deductible gifts of {total:.2f} in {self.year} ($250 or more) and no mailing address in the CRM",
                    "fix": f"add a street address to constituent {constituent_id} in the CRM (`synctool crm find {constituent_id}`)",
                })  # fmt: skip

    def sorted_blockers(self) -> list[Blocker]:
        """The blockers by kind, platform and gift (or donor), each counted in its platform's totals."""
        for b in self.blockers:
            if b["source"] in self.totals:
                self.totals[b["source"]]["blockers"] += 1
        self.blockers.sort(
            key=lambda b: (KINDS.index(b["kind"]), str(b["source"] or ""), str(b["external_id"] or b["constituent_id"]))
        )
        return self.blockers


def _deductible(row: ItemRow, gift: CrmGift, block: Callable[..., None]) -> None:
    """A synced gift whose deductible amount is more than its source allows."""
    item = row.get("_item")
    if item is None or not gift:
        return
    received, deductible = (dollars(v or 0) for v in ledger.amounts_of(gift))
    most = min(item.most_deductible(), received)
    if deductible > most:
        why = item.deductible_why or ("its received amount is " + f"{received:.2f}")
        block("deductible", row, f"deductible {deductible:.2f} in the CRM, at most {most:.2f}: {why}",
              f"set its deductible amount to {most:.2f} in the CRM", deductible=f"{deductible:.2f}", allowed=f"{most:.2f}")  # fmt: skip


def _name(conn: store.Connection, constituent_id: Any) -> str | None:
    if not constituent_id:
        return None
    row = conn.execute(
        "SELECT first_name, last_name, org_name, is_org FROM crm_constituents WHERE id = ?", (int(constituent_id),)
    ).fetchone()
    if row is None:
        return None
    return (
        row["org_name"] if row["is_org"] else " ".join(str(row[k] or "") for k in ("first_name", "last_name")).strip()
    ) or None


def _mailing_address(conn: store.Connection, constituent_id: str) -> bool:
    """A street with a postal code, or with a city (the mirror's copy of the CRM's street addresses)."""
    for r in conn.execute("SELECT * FROM crm_constituent_addresses WHERE constituent_id = ?", (int(constituent_id),)):
        if (r["street"] or "").strip() and ((r["postal_code"] or "").strip() or (r["city"] or "").strip()):
            return True
    return False


def last(conn: store.Connection, year: int) -> dict[str, Any] | None:
    """The last check of ``year``: when, its blockers (the first 500) and their count by kind, the totals per
    platform (the daily summary, the staff page, ``GET /api/year-end/:year``)."""
    return settings.get(conn, SETTING.format(year=year))


def write_csv(result: dict[str, Any], path: str | Path) -> None:
    """For the bookkeeper: one row per blocker, then a totals row per platform (``exports.write_csv``: formulas
    neutralised, mode 0600)."""
    fields = ["kind", "source", "external_id", "crm_gift_id", "constituent_id", "constituent", "platform_date", "crm_date",
              "platform_amount", "crm_amount", "detail", "fix"]  # fmt: skip
    totals = [
        {"kind": "total", "source": source, "platform_amount": t["platform_dollars"], "crm_amount": t["crm_dollars"],
         "detail": f"{t['platform_count']} platform transaction(s), {t['crm_count']} CRM gift(s) in {result['year']}; "
                   f"{t['blockers']} blocker(s)"}
        for source, t in result["totals"].items()
    ]  # fmt: skip
    exports.write_csv(path, fields, [*result["blockers"], *totals], numbers=("platform_amount", "crm_amount"))
