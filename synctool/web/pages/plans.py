"""Plans (``/admin/plans``, ``/admin/plans/{id}``): monthly donors, as `synctool plans list|show` read them, with
the two figures a board asks for (monthly donors now, and their giving per month)."""

from __future__ import annotations

from typing import TypedDict

from synctool.ops import plans as plan_ops
from synctool.validation import parse
from synctool.web.pages.base import ViewResult
from synctool.web.request import StaffRequest


class PlansPage(TypedDict):
    result: plan_ops.PlanList
    figures: plan_ops.Figures
    statuses: tuple[str, ...]
    failed_7d: int


class PlanDetailPage(TypedDict):
    plan: plan_ops.PlanDetail


def plans(request: StaffRequest) -> ViewResult:
    """`synctool plans list [--status S]`, with the figures."""
    query = parse(plan_ops.PlansQuery, {k: v for k, v in request.query.items() if v}, where="filters")
    return ViewResult(
        PlansPage(
            result=plan_ops.list_plans(request.conn, query),
            figures=plan_ops.figures(request.conn, request.rt),
            statuses=plan_ops.STATUSES,
            failed_7d=plan_ops.failed_recently(request.conn),
        )
    )


def plan_detail(request: StaffRequest) -> ViewResult:
    """`synctool plans show ID`."""
    return ViewResult(PlanDetailPage(plan=plan_ops.show_plan(request.conn, request.rt, request.path["id"])))
