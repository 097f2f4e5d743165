"""The backup poll's and backfill's comparison of Givebutter's plans with synctool's record (``plans.queue_changed``
of the contract): ``GET /v1/plans`` has no filter, so every plan is read, and a plan job (``plan_job.py``) is queued
for each whose status, amount, frequency or next charge differ from the record. Reads of the platform only."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from synctool.platform import PlanRecord, SynctoolError, parse
from synctool.platform import plans as core
from synctool.platforms.givebutter.plans import SOURCE, record_of
from synctool.platforms.givebutter.webhook import Plan, supporter_name

if TYPE_CHECKING:
    from synctool.platform import Connection


def queue_changed(conn: Connection, listed: Iterable[dict[str, Any]], *, origin: str, max_attempts: int) -> tuple[int, int]:
    """A plan job for each listed plan that differs from the record and has none waiting (``poll:<plan>:<status>:
    <amount>:<frequency>:<next charge>`` as its event id, so a replay queues nothing); (plans seen, jobs queued)."""
    seen = 0

    def readable() -> Iterator[tuple[PlanRecord, dict[str, Any]]]:
        nonlocal seen
        for item in listed:
            seen += 1
            try:
                yield record_of(parse(Plan, item, where="a Givebutter plan")), item
            except SynctoolError:
                continue

    queued = core.queue_changed(conn, SOURCE, readable(), origin=origin, max_attempts=max_attempts, name=supporter_name)
    return seen, queued
