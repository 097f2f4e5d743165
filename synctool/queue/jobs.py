"""The jobs table: the queue and the sync log in one.

A job moves ``queued -> running -> succeeded | skipped | failed``. A failed attempt with attempts left
goes back to ``queued`` with ``run_after`` later; after the last attempt (or a permanent error) it stays
``failed`` until an operator retries or resolves it. Claiming is one conditional UPDATE under SQLite's
write lock, so two drains never take the same job, and the lease (owner + expiry) lets the next drain
reclaim a job whose drain was killed. No more than ``MAX_RUNNING`` jobs of a target run at once,
counted across every process.

On PostgreSQL, which locks rows rather than the database, a claim is alone among claims (``store.exclusive``:
what it counts, the running jobs of a target and of a gift, cannot change under it) and takes its job ``FOR
UPDATE SKIP LOCKED``; ``wake`` and ``enqueue_unless_waiting`` are alone with their entity, and ``wake`` locks the
job it marks, so a job finishing at that moment either sees the mark or is followed by a new job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Unpack

from synctool import store
from synctool.queue.attempts import abandon_attempt, close_attempt, open_attempt, retry_delay_s
from synctool.queue.log import get as get
from synctool.queue.log import next_due_in as next_due_in
from synctool.queue.shapes import NEW_JOB, JobFields, Outcome, PreviewPlan
from synctool.queue.shapes import STATUSES as STATUSES
from synctool.timeutil import parse_iso

#: the targets the core knows: the CRM, and two the spec names whose jobs are left for processors of their
#: own; a platform adds its own (``platforms.Target``)
TARGETS = ("crm", "cms", "messaging")
MAX_RUNNING = 3
#: taking a job for a drain: running, under its lease, one attempt more
_TAKE = "UPDATE jobs SET status = 'running', lease_owner = ?, lease_expires = ?, attempts = attempts + 1, updated_at = ?"
#: the attempt given back (a wait, a preview, a hold, a rerun do not count against the job's retries)
_GIVE_BACK = "attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END"


def enqueue(
    conn: store.Connection,
    *,
    source: str,
    entity_type: str,
    entity_id: str,
    target: str = "crm",
    force: bool = False,
    **fields: Unpack[JobFields],
) -> str:
    """Create a job (inside the caller's transaction, if any) and return its id; what else it holds is ``fields``
    (``JobFields``: by default ``NEW_JOB``'s, queued and due now)."""
    now = store.iso()
    job_id = store.new_id()
    job = {**NEW_JOB, **fields}
    row = {
        "id": job_id,
        "source": source,
        "target": target,
        "entity_type": entity_type,
        "entity_id": str(entity_id),
        "force": int(force),
        **job,
        "payload": json.dumps(job["payload"]) if job["payload"] is not None else None,
        "run_after": now,
        "created_at": now,
        "updated_at": now,
        "finished_at": None if job["status"] == "queued" else now,
    }
    conn.execute(f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
    return job_id


def enqueue_unless_waiting(
    conn: store.Connection,
    *,
    source: str,
    target: str,
    entity_type: str,
    entity_id: str,
    force: bool = False,
    **fields: Unpack[JobFields],
) -> str:
    """The id of an identical job still waiting in the queue, else of a new one (``enqueue``'s fields)."""
    with store.atomic(conn):
        store.exclusive(conn, f"job:{target}:{entity_type}:{entity_id}")
        waiting = conn.execute(
            "SELECT id FROM jobs WHERE target = ? AND entity_type = ? AND entity_id = ?"
            " AND status = 'queued' AND force = ? LIMIT 1",
            (target, entity_type, entity_id, int(force)),
        ).fetchone()
        if waiting:
            return waiting[0]
        return enqueue(conn, source=source, target=target, entity_type=entity_type, entity_id=entity_id, force=force, **fields)


def wake(
    conn: store.Connection, *, source: str, target: str, entity_type: str, entity_id: str, **fields: Unpack[JobFields]
) -> str:
    """A piece a job waits for has arrived (committed before this call): the entity's job runs as soon as a worker
    is free, whatever it waited for, and whatever the threads' timing. A queued one is made due now; a running
    one is marked woken (its ``run_after`` moved past the one it was claimed with): should it end waiting
    (``wait``) it is queued due now, should it end done (``finish``) it runs once more, as it may have read before
    the piece landed; one held for review stays held (a person decides first); with none, a new job due now
    (``enqueue``'s fields). Returns the job's id."""
    now = store.iso()
    with store.atomic(conn):
        store.exclusive(conn, f"job:{target}:{entity_type}:{entity_id}")
        found = conn.execute(
            "SELECT id, status, run_after FROM jobs WHERE target = ? AND entity_type = ? AND entity_id = ? AND force = 0"
            " AND (status IN ('queued', 'running') OR (status = 'review' AND resolved_at IS NULL))"
            f" ORDER BY status = 'review' DESC, status = 'queued' DESC, {store.dialect.arrival(conn=conn)} LIMIT 1"
            f"{store.dialect.locked(conn)}",
            (target, entity_type, entity_id),
        ).fetchone()
        if found is None:
            return enqueue(conn, source=source, target=target, entity_type=entity_type, entity_id=entity_id, **fields)
        if found["status"] == "review":  # held for a person's decision: it runs when they decide (``release_held_of``)
            return found["id"]
        if found["status"] == "queued":
            conn.execute(
                "UPDATE jobs SET run_after = CASE WHEN run_after > ? THEN ? ELSE run_after END WHERE id = ?",
                (now, now, found["id"]),
            )
        else:  # a mark later than the one it was claimed with, even under a stopped clock
            claimed = parse_iso(found["run_after"])
            mark = max(now, store.iso(claimed + timedelta(microseconds=1))) if claimed else now
            conn.execute("UPDATE jobs SET run_after = ? WHERE id = ? AND status = 'running'", (mark, found["id"]))
        return found["id"]


def claim(
    conn: store.Connection,
    owner: str,
    *,
    targets: tuple[str, ...] = ("crm",),
    serial: tuple[str, ...] = (),
    lease_seconds: float = 300,
    max_running: int = MAX_RUNNING,
) -> store.Row | None:
    """Take the next due job of ``targets`` (earlier targets first), or one whose lease expired, for
    ``owner``; None when none is due or ``max_running`` jobs are already running. Records the attempt.
    The jobs of a ``serial`` target run one at a time, in arrival order (they change local records)."""
    now = store.utcnow()
    now_s = store.iso(now)
    expires = store.iso(now + timedelta(seconds=lease_seconds))
    marks = ",".join("?" * len(targets))
    order = "CASE target " + " ".join(f"WHEN ? THEN {n}" for n in range(len(targets))) + " END"
    one_at_a_time = ",".join("?" * len(serial)) or "''"  # none: NOT IN (NULL) would run one job a target at a time
    with store.atomic(conn):
        # PostgreSQL: what the claim counts stays as it read it. SKIP LOCKED alone would take each job once, but
        # two claims at once could both see a gift's other job not running, or the target under max_running
        store.exclusive(conn, "jobs:claim")
        row = conn.execute(
            f"{_TAKE} WHERE id = (SELECT id FROM jobs WHERE target IN ({marks}) AND ("
            "   (status = 'queued' AND run_after <= ?) OR (status = 'running' AND lease_expires < ?))"
            f"   AND (target NOT IN ({one_at_a_time}) OR NOT EXISTS (SELECT 1 FROM jobs AS r WHERE r.target = jobs.target"
            "        AND r.status = 'running' AND r.lease_expires >= ?))"
            # one writer per external id: a job waits while another for the same gift runs
            "   AND (external_id IS NULL OR NOT EXISTS (SELECT 1 FROM jobs AS w WHERE w.external_id = jobs.external_id"
            "        AND w.status = 'running' AND w.lease_expires >= ?))"
            f"   ORDER BY {order}, run_after, {store.dialect.arrival(conn=conn)} LIMIT 1{store.dialect.locked(conn, skip=True)})"
            f" AND (SELECT count(*) FROM jobs WHERE target IN ({marks}) AND status = 'running' AND lease_expires >= ?) < ?"
            " RETURNING *",
            (owner, expires, now_s, *targets, now_s, now_s, *serial, now_s, now_s, *targets, *targets, now_s, max_running),
        ).fetchone()
        if row is None:
            return None
        abandon_attempt(conn, row["id"], now_s)
        open_attempt(conn, row["id"], row["attempts"], owner, now_s)
    return row


def claim_one(conn: store.Connection, job_id: str, owner: str, *, lease_seconds: float = 300) -> store.Row | None:
    """Claim one specific queued job (an operator's "sync now"); None if it is not queued."""
    now = store.utcnow()
    with store.atomic(conn):
        row = conn.execute(
            f"{_TAKE} WHERE id = ? AND status = 'queued' RETURNING *",
            (owner, store.iso(now + timedelta(seconds=lease_seconds)), store.iso(now), job_id),
        ).fetchone()
        if row is not None:
            open_attempt(conn, job_id, row["attempts"], owner, store.iso(now))
    return row


def record_crm_ids(conn: store.Connection, job_id: str, *, constituent_id: str | None = None, gift_id: str | None = None) -> None:
    """Record CRM ids as soon as they exist, so a crash after the write still leaves them on the job."""
    with store.atomic(conn):
        conn.execute(
            "UPDATE jobs SET crm_constituent_id = coalesce(?, crm_constituent_id),"
            " crm_gift_id = coalesce(?, crm_gift_id), updated_at = ? WHERE id = ?",
            (constituent_id, gift_id, store.iso(), job_id),
        )


def learn_external_id(conn: store.Connection, job_id: str, external_id: str) -> None:
    """A job that learnt its CRM idempotency key while it ran (a refund that names its payment, whose
    order names the gift): recorded, so the job is serialised with, and woken by, that gift's jobs. It replaces
    what the job was queued with: a refund may arrive naming another record (a return order), not the sale
    whose gift it reduces."""
    with store.atomic(conn):
        conn.execute("UPDATE jobs SET external_id = ? WHERE id = ?", (external_id, job_id))


def _end_attempt(
    conn: store.Connection,
    job: store.Row,
    owner: str,
    assignments: str,
    params: tuple[str | int | None, ...],
    now: str,
    outcome: str,
    error: str | None,
    crm_requests: int,
) -> bool:
    """Set ``assignments`` on a job ``owner`` still runs, release its lease and close its attempt as ``outcome``,
    in one transaction; False when the lease was lost to another drain (nothing is changed then)."""
    with store.atomic(conn):
        cur = conn.execute(
            f"UPDATE jobs SET {assignments}, lease_owner = NULL, lease_expires = NULL, updated_at = ?"
            " WHERE id = ? AND lease_owner = ? AND status = 'running'",
            (*params, now, job["id"], owner),
        )
        if cur.rowcount != 1:
            return False
        close_attempt(conn, job["id"], outcome, error, crm_requests, now)
    return True


def finish(conn: store.Connection, job: store.Row, owner: str, outcome: Outcome, crm_requests: int = 0) -> bool:
    """Mark a running job succeeded or skipped. False if the lease was lost to another drain."""
    now = store.iso()
    with store.atomic(conn):
        cur = conn.execute(
            "UPDATE jobs SET status = ?, message = ?, last_error = NULL, lease_owner = NULL, lease_expires = NULL,"
            " crm_constituent_id = coalesce(?, crm_constituent_id), crm_gift_id = coalesce(?, crm_gift_id),"
            " crm_ids = coalesce(?, crm_ids), amount = coalesce(?, amount), updated_at = ?, finished_at = ?"
            " WHERE id = ? AND lease_owner = ? AND status = 'running'",
            (
                outcome.status,
                outcome.message,
                outcome.crm_constituent_id,
                outcome.crm_gift_id,
                json.dumps(outcome.crm_ids) if outcome.crm_ids else None,
                outcome.amount,
                now,
                now,
                job["id"],
                owner,
            ),
        )
        if cur.rowcount != 1:
            return False
        close_attempt(conn, job["id"], outcome.status, None, crm_requests, now)
        # woken while it ran (``wake``): it may have read before the piece landed, so it runs once more, now
        conn.execute(
            f"UPDATE jobs SET status = 'queued', run_after = ?, finished_at = NULL, {_GIVE_BACK},"
            " message = ? WHERE id = ? AND run_after != ?",
            (now, f"{outcome.message or outcome.status}; runs again: what it reads changed while it ran"[:2000],
             job["id"], job["run_after"]),
        )  # fmt: skip
        if job["external_id"]:
            # a job waiting for this one (a refund for the gift it just made) need not sleep out its wait
            conn.execute(
                "UPDATE jobs SET run_after = ? WHERE external_id = ? AND status = 'queued' AND run_after > ?",
                (now, job["external_id"], now),
            )
    return True


def fail(
    conn: store.Connection,
    job: store.Row,
    owner: str,
    error: str,
    *,
    permanent: bool,
    retry_delay_ms: float,
    retry_after_s: float | None = None,
    crm_requests: int = 0,
) -> str:
    """Record a failed attempt. Returns the new status: ``queued`` (retry later) or ``failed``."""
    now_dt = store.utcnow()
    now = store.iso(now_dt)
    attempts = job["attempts"]
    if permanent or attempts >= job["max_attempts"]:
        status, run_after = "failed", job["run_after"]
    else:
        status, run_after = (
            "queued",
            store.iso(now_dt + timedelta(seconds=retry_delay_s(attempts, retry_delay_ms, retry_after_s))),
        )
    _end_attempt(conn, job, owner, "status = ?, last_error = ?, run_after = ?, finished_at = CASE WHEN ? = 'failed' THEN ? ELSE NULL END",
                 (status, error[:2000], run_after, status, now), now, "failed", error[:2000], crm_requests)  # fmt: skip
    return status


def wait(conn: store.Connection, job: store.Row, owner: str, message: str, after_s: float, crm_requests: int = 0) -> str:
    """The job cannot go on yet (``errors.Wait``): queued again ``after_s`` from now with ``message`` in
    words, and the attempt given back (it does not count against the job's retries). Returns ``queued``."""
    now_dt = store.utcnow()
    now = store.iso(now_dt)
    due = store.iso(now_dt + timedelta(seconds=max(after_s, 0)))
    # woken while it ran (``wake``: what it waited for has arrived): due now, not after its wait
    kept = _end_attempt(conn, job, owner, "status = 'queued', message = ?, run_after = CASE WHEN run_after != ? THEN ? ELSE ? END,"
                        f" {_GIVE_BACK}", (message[:2000], job["run_after"], now, due), now, "waiting",
                        message[:2000], crm_requests)  # fmt: skip
    return "queued" if kept else "lost"


def preview(conn: store.Connection, job: store.Row, owner: str, plan: PreviewPlan, crm_requests: int = 0) -> str:
    """Preview mode: the job ran every rule and wrote nothing; it ends ``previewed`` with its ``plan`` (the
    decision, the bodies it would send, and how it would end). Returns ``previewed``, or ``lost``."""
    now = store.iso()
    kept = _end_attempt(conn, job, owner, "status = 'previewed', plan = ?, message = ?, last_error = NULL,"
                        f" {_GIVE_BACK}, finished_at = ?",
                        (json.dumps(plan), plan["summary"][:2000], now), now, "previewed", None, crm_requests)  # fmt: skip
    return "previewed" if kept else "lost"


def hold(conn: store.Connection, job: store.Row, owner: str, message: str, crm_requests: int = 0) -> str:
    """The job waits for a person's decision about its donor (``donors.matching``): ``review``, not failed and
    not retried; the attempt does not count. Returns ``review``, or ``lost``."""
    now = store.iso()
    kept = _end_attempt(conn, job, owner, f"status = 'review', message = ?, last_error = NULL, {_GIVE_BACK}",
                        (message[:2000],), now, "review", None, crm_requests)  # fmt: skip
    return "review" if kept else "lost"


def _queue_now(conn: store.Connection, where: str, params: tuple[str, ...] = ()) -> int:
    """The jobs ``where`` picks are queued again, due now. Returns how many."""
    now = store.iso()
    with store.atomic(conn):
        return conn.execute(
            f"UPDATE jobs SET status = 'queued', run_after = ?, updated_at = ? WHERE {where}", (now, now, *params)
        ).rowcount


def release_held(conn: store.Connection, job_ids: list[str]) -> int:
    """A person decided: these jobs held for review are queued again, due now. Returns how many."""
    return _queue_now(conn, f"status = 'review' AND id IN ({','.join('?' * len(job_ids)) or 'NULL'})", tuple(job_ids))


def release_held_of(conn: store.Connection, *, target: str, entity_type: str, entity_id: str) -> int:
    """A person decided what held an entity's job (``release_held``, found by what it is about). Returns how many."""
    where = "status = 'review' AND resolved_at IS NULL AND target = ? AND entity_type = ? AND entity_id = ?"
    return _queue_now(conn, where, (target, entity_type, entity_id))


def release_previewed(conn: store.Connection) -> int:
    """Going live: every previewed job is queued to run for real, due now. Returns how many."""
    return _queue_now(conn, "status = 'previewed'")


def renew(conn: store.Connection, owners: list[str], lease_seconds: float) -> int:
    """The heartbeat: extend the leases of the jobs ``owners`` are running and the locks those jobs hold, by
    one lease from now. Returns how many leases were extended."""
    if not owners:
        return 0
    expires = store.iso(store.utcnow() + timedelta(seconds=lease_seconds))
    with store.atomic(conn):
        marks = ",".join("?" * len(owners))
        renewed = conn.execute(
            f"UPDATE jobs SET lease_expires = ? WHERE status = 'running' AND lease_owner IN ({marks})", (expires, *owners)
        ).rowcount
        store.renew_locks(conn, owners, lease_seconds)
    return renewed


#: an operator retry gives the job this many fresh attempts
RETRY_ATTEMPTS = 3


def requeue_failed(conn: store.Connection, job_id: str | None = None, *, source: str | None = None) -> int:
    """An operator's retry: failed -> queued with ``RETRY_ATTEMPTS`` fresh attempts, due now, no longer
    resolved. One job (``job_id``), or every unresolved failed job (of ``source``). Returns how many."""
    now = store.iso()
    where = store.Where().add("status = 'failed'")
    if job_id is not None:
        where.add("id = ?", job_id)
    else:
        where.add("resolved_at IS NULL")
        if source:
            where.add("source = ?", source)
    with store.atomic(conn):
        return conn.execute(
            "UPDATE jobs SET status = 'queued', max_attempts = attempts + ?, run_after = ?, finished_at = NULL,"
            f" resolved_at = NULL, resolved_by = NULL, updated_at = ? {where}",
            (RETRY_ATTEMPTS, now, now, *where.params),
        ).rowcount


def resolve(
    conn: store.Connection, job_id: str, *, by: str | None, notes: str | None, statuses: tuple[str, ...] = ("failed",)
) -> bool:
    """Mark a failed (or, when ``statuses`` says so, a held) unresolved job resolved without running it; False
    when it is not one."""
    now = store.iso()
    marks = ",".join("?" * len(statuses))
    with store.atomic(conn):
        resolved = conn.execute(
            "UPDATE jobs SET resolved_at = ?, resolved_by = ?, notes = ?, updated_at = ?"
            f" WHERE id = ? AND status IN ({marks}) AND resolved_at IS NULL",
            (now, by, notes, now, job_id, *statuses),
        )
    return resolved.rowcount == 1


def set_payload(conn: store.Connection, job_id: str, payload: Mapping[str, object]) -> None:
    """Replace what a job will run with (``retry-all --fresh`` puts the platform's current record there)."""
    with store.atomic(conn):
        conn.execute("UPDATE jobs SET payload = ?, updated_at = ? WHERE id = ?", (json.dumps(payload), store.iso(), job_id))
