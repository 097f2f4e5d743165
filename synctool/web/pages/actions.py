"""Actions (``/admin/actions``): who did what, from the page, the admin API and the CLI, as `synctool syncs
actions` lists them."""

from __future__ import annotations

from typing import Any, TypedDict

from synctool.ops import actions as action_ops
from synctool.validation import parse
from synctool.web.pages.base import ViewResult
from synctool.web.request import StaffRequest


class ActionsPage(TypedDict):
    result: dict[str, Any]
    filters: dict[str, str]


def actions(request: StaffRequest) -> ViewResult:
    query = parse(action_ops.ActionsQuery, request.query, where="filters")
    return ViewResult(ActionsPage(result=action_ops.list_actions(request.conn, query), filters={}))
