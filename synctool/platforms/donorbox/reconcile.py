"""A period's money as Donorbox lists it (``reconcile``, ``backfill``). Donorbox's API has no payouts (its README
lists no such endpoint): ``reconcile payouts`` has nothing of Donorbox's to read."""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING

from synctool.platform import Expected, PermanentError, Runtime, payload, using
from synctool.platforms.donorbox.models import ROLE, ZERO, Donation, external_id
from synctool.platforms.donorbox.poll import donation_job, refund_job
from synctool.platforms.donorbox.rules import day, no_gift

if TYPE_CHECKING:
    from synctool.platform import Connection


def expected(conn: Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    """One ``Expected`` per donation of the period (its local day): its amount after its refunds, the job that
    syncs it and the job that applies its refunded total. Donorbox is asked for a day more either side."""
    section = rt.config.section(ROLE)
    with using(rt, ROLE) as client:
        listed = client.donations(str(start - timedelta(days=1)), str(end + timedelta(days=1)))
        spent = client.api.requests_sent
    items = []
    for data in listed:
        try:
            d = payload(Donation, data, f"Donorbox donation {str(data.get('id'))[:64]}")
        except PermanentError:
            continue  # a record that does not read is no money synctool can match; its job says why
        when = day(d, section.timezone, rt.config.timezone)
        if not str(start) <= when <= str(end):
            continue
        refunded = d.refunded
        refund = refund_job(data, "reconcile")
        items.append(
            Expected(
                ROLE,
                external_id(d.id),
                d.id,
                max(d.amount - refunded, ZERO),
                d.amount,
                when,
                sync_job=donation_job(data, "reconcile"),
                refund_jobs=[refund] if refund else [],
                currency=d.currency,
                deductible_why=f"{refunded} refunded" if refunded else None,
                no_gift=no_gift(d),
            )
        )
    return items, spent
