"""The shapes that cross between synctool and the CRM (Little Green Light's API v1, ``lgl-openapi.json``).

``JsonObject`` is an object exactly as LGL answered it, before synctool reads it: LGL adds fields, leaves others
out and sends ids as numbers or text, so nothing about it is promised. What synctool builds itself, or keeps in its
own tables, has a TypedDict here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, SupportsInt, TypedDict

#: one JSON object as the CRM answered it (or as a caller hands it on to the CRM unread)
JsonObject = dict[str, Any]

#: a CRM id as synctool holds it: LGL answers numbers, synctool's ledgers keep text
CrmId = int | str

#: an amount as ``money.dollars`` reads it (a number, or its text)
Amount = Decimal | int | float | str

#: a value SQLite stores in a column
Column = str | int | float | bytes | None


class MirrorRefresh(TypedDict):
    """What one refresh of the constituent mirror did."""

    kind: str
    since: str
    requests: int
    rows: int


class LastRefresh(TypedDict):
    kind: str | None
    requests: int | None
    rows: int | None
    seconds: float | None


class MirrorStatus(TypedDict):
    """What the operator sees of the constituent mirror (``crm mirror``, ``crm budget``, ``doctor``)."""

    constituents: int
    emails: int
    watermark: str | None
    refreshed_at: str | None
    age_s: float | None
    full_loaded_at: str | None
    last_refresh: LastRefresh


def as_int(value: str | SupportsInt | None) -> int | None:
    """A CRM id as a number, whether LGL sent it as a number or as text; None when it is none."""
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def same_id(value: object, wanted: object) -> bool:
    """Whether a CRM answer's id field names ``wanted`` (LGL sends ids as numbers, synctool keeps text)."""
    return value is not None and str(value) == str(wanted)
