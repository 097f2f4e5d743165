"""What a platform says it took in, for reconciliation (``ops/reconcile.py`` compares it with the CRM).

Each platform with money lists a period's items as ``Expected``: the gift it should be in the CRM, at
which amount (after refunds) and on which day (as the sync dates it), and how ``reconcile --fix`` queues
what is missing or a refund not applied, through the normal path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


@dataclass
class Expected:
    source: str
    external_id: str
    platform_id: str
    #: what the CRM gift should hold now (after refunds), and before refunds
    amount: Decimal
    gross: Decimal
    #: the gift date, as the sync would write it (YYYY-MM-DD)
    date: str
    #: ``jobs.enqueue`` keywords that sync it, as the backup poll would
    sync_job: dict[str, Any] = field(default_factory=dict)
    #: ``jobs.enqueue`` keywords of the jobs that apply its refunds
    refund_jobs: list[dict[str, Any]] = field(default_factory=list)
    #: the currency the platform names for it (None: the organisation's): reconcile lists another one's as held
    currency: str | None = None
    #: the most the CRM gift's deductible amount may be now (after refunds), when less than ``amount``: a
    #: ticket's fair market value, a shop sale; None when the whole amount is deductible
    deductible: Decimal | None = None
    #: why, in words (``ticket: fair market value 40.00``), for ``year-end check``
    deductible_why: str | None = None
    #: why the sync writes no gift for it, as its job says (``no money (comped ticket)``): reconcile and year end
    #: count it as matched while the CRM holds no gift for it, never as missing
    no_gift: str | None = None

    def most_deductible(self) -> Decimal:
        return self.amount if self.deductible is None else min(self.deductible, self.amount)


@dataclass
class PayoutLine:
    """One transaction's share of a payout (a bank deposit)."""

    external_id: str
    platform_id: str
    gross: Decimal
    fee: Decimal
    refund: Decimal
    #: what reached the bank for it: the gift's ``deposited_amount``
    net: Decimal


@dataclass
class Payout:
    source: str
    payout_id: str
    #: the deposit's day (YYYY-MM-DD): the gifts' ``deposit_date``
    date: str
    lines: list[PayoutLine] = field(default_factory=list)
    #: the deposit as the platform states it (None when it states none)
    net: Decimal | None = None
    #: the currency the platform names for it (None: the organisation's); another one's deposits are held
    currency: str | None = None
