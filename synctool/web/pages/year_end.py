"""Year end (``/admin/year-end``): the last year-end check of a year, as `synctool year-end check` stored it."""

from __future__ import annotations

from typing import Any, TypedDict

from synctool.errors import InvalidInput
from synctool.ops import year_end as year_end_ops
from synctool.web.pages.base import ViewResult
from synctool.web.request import StaffRequest


class YearEndPage(TypedDict):
    year: int
    check: dict[str, Any] | None


def year_end(request: StaffRequest) -> ViewResult:
    """This season's year by default (last year's in January); the page runs no check."""
    today = year_end_ops.today(request.rt)
    try:
        year = int(request.query.get("year") or today.year - (1 if today.month == 1 else 0))
    except ValueError:
        raise InvalidInput("the year must be a number") from None
    return ViewResult(YearEndPage(year=year, check=year_end_ops.last(request.conn, year)))
