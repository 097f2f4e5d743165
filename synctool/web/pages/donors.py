"""Donors (``/admin/donors``): proposed donor changes to apply or dismiss, and gifts held for a donor match, as
`synctool donors changes|matches` list them and decide them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from synctool.ops import donors as donor_ops
from synctool.validation import parse
from synctool.web.pages.base import ActionResult, ViewResult
from synctool.web.request import StaffRequest


class DonorsPage(TypedDict):
    changes: donor_ops.Waiting
    matches: donor_ops.Waiting
    status: str


def donors(request: StaffRequest) -> ViewResult:
    """Donor changes to apply or dismiss, and gifts held for a donor match."""
    status = request.query.get("status") or "pending"
    changes = donor_ops.changes(request.conn, parse(donor_ops.ChangesQuery, {"status": status}, where="filters"))
    matches = donor_ops.matches(request.conn, donor_ops.MatchesQuery(status="pending"))
    return ViewResult(DonorsPage(changes=changes, matches=matches, status=status))


def _change(request: StaffRequest) -> donor_ops.DecideBody:
    return donor_ops.DecideBody(ids=[request.path["id"]])


def apply_change(request: StaffRequest) -> ActionResult:
    result = donor_ops.apply(request.conn, request.rt, _change(request))["results"][0]
    shown: Mapping[str, object] = result
    detail = f" ({shown['detail']})" if shown.get("detail") else ""
    return ActionResult(f"Donor change {result['id']}: {result['result']}" + detail, str(request.path["id"]))


def dismiss_change(request: StaffRequest) -> ActionResult:
    result = donor_ops.dismiss(request.conn, _change(request))["results"][0]
    return ActionResult(f"Donor change {result['id']}: {result['result']}", str(request.path["id"]))


def accept_match(request: StaffRequest) -> ActionResult:
    match = request.path["id"]
    body = donor_ops.AcceptMatchBody(constituent_id=request.form.get("constituent") or None)
    result = donor_ops.accept_match(request.conn, match, body, by=request.user["email"])
    return ActionResult(f"Donor match {match}: the gift goes to {result['decision']}; the next drain writes it.", str(match))


def new_constituent(request: StaffRequest) -> ActionResult:
    match = request.path["id"]
    donor_ops.new_constituent(request.conn, match, by=request.user["email"])
    return ActionResult(f"Donor match {match}: a new constituent; the next drain writes the gift.", str(match))
