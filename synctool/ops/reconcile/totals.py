"""A reconcile's sums: its rows by status, the money per platform and per fund on both sides, what other tools
made; and its rows as a CSV for the bookkeeper."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any, TypedDict

from synctool.money import dollars
from synctool.ops import exports
from synctool.ops.reconcile.crm_side import CrmGift
from synctool.ops.reconcile.items import STATUSES, ItemRow

#: counts and dollars (``"12.50"``, to the cent) of one platform's, or one fund's, side
Sums = dict[str, int | str]


class Totals(TypedDict):
    by_status: dict[str, int]
    per_source: dict[str, Sums]
    per_fund: dict[str, Sums]
    other_tools: Sums


def _text(d: dict[str, int | Decimal]) -> Sums:
    return {k: f"{v:.2f}" if isinstance(v, Decimal) else v for k, v in d.items()}


def totals(items: list[ItemRow], others: list[CrmGift]) -> Totals:
    by_status: dict[str, int] = {s: 0 for s in STATUSES}
    per_source: dict[str, dict[str, int | Decimal]] = defaultdict(
        lambda: {"platform_count": 0, "platform_dollars": Decimal(0), "crm_count": 0, "crm_dollars": Decimal(0)}
    )
    per_fund: dict[str, dict[str, int | Decimal]] = defaultdict(lambda: {"crm_count": 0, "crm_dollars": Decimal(0)})
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
    return {
        "by_status": by_status,
        "per_source": {k: _text(v) for k, v in sorted(per_source.items())},
        "per_fund": {k: _text(v) for k, v in sorted(per_fund.items())},
        "other_tools": {
            "count": len(others),
            "dollars": f"{sum((dollars(g.get('received_amount') or 0) for g in others), Decimal(0)):.2f}",
        },
    }


def write_csv(result: dict[str, Any], path: str | Path) -> None:
    """Every item, one row each (``exports.write_csv``: formulas neutralised, mode 0600)."""
    fields = ["source", "external_id", "platform_id", "status", "platform_amount", "crm_amount", "crm_gift_id",
              "platform_date", "crm_date", "fund", "reason"]  # fmt: skip
    exports.write_csv(path, fields, result["items"], numbers=("platform_amount", "crm_amount"))
