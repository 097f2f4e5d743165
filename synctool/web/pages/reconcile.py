"""Reconcile (``/admin/reconcile``): the last reconcile's differences and those a person accepted, as `synctool
reconcile` stores them; accepting a difference, as `synctool reconcile accept` does."""

from __future__ import annotations

from typing import Any, TypedDict

from synctool.ops import reconcile as reconcile_ops
from synctool.web.pages.base import ActionResult, ViewResult
from synctool.web.request import StaffRequest


class ReconcilePage(TypedDict):
    differences: dict[str, Any]
    reviewed: list[dict[str, Any]]


def reconcile(request: StaffRequest) -> ViewResult:
    differences = reconcile_ops.differences(request.conn)
    reviewed = reconcile_ops.accepted(request.conn)["items"][:50]
    return ViewResult(ReconcilePage(differences=differences, reviewed=reviewed))


def accept(request: StaffRequest) -> ActionResult:
    external_id = request.form.get("target") or ""
    row = reconcile_ops.accept(request.conn, external_id, request.form.get("note") or "", request.user["email"])
    return ActionResult(f"The difference on {row['external_id']} is accepted.", row["external_id"])
