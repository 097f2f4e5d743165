"""``reconcile --fix``: for each difference, queue what the normal path should do, or say why nothing."""

from __future__ import annotations

from typing import TypedDict

from synctool import store
from synctool.ops.reconcile.items import SETTLED, ItemRow
from synctool.platforms.reconcile import Expected
from synctool.queue import jobs
from synctool.runtime import Runtime


class Fixed(TypedDict):
    """What ``--fix`` did for one difference: the job it queued or retried, or why nothing."""

    external_id: str
    status: str
    action: str
    job_id: str | None
    why: str | None


def _fixed(r: ItemRow, action: str, job_id: str | None = None, why: str | None = None) -> Fixed:
    return {"external_id": r["external_id"], "status": r["status"], "action": action, "job_id": job_id, "why": why}


def fix(conn: store.Connection, rt: Runtime, items: list[ItemRow]) -> list[Fixed]:
    """For each difference, queue what the normal path should do, or say why nothing: a failed job is retried,
    money that never arrived is queued as the backup poll would, a gift synctool made that vanished from the
    CRM is re-made (a forced job), a refund not applied gets its refund job. Nothing else changes."""
    done: list[Fixed] = []
    max_attempts = rt.config.queue.max_attempts
    for r in items:
        if r["status"] in SETTLED:
            continue
        item = r.get("_item")
        if item is None:  # extra: no platform item to sync from
            done.append(
                _fixed(
                    r, "nothing", why="no platform transaction explains it: delete it in the CRM, or `synctool reconcile accept`"
                )
            )
        elif r["status"] == "missing":
            with store.atomic(conn):
                done.append(_fix_missing(conn, r, item, max_attempts))
        elif r["status"] == "held":
            done.append(_fixed(r, "nothing", why=r["reason"]))
        elif r["status"] == "refund_not_applied":
            done += _fix_refund(conn, r, item, max_attempts)
        else:  # amount_differs, date_differs: the CRM holds the gift, changed by a person or a rule
            done.append(_fixed(r, "nothing", why="the gift is in the CRM as a person or a rule left it: correct it there, or "
                              f"`synctool reconcile accept {r['external_id']} --note ...`"))  # fmt: skip
    return done


def _fix_missing(conn: store.Connection, r: ItemRow, item: Expected, max_attempts: int) -> Fixed:
    """Money with no CRM gift: re-make a vanished gift, queue what never arrived, retry a failed job."""
    job = r.get("_job")
    if r.get("_vanished"):
        payload = {**item.sync_job.get("payload", {}), "origin": "reconcile --fix: re-made"}
        spec = {**item.sync_job, "payload": payload}
        job_id = jobs.enqueue(conn, max_attempts=max_attempts, force=True, **spec)
        return _fixed(r, "re-made", job_id, f"{r['reason']}; a forced job makes it again through the normal path")
    if job is None:
        return _fixed(r, "queued", jobs.enqueue(conn, max_attempts=max_attempts, **item.sync_job))
    if job["status"] == "failed":
        jobs.requeue_failed(conn, job["id"])
        return _fixed(r, "retried", job["id"])
    if job["status"] in ("queued", "running"):
        return _fixed(r, "nothing", job["id"], f"its job is {job['status']}: `synctool drain` runs it")
    if job["status"] == "review":
        return _fixed(r, "nothing", job["id"], "held until someone says who the donor is: `synctool donors matches`")
    return _fixed(r, "nothing", job["id"], f"{r['reason']}: fix the cause, then `synctool jobs retry {job['id']}`")


def _fix_refund(conn: store.Connection, r: ItemRow, item: Expected, max_attempts: int) -> list[Fixed]:
    """A refund the CRM gift does not show: retry its failed refund job, or queue the refund jobs."""
    done: list[Fixed] = []
    if not item.refund_jobs:
        done.append(_fixed(r, "nothing", why="the platform lists no refund to apply; check the gift in the CRM"))
    for spec in item.refund_jobs:
        with store.atomic(conn):
            if "retry" in spec:
                row = jobs.get(conn, spec["retry"])
                if row is not None and row["status"] == "failed":
                    jobs.requeue_failed(conn, spec["retry"])
                    done.append(_fixed(r, "refund retried", spec["retry"]))
                else:
                    done.append(_fixed(r, "nothing", spec["retry"], f"its refund job is {row['status'] if row else 'gone'}"))
                continue
            done.append(_fixed(r, "refund queued", jobs.enqueue(conn, max_attempts=max_attempts, **spec)))
    return done
