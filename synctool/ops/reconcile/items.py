"""The rows a reconcile lists: one per platform item, and one per CRM gift with synctool's external id that no
item explains, each with one status."""

from __future__ import annotations

from typing import TYPE_CHECKING, NotRequired, TypedDict

from synctool.platforms.reconcile import Expected

if TYPE_CHECKING:
    from synctool import store

STATUSES = ("missing", "held", "refund_not_applied", "amount_differs", "date_differs", "extra", "accepted", "matched")
#: statuses that are not a difference
SETTLED = ("matched", "accepted")


class Difference(TypedDict):
    """What a row says of a difference, as the last run keeps it (``reconcile last``, ``reconcile accept``)."""

    external_id: str
    source: str
    status: str
    platform_amount: str | None
    crm_amount: str | None
    crm_gift_id: str | None
    platform_date: str | None
    crm_date: str | None
    reason: str | None


class ItemRow(Difference):
    """One row of a reconcile; the keys that start with ``_`` are what it compared, never shown: the platform
    item, and for a ``missing`` one its newest job and whether the CRM gift synctool made vanished."""

    platform_id: str | None
    fund: str | None
    _item: NotRequired[Expected]
    _job: NotRequired[store.Row | None]
    _vanished: NotRequired[bool]


def kept(row: Difference) -> Difference:
    """A difference as the last run keeps it (a row without what only this run needs)."""
    return {
        "external_id": row["external_id"],
        "source": row["source"],
        "status": row["status"],
        "platform_amount": row["platform_amount"],
        "crm_amount": row["crm_amount"],
        "crm_gift_id": row["crm_gift_id"],
        "platform_date": row["platform_date"],
        "crm_date": row["crm_date"],
        "reason": row["reason"],
    }
