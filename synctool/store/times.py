"""Times as synctool stores them: UTC ISO-8601 text with microseconds and a ``Z``, which sorts in time order."""

from __future__ import annotations

from datetime import UTC, datetime

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime | None = None) -> str:
    """UTC ISO-8601 with microseconds and a ``Z``; sorts as text in time order."""
    moment = moment or utcnow()
    return moment.astimezone(UTC).strftime(TIME_FORMAT)
