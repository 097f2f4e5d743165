"""Money in another currency than the organisation's: held until a person releases it (with what the bank
credited) or resolves it without a gift (``crm/currency.py``), as reconcile and year end say it."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING

from synctool.money import dollars
from synctool.ops.reconcile.items import ItemRow
from synctool.platforms.reconcile import Expected

if TYPE_CHECKING:
    from synctool import store


def held_words(hold: store.Row) -> str:
    """A currency hold, in words, for reconcile and year end."""
    amount = f"{hold['amount']} {hold['currency']} in a {hold['organisation_currency']} organisation"
    if hold["status"] == "released":
        return f"{amount}: released at {hold['released_amount']} by {hold['decided_by'] or 'someone'} (job {hold['job_id'][:8]})"
    if hold["status"] == "resolved":
        return f"{amount}: resolved by {hold['decided_by'] or 'someone'} without a gift (job {hold['job_id'][:8]})"
    return f"held: {amount}; `synctool jobs release {hold['job_id'][:8]} --amount ...` (what the bank credited) or `synctool syncs resolve`"


def refunded_to(item: Expected, released: store.Row) -> Decimal:
    """A released gift's refunds, in the organisation's currency: the platform's refunded share of the released
    amount (none when it refunded nothing)."""
    if item.gross <= 0 or item.amount >= item.gross:
        return Decimal("0.00")
    return (dollars(released["released_amount"]) * (item.gross - item.amount) / item.gross).quantize(Decimal("0.01"))


def apply_hold(row: ItemRow, hold: store.Row | None) -> None:
    """Money in another currency than the organisation's is ``held`` while a person has not released it (never
    ``missing``); one they resolved without a gift is settled (``accepted``, saying so)."""
    if row["status"] not in ("missing", "amount_differs", "refund_not_applied"):
        return
    if hold is not None and hold["status"] == "pending" and row["crm_gift_id"] is None:
        row["status"], row["reason"] = "held", held_words(hold)
    elif hold is not None and hold["status"] == "resolved" and row["crm_gift_id"] is None:
        row["status"], row["reason"] = "accepted", held_words(hold)
