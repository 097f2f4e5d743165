"""What crosses the queue's edge: the fields a new job is made with (``JobFields``), the statuses it moves
through (``queue/jobs.py`` moves it, ``queue/log.py`` counts them), and the ``Outcome`` its handler reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

STATUSES = ("queued", "running", "succeeded", "skipped", "failed", "previewed", "review")


class JobFields(TypedDict, total=False):
    """What a new job holds beside its source, where it goes and what it is about (``jobs.enqueue``'s other
    arguments, which ``jobs.wake`` and ``jobs.enqueue_unless_waiting`` pass on)."""

    external_id: str | None
    #: what the job runs with when it has no delivery (the platform's record, as JSON)
    payload: dict[str, Any] | None
    email: str | None
    name: str | None
    amount: str | None
    status: str
    message: str | None
    max_attempts: int
    delivery_id: int | None


#: a new job's fields its maker does not name: queued (due now), three attempts, nothing else known
NEW_JOB: JobFields = {
    "external_id": None,
    "payload": None,
    "email": None,
    "name": None,
    "amount": None,
    "status": "queued",
    "message": None,
    "max_attempts": 3,
    "delivery_id": None,
}


class PreviewPlan(TypedDict):
    """What a previewed job would do (``jobs.preview`` keeps it): the constituent decision, the CRM writes with their
    exact bodies, how it would end and why, in words."""

    decision: str
    ends: str
    message: str
    writes: list[dict[str, object]]
    summary: str


@dataclass
class Outcome:
    """What a handler reports; ``status`` is ``succeeded`` or ``skipped``."""

    status: str = "succeeded"
    message: str | None = None
    crm_constituent_id: str | None = None
    crm_gift_id: str | None = None
    #: the other CRM records the job made, by what they are (``{"membership_id": "81"}``)
    crm_ids: dict[str, str] | None = None
    #: the gift's amount in dollars ("25.00"), when the handler learnt it (POS orders, payments)
    amount: str | None = None
