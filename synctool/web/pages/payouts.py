"""Payouts (``/admin/payouts``): a period's payouts, read from the platforms as `synctool reconcile payouts` reads
them."""

from __future__ import annotations

from typing import Any, TypedDict

from synctool.ops import reconcile as reconcile_ops
from synctool.validation import parse
from synctool.web.pages.base import ViewResult
from synctool.web.request import StaffRequest


class PayoutsPage(TypedDict):
    result: dict[str, Any] | None
    start: str
    end: str


def payouts(request: StaffRequest) -> ViewResult:
    """The form; with a period, the payouts of that period (the one page that spends requests, and only when
    asked)."""
    query = parse(reconcile_ops.PayoutsQuery, request.query, where="filters")
    result = None
    if query.start or request.query.get("run"):
        result = reconcile_ops.payouts(request.conn, request.rt, start=query.start, end=query.end, source=query.source)
    return ViewResult(PayoutsPage(result=result, start=query.start or "", end=query.end or ""))
