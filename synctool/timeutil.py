"""Parsing the times and durations operators type (``24h``, ``7d``, ``2026-11-01``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from synctool.errors import InvalidInput

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: str) -> timedelta:
    match = _DURATION.match(value or "")
    if not match:
        raise InvalidInput(f"not a duration: {value!r}", "use a number and a unit: 90s, 15m, 24h, 7d, 2w")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def parse_iso(value: str | None, *, assume_utc: bool = True) -> datetime | None:
    """An ISO-8601 time (with ``Z`` or an offset; synctool's own stamps too) as an aware datetime in UTC, or
    None when empty or not a time. A time without an offset is UTC, or is left naive (the platform's local
    time) when ``assume_utc`` is false."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC) if assume_utc else moment
    return moment.astimezone(UTC)


def age_s(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds since an ISO-8601 time, or None."""
    moment = parse_iso(value)
    return None if moment is None else ((now or datetime.now(UTC)) - moment).total_seconds()


def parse_moment(value: str, *, now: datetime | None = None) -> datetime:
    """A duration ago (``24h``), or an ISO date/datetime (naive means UTC)."""
    now = now or datetime.now(UTC)
    if _DURATION.match(value or ""):
        return now - parse_duration(value)
    moment = parse_iso(value)
    if moment is None:
        raise InvalidInput(f"not a date or duration: {value!r}", "use 2026-11-01, 2026-11-01T09:30:00Z or 24h")
    return moment
