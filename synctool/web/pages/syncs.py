"""The sync log (``/admin/syncs``), one sync record (``/admin/syncs/{id}``) and the failed ones (``/admin/failed``),
as `synctool syncs list|show` read them; retrying, resolving and releasing a record, as `synctool syncs retry|
resolve|release` do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from synctool.crm import currency
from synctool.errors import InvalidInput
from synctool.ops import actions as action_ops
from synctool.ops import syncs as sync_ops
from synctool.validation import parse
from synctool.web.pages import forms
from synctool.web.pages.base import ActionResult, ViewResult
from synctool.web.request import StaffRequest

#: the sync log's page size on the page (the API's default)
PAGE_SIZE = 50
#: the query string's filters the sync log reads
FILTERS = ("status", "source", "date_from", "date_to", "q", "page")


class SyncsPage(TypedDict):
    filters: dict[str, str]
    result: sync_ops.SyncPage | None
    problem: str | None
    statuses: tuple[str, ...]


class SyncRecordPage(TypedDict):
    record: dict[str, Any]
    actions: Sequence[Mapping[str, object]]


class FailedPage(TypedDict):
    result: sync_ops.SyncPage
    held: Sequence[Mapping[str, object]]
    filters: dict[str, str]


def syncs(request: StaffRequest) -> ViewResult:
    """The sync log, filtered as `synctool syncs list` filters it."""
    filters = {k: v for k, v in request.query.items() if k in FILTERS and v}
    page = SyncsPage(filters=filters, result=None, problem=None, statuses=sync_ops.STATUSES_WITH_RESOLVED)
    try:
        query = parse(sync_ops.SyncQuery, {**filters, "limit": PAGE_SIZE}, where="filters")
    except InvalidInput as exc:
        return ViewResult({**page, "problem": f"{exc} {exc.detail}"}, 400)
    return ViewResult({**page, "result": sync_ops.list_syncs(request.conn, query)})


def sync_record(request: StaffRequest) -> ViewResult:
    record = sync_ops.show_sync(request.conn, request.path["id"])
    actions = action_ops.list_actions(request.conn, action_ops.ActionsQuery(target=record["id"]))["items"]
    return ViewResult(SyncRecordPage(record=record, actions=actions))


def failed(request: StaffRequest) -> ViewResult:
    number = request.query.get("page") or "1"
    query = parse(sync_ops.SyncQuery, {"status": "failed", "page": number, "limit": PAGE_SIZE}, where="filters")
    # money in another currency, waiting for the bank's amount
    other_currency = currency.listing(request.conn, "pending", 100)
    return ViewResult(FailedPage(result=sync_ops.list_syncs(request.conn, query), held=other_currency, filters={}))


def retry(request: StaffRequest) -> ActionResult:
    job = sync_ops.retry(request.conn, request.path["id"])
    return ActionResult(f"Sync record {job['id'][:8]} is queued again; the next drain runs it.", job["id"])


def resolve(request: StaffRequest) -> ActionResult:
    note = (request.form.get("note") or "").strip()
    if not note:
        raise InvalidInput("a note is required", "say what was done about it")
    body = sync_ops.ResolveBody(notes=note, resolvedBy=request.user["email"])
    record = sync_ops.resolve(request.conn, request.path["id"], body)
    return ActionResult(f"Sync record {record['id'][:8]} is resolved.", record["id"])


def release(request: StaffRequest) -> ActionResult:
    """A job held for money in another currency, written at the amount the bank credited."""
    amount = {"amount": (request.form.get("amount") or "").strip()}
    body = forms.read(sync_ops.ReleaseBody, amount, {"amount": "amount the bank credited"})
    result = sync_ops.release(request.conn, request.path["id"], body, by=request.user["email"])
    return ActionResult(f"{result['held']} is released at {result['released']}; the next drain writes it.", result["job"])
