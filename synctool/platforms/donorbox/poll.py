"""What synctool reads from Donorbox besides its webhooks: the backup poll (the donations dated since the last run
that synctool has not seen, and their refunds; every plan, compared with synctool's record) and a failed job's donation afresh (``retry-all --fresh``).

Donorbox's list filters by the donation's date, not by when it changed: a refund of an older donation is found by
a poll whose window reaches that donation's day (``synctool poll --lookback 30d``) or by ``reconcile --fix``.
Donorbox keeps no record of failed deliveries (``webhooks heal`` has nothing to read)."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from synctool.platform import Runtime, SynctoolError, jobs, parse_iso, using, watermark
from synctool.platforms.donorbox import plans
from synctool.platforms.donorbox.models import ROLE, external_id
from synctool.platforms.donorbox.webhook import refunded_total

if TYPE_CHECKING:
    from synctool.platform import Connection, Row


def donation_job(donation: dict[str, Any], origin: str) -> dict[str, Any]:
    """The ``jobs.enqueue`` keywords of the job that makes ``donation``'s gift (what its webhook would queue)."""
    found = donation.get("donor")
    donor: dict[str, Any] = found if isinstance(found, dict) else {}
    return {"source": ROLE, "entity_type": "donation", "entity_id": str(donation["id"]),
            "external_id": external_id(donation["id"]), "payload": {"donation": donation, "origin": origin},
            "email": str(donor.get("email") or "")[:320] or None, "amount": str(donation.get("amount"))[:40]}  # fmt: skip


def refund_job(donation: dict[str, Any], origin: str) -> dict[str, Any] | None:
    """The ``jobs.enqueue`` keywords of the job that applies what ``donation``'s refunded total adds, or None."""
    total = refunded_total(donation)
    if total is None:
        return None
    return {"source": ROLE, "entity_type": "refund", "entity_id": f"{donation['id']}@{total}"[:80],
            "external_id": external_id(donation["id"]), "payload": {"donation": donation, "origin": origin},
            "amount": f"-{total}"[:40]}  # fmt: skip


def queue_refund(conn: Connection, rt: Runtime, donation: dict[str, Any], origin: str) -> int:
    """Queue the donation's refund job unless synctool has one for this refunded total already: 1 when queued."""
    job = refund_job(donation, origin)
    return 0 if job is None else watermark.queue_new(conn, rt.config.queue.max_attempts, **job)


def poll(conn: Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    """``synctool poll``: the donations Donorbox dates since the window's start (a day before it: the list
    filters by day), each queued unless a job already makes its gift, and each refunded total not yet queued."""
    section = rt.config.section(ROLE)
    started, since = watermark.window(conn, ROLE, overlap_minutes=section.poll_overlap_minutes,
                                      first_lookback_hours=section.poll_first_lookback_hours, fresh=fresh,
                                      lookback=lookback)  # fmt: skip
    start = parse_iso(since) or started
    with using(rt, ROLE) as client:
        found = client.donations(str((start - timedelta(days=1)).date()), str((started + timedelta(days=1)).date()))
        listed = client.plans()  # its list filters plans by their start only: every plan, compared with the record
        spent = client.api.requests_sent
    queued = refunds_queued = 0
    for donation in found:
        if donation.get("id") in (None, ""):
            continue
        queued += watermark.queue_unseen(conn, rt.config.queue.max_attempts, **donation_job(donation, "poll"))
        refunds_queued += queue_refund(conn, rt, donation, "poll")
    plans_seen, plans_queued = plans.queue_changed(conn, listed, origin="poll", max_attempts=rt.config.queue.max_attempts)
    result = {"since": since, "seen": len(found), "queued": queued + refunds_queued + plans_queued,
              "refunds_queued": refunds_queued, "plans_seen": plans_seen, "plans_queued": plans_queued,
              "requests": spent}  # fmt: skip
    watermark.save(conn, ROLE, started, result)
    return result


def refetch(conn: Connection, rt: Runtime, rows: list[Row]) -> tuple[int, list[str]]:
    """``retry-all --fresh``: each failed donation or refund job gets its donation as Donorbox holds it now."""
    refreshed, errors = 0, []
    wanted = [r for r in rows if r["entity_type"] in ("donation", "refund")]
    if not wanted:
        return 0, []
    with using(rt, ROLE) as client:
        for row in wanted:
            donation_id = str(row["entity_id"]).partition("@")[0]
            try:
                found = client.donation(donation_id)
            except SynctoolError as exc:
                errors.append(f"{donation_id}: {exc}")
                continue
            if found is None:
                errors.append(f"{donation_id}: Donorbox lists no such donation")
                continue
            jobs.set_payload(conn, row["id"], {"donation": found, "origin": "refetch", "fresh": True})
            refreshed += 1
    return refreshed, errors
