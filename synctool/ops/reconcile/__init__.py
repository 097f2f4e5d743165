"""`synctool reconcile`: prove that every platform dollar of a period is in the CRM, exactly once, at the
right amount (invariant 9: it reads; ``--fix`` only queues jobs that take the normal path).

The platforms list their money (``platforms/<p>/reconcile.py``); the CRM's gifts of the period come from
``GET /gifts/search`` with ``date_from`` / ``date_to``, at the largest page synctool asks for (250), so a
month of 2,000 gifts costs 8 requests. Both sides meet on the external id. Each platform item gets one
status: ``matched``, ``missing`` (with the sync log's reason), ``amount_differs``, ``date_differs`` or
``refund_not_applied``; a CRM gift with synctool's external id that no platform item explains is
``extra``. Gifts made by other tools (no synctool external id) are counted apart.

One idea a module: ``periods`` (the period), ``crm_side`` (what the CRM and synctool's ledger hold),
``comparison`` (each item's status), ``holds`` (money in another currency), ``review`` (the last run, and the
differences a person accepted), ``fixes`` (``--fix``), ``totals`` (the sums, the CSV), ``deposits``
(``reconcile payouts``). The names callers use are here.
"""

from synctool.ops.reconcile.comparison import Comparison, compare, reconcile
from synctool.ops.reconcile.crm_side import PAGE, source_of_gift
from synctool.ops.reconcile.deposits import PayoutsQuery, payouts
from synctool.ops.reconcile.holds import held_words, refunded_to
from synctool.ops.reconcile.items import SETTLED, STATUSES, ItemRow
from synctool.ops.reconcile.periods import period
from synctool.ops.reconcile.review import LAST_RUN, AcceptDifferenceBody, accept, accepted, differences, last_run
from synctool.ops.reconcile.totals import write_csv

__all__ = [
    "LAST_RUN",
    "PAGE",
    "SETTLED",
    "STATUSES",
    "AcceptDifferenceBody",
    "Comparison",
    "ItemRow",
    "PayoutsQuery",
    "accept",
    "accepted",
    "compare",
    "differences",
    "held_words",
    "last_run",
    "payouts",
    "period",
    "reconcile",
    "refunded_to",
    "source_of_gift",
    "write_csv",
]
