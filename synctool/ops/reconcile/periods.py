"""The period a reconcile (or a payouts report) covers."""

from __future__ import annotations

from datetime import date, timedelta

from synctool import store
from synctool.errors import InvalidInput
from synctool.timeutil import parse_duration


def period(start: str | None, end: str | None, today: date | None = None) -> tuple[date, date]:
    """The inclusive period: dates (``2026-10-01``) or a duration back from today (``30d``); by default the
    last full calendar month."""
    today = today or store.utcnow().date()

    def day(value: str) -> date:
        try:
            return date.fromisoformat(value)
        except ValueError:
            return today - parse_duration(value)  # InvalidInput names the value when it is neither

    if start is None and end is None:
        last = today.replace(day=1) - timedelta(days=1)
        return last.replace(day=1), last
    first = day(start) if start else today.replace(day=1)
    final = day(end) if end else today
    if final < first:
        raise InvalidInput(f"--to {final} is before --from {first}")
    return first, final
