"""The member portal's money in a period, for ``synctool reconcile``: its succeeded payments (held
locally: the portal pushes them, Stripe confirms them), one gift per cart group, less the Stripe refunds
synctool was told of."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import TYPE_CHECKING

from synctool.platform import Expected, Runtime, SyncError, cents_to_dollars
from synctool.platforms.portal import records as portal_records
from synctool.platforms.portal.payments import NO_MONEY, gift_groups, no_money

if TYPE_CHECKING:
    from synctool.platform import Connection


def expected(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    items = []
    rows = conn.execute(
        "SELECT id FROM portal_payments WHERE status = 'succeeded' AND substr(created_at, 1, 10) BETWEEN ? AND ?",
        (str(start), str(end)),
    ).fetchall()
    for row in rows:
        payment = portal_records.get(conn, "payment", row["id"])
        try:
            groups = gift_groups(conn, payment)
        except SyncError:
            groups = [("donations", payment["amount_cents"])]
        for key, cents in groups:
            ext = payment["id"] if len(groups) == 1 else f"{payment['id']}-{key}"
            reported = conn.execute("SELECT job_id, amount, state FROM refunds WHERE gift_external_id = ?", (ext,)).fetchall()
            refunded = sum((Decimal(r["amount"]) for r in reported), Decimal(0))
            items.append(
                Expected(
                    "portal",
                    ext,
                    payment["id"],
                    max(cents_to_dollars(cents) - refunded, Decimal("0.00")),
                    cents_to_dollars(cents),
                    (payment.get("created_at") or "")[:10],
                    sync_job={
                        "source": "portal",
                        "entity_type": "payment",
                        "entity_id": payment["id"],
                        "external_id": payment["id"],
                        "payload": {"origin": "reconcile"},
                    },
                    refund_jobs=[{"retry": r["job_id"]} for r in reported if r["state"] != "applied" and r["job_id"]],
                    no_gift=NO_MONEY if no_money(payment, groups) else None,
                )
            )
    return items, 0
