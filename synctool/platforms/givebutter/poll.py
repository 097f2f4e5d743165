"""The backup poll of the donation platform (spec: poll-now, poll-fresh, dev poll-cron).

Reads transactions created since the saved watermark minus an overlap (``createdAfter``), 100 a page, and
queues the succeeded ones that have no gift job yet (a refund job that names one does not count: its gift
still has to be made). Then reads the transactions changed since the same point
(``updatedAfter``, the API's own filter: a refund moves ``updated_at``) and queues a refund job for each whose
refunded parts add up to more than the refunds synctool has applied to its gift; then every recurring plan
(``GET /v1/plans`` takes no filter: every page), queueing a plan job for each whose status, amount, frequency or
next charge differ from synctool's record (``plan_changes.queue_changed``). Three requests when nothing is new and the
plans fit a page. The platform's 429 and ``Retry-After`` are honoured by the client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool.platform import Runtime, SynctoolError, jobs, log, payload, refunds, store, using, watermark
from synctool.platforms import givebutter
from synctool.platforms.givebutter import checkins, plan_changes
from synctool.platforms.givebutter.webhook import Refund, external_id, refunded_parts, supporter_name

if TYPE_CHECKING:
    from synctool.platform import Connection


def poll(conn: Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None, client=None) -> dict[str, Any]:
    started, since_text = watermark.window_of(
        conn, "donations", givebutter.DonationsConfig.of(rt.config), fresh=fresh, lookback=lookback
    )
    seen = queued = refunds_seen = refunds_queued = 0
    with using(rt, "donations", client) as donations:
        for txn in donations.transactions_since(since_text, per_page=100):
            seen += 1
            if str(txn.get("status") or "").lower() != "succeeded" or not txn.get("id"):
                continue
            queued += watermark.queue_unseen(
                conn,
                rt.config.queue.max_attempts,
                source="donations",
                entity_type="transaction",
                entity_id=str(txn["id"]),
                external_id=external_id(txn["id"]),
                payload={"transaction": txn, "origin": "poll"},
                email=txn.get("email"),
                name=supporter_name(txn),
                amount=str(txn.get("amount")),
            )
        for txn in donations.transactions_updated_since(since_text, per_page=100):
            refunds_seen += 1
            refunds_queued += _queue_refund(conn, rt, txn)
        # every recurring plan (the list has no filter): a job for each that changed since the record (a lost webhook)
        plans_seen, plans_queued = plan_changes.queue_changed(
            conn, donations.plans(per_page=100), origin="poll", max_attempts=rt.config.queue.max_attempts
        )
        # the check-ins of mapped event campaigns, from a day before each event to two days after it
        checked = checkins.poll_checkins(conn, rt, donations)
        requests = donations.api.requests_sent
    result = {
        "since": since_text,
        "seen": seen,
        "transactions_seen": seen,
        "queued": queued + refunds_queued + plans_queued + (checked or {}).get("orders_queued", 0),
        "updated_seen": refunds_seen,
        "refunds_queued": refunds_queued,
        "plans_seen": plans_seen,
        "plans_queued": plans_queued,
        "requests": requests,
        "fresh": bool(fresh or lookback),
    }
    if checked is not None:
        result["checkins"] = checked
    watermark.save(conn, "donations", started, result)
    return result


def _queue_refund(conn: Connection, rt: Runtime, txn: dict[str, Any]) -> int:
    """A refund job for a transaction refunded beyond what its gift's refunds hold (its webhook was lost)."""
    try:
        refunded = refunded_parts(payload(Refund, txn, "a Givebutter transaction"))
    except SynctoolError:
        return 0
    if refunded <= 0 or not txn.get("id"):
        return 0
    ext = external_id(txn["id"])
    with store.atomic(conn):
        if refunded <= refunds.refunded_so_far(conn, ext) or log.has_entity_job(
            conn, "donations", "refund", str(txn["id"]), unfinished=True
        ):
            return 0
        jobs.enqueue(
            conn,
            source="donations",
            entity_type="refund",
            entity_id=str(txn["id"]),
            external_id=ext,
            payload={"refund": txn, "origin": "poll"},
            email=txn.get("email"),
            name=supporter_name(txn),
            amount=f"-{refunded}",
            max_attempts=rt.config.queue.max_attempts,
        )
    return 1
