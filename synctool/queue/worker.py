"""`drain`: claim due jobs, run their handlers, record every attempt.

Handlers are found by ``(source, entity_type)`` in ``HANDLERS`` (the platforms register theirs with
``@handler``) and called as ``handler(event, job)``; the ``JobRunner`` drain is given (the platforms'
``platforms.runner.Runner``) builds both for each claimed job. A handler returns an ``Outcome`` or raises: ``Skip`` ends the job as skipped,
``TransientError`` retries it later, ``PermanentError`` and ``ConfigError`` fail it at once (a person must
fix the cause, then retry), anything else is an internal error and is retried like a transient one.
A job runs in its unit of work (``queue.unit``): what its handler writes commits at the points the handler names
around its CRM writes, and the rest commits with the job's own row at its end.
Drain is time-boxed for cron and safe to overlap with itself: the lease and the claim's conditional
UPDATE see to that.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field

from synctool import settings, store
from synctool.errors import (
    ConfigError,
    NeedsReview,
    PermanentError,
    Skip,
    SynctoolError,
    TransientError,
    Wait,
)
from synctool.queue import jobs
from synctool.queue.handlers import HANDLERS, JobRunner, RunningJob, find, handler

__all__ = ["HANDLERS", "handler", "drain", "run_job", "DrainSummary"]

logger = logging.getLogger("synctool.drain")


@dataclass
class DrainSummary:
    claimed: int = 0
    succeeded: int = 0
    skipped: int = 0
    retrying: int = 0
    failed: int = 0
    previewed: int = 0
    #: held for a person's decision about the donor (``donors.matching: review``)
    review: int = 0
    crm_requests: int = 0
    elapsed_s: float = 0.0
    failed_jobs: list[str] = field(default_factory=list)

    #: ``live`` or ``preview`` (``synctool sync-mode``)
    mode: str = "live"

    def line(self) -> str:
        return (
            f"drain [{self.mode}]: {self.claimed} jobs in {self.elapsed_s:.1f} s: {self.succeeded} succeeded, "
            f"{self.skipped} skipped, {self.retrying} to retry, {self.failed} failed"
            + (f", {self.previewed} previewed (nothing written to the CRM)" if self.mode == "preview" else "")
            + (f", {self.review} held for review (synctool overview says why)" if self.review else "")
            + f"; {self.crm_requests} CRM requests"
        )


def run_job(
    runner: JobRunner,
    running: RunningJob,
    summary: DrainSummary | None = None,
    lock: threading.Lock | None = None,
    *,
    record: store.Connection | None = None,
    preview: bool = False,
) -> str:
    """Run one claimed job to its next status and record the attempt (on ``record``, when the handler works
    on a copy of the database: preview mode); returns that status."""
    job = running.row
    record = record or running.conn
    if preview:
        runner.start_plan()
    fn = find(job["source"], job["entity_type"])
    error: str | None = None
    permanent = False
    retry_after = None
    outcome = None
    waiting: Wait | None = None
    held: NeedsReview | None = None
    # the locks the handler takes through its connection live and lapse with this job's lease
    holder = store.LockHolder(running.owner, running.config.queue.lease_seconds)
    # the job's unit of work: bound while it runs, its writes committed at the points its handler names
    work = running.unit
    with work.bind():
        try:
            if fn is None:
                raise PermanentError(f"no handler for {job['source']} jobs of type {job['entity_type']!r}")
            with store.held_by(running.conn, holder):
                outcome = fn(runner.event(running), running) or jobs.Outcome()
        except Skip as exc:
            outcome = jobs.Outcome(status="skipped", message=exc.reason)
        except NeedsReview as exc:
            held = exc
        except Wait as exc:
            waiting = exc
        except TransientError as exc:
            error, retry_after = str(exc), exc.retry_after
        except (PermanentError, ConfigError) as exc:
            error, permanent = str(exc), True
        except SynctoolError as exc:
            error = str(exc)
        except Exception as exc:  # a bug: keep the job, tell the operator, log the traceback
            logger.exception("job %s: internal error", job["id"])
            error = f"internal error: {type(exc).__name__}: {exc}"
        work.recover()
        if record is not running.conn:  # preview: the copy lets go of the job before the database records it
            work.commit("job end")
            store.release_snapshot(running.conn)
        with ExitStack() as ending:
            if record is running.conn:  # the job's row commits with what its handler gathered since its last point
                ending.enter_context(work.gather())
            status = _record(runner, running, job, record, preview, outcome, waiting, held, error, permanent, retry_after)
        work.commit("job end")
    if summary is not None:
        with lock or threading.Lock():
            summary.crm_requests += running.crm_requests
            if status in ("succeeded", "skipped", "failed", "previewed", "review"):
                setattr(summary, status, getattr(summary, status) + 1)
            elif status == "queued":
                summary.retrying += 1
            if status == "failed":
                summary.failed_jobs.append(job["id"])
    return status


def _record(
    runner: JobRunner,
    running: RunningJob,
    job: store.Row,
    record: store.Connection,
    preview: bool,
    outcome: jobs.Outcome | None,
    waiting: Wait | None,
    held: NeedsReview | None,
    error: str | None,
    permanent: bool,
    retry_after: float | None,
) -> str:
    """Record how the job's attempt ended, on ``record``; its next status."""
    if preview and (outcome is not None or waiting is not None or permanent or held is not None):
        plan = _plan(runner, outcome, waiting, error, held)
        status = jobs.preview(record, job, running.owner, plan, running.crm_requests)
    elif held is not None:
        status = jobs.hold(record, job, running.owner, held.reason, running.crm_requests)
        logger.info("job %s held for review: %s", job["id"], held.reason)
    elif outcome is not None:
        status = outcome.status if jobs.finish(record, job, running.owner, outcome, running.crm_requests) else "lost"
    elif waiting is not None:
        status = jobs.wait(record, job, running.owner, str(waiting), waiting.retry_after or 0, running.crm_requests)
        logger.info("job %s waits %.0f s: %s", job["id"], waiting.retry_after or 0, waiting)
    else:
        status = jobs.fail(
            record,
            job,
            running.owner,
            error or "no outcome",
            permanent=permanent,
            retry_delay_ms=running.config.queue.retry_delay_ms,
            retry_after_s=retry_after,
            crm_requests=running.crm_requests,
        )
        logger.log(
            logging.WARNING if status == "failed" else logging.INFO,
            "job %s (%s %s %s): %s; now %s",
            job["id"],
            job["source"],
            job["entity_type"],
            job["entity_id"],
            error,
            status,
        )
    return status


def _plan(
    runner: JobRunner, outcome: jobs.Outcome | None, waiting: Wait | None, error: str | None, held: NeedsReview | None = None
) -> jobs.PreviewPlan:
    """What a previewed job would do: the constituent decision, the CRM writes with their exact bodies, and
    how the job would end."""
    writes = runner.plan()
    if held is not None:
        ends, message = "would wait for review", held.reason
    elif outcome is not None:
        ends, message = f"would be {outcome.status}", outcome.message or ""
    elif waiting is not None:
        ends, message = "would wait", str(waiting)
    else:
        ends, message = "would fail", error or ""
    said = runner.decision(writes)
    return {"decision": said, "ends": ends, "message": message, "writes": writes, "summary": f"{ends}: {said}; {message}"}


def run_now(runner: JobRunner, conn: store.Connection, job_id: str) -> store.Row | None:
    """Run one queued job immediately, in this process (operator commands that sync "now")."""
    rt = runner.rt
    owner = f"{socket.gethostname()}:{os.getpid()}:now"
    job = jobs.claim_one(conn, job_id, owner, lease_seconds=rt.config.queue.lease_seconds)
    if job is not None:
        runner.ready()
        preview = job["target"] == "crm" and settings.sync_mode(conn) == "preview"  # "now" previews too
        runner.preview = preview
        copy = store.snapshot(conn) if preview else conn
        try:
            run_job(runner, runner.context(job, copy, owner, store.iso()), record=conn, preview=preview)
        finally:
            runner.close()
            if copy is not conn:
                copy.close()
    return jobs.get(conn, job_id)


def heartbeat(rt, owners: list[str], done: threading.Event) -> None:
    """While a drain runs, renew its jobs' leases and its locks every third of a lease: a live drain keeps
    what it holds however long a job takes (the pacer's wait, a slow CRM), a dead one loses it within one
    lease (``queue.lease_seconds``)."""
    lease = rt.config.queue.lease_seconds
    conn: store.Connection | None = rt.open_database(migrate=False)
    try:
        while not done.wait(lease / 3):
            try:
                conn = conn or rt.open_database(migrate=False)
                jobs.renew(conn, owners, lease)
            except (store.Error, ConfigError) as exc:
                # a busy database, or one that went away (a PostgreSQL restart or failover ends every session): the
                # next beat tries again on a fresh connection, well inside the lease
                logger.warning("drain heartbeat: %s", exc)
                if conn is not None:
                    conn.close()
                conn = None
    finally:
        if conn is not None:
            conn.close()


def drain(
    runner: JobRunner,
    *,
    max_seconds: float = 55,
    max_jobs: int | None = None,
    concurrency: int = 3,
    targets: tuple[str, ...] | None = None,
    on_job: Callable[[DrainSummary], None] | None = None,
    stop: threading.Event | None = None,
    run_started: str | None = None,
) -> DrainSummary:
    """Run due jobs until none is due, ``max_jobs`` ran, or ``max_seconds`` passed.

    ``targets`` (default: the runner's) are run in order: the platforms' local targets whose jobs make CRM
    jobs, then ``crm`` jobs, then the other platform targets; ``cms`` and ``messaging`` jobs are left for
    their own processors. Once ``stop`` is set, no new job is claimed: the running ones
    finish and are recorded. ``runner`` gives the handlers their clients; it is closed at the end. ``run_started``
    (default: now) is when the run began, for a drain that is one slice of a longer run (a host's turns): the CRM
    mirror is refreshed at most once in the whole run."""
    rt = runner.rt
    targets = targets or runner.targets
    setup = rt.open_database(migrate=False)
    try:
        mode = settings.sync_mode(setup)
    finally:
        setup.close()
    preview = mode == "preview"
    runner.preview = preview
    # preview jobs run one at a time, on a copy of the database that each run throws away
    concurrency = 1 if preview else max(1, min(concurrency, jobs.MAX_RUNNING))
    copy: list[store.Connection] = []
    started = time.monotonic()
    run_started = run_started or store.iso()  # one run: the CRM mirror is refreshed at most once in it
    deadline = started + max_seconds
    summary = DrainSummary(mode=mode)
    lock = threading.Lock()
    owner_base = f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident() % 10000}"

    def take_slot() -> bool:
        with lock:
            if stop is not None and stop.is_set():
                return False
            if max_jobs is not None and summary.claimed >= max_jobs:
                return False
            summary.claimed += 1
            return True

    def give_back() -> None:
        with lock:
            summary.claimed -= 1

    owners = [f"{owner_base}/{n}" for n in range(concurrency)]

    def worker(n: int) -> None:
        try:
            work(n)
        except (store.Error, ConfigError) as exc:
            if isinstance(exc, ConfigError) and exc.key != "database":
                raise
            # the database went away (a PostgreSQL restart or failover): this worker's run ends here, a job it held
            # is taken over when its lease lapses, as a killed drain's is; the next run connects afresh
            logger.warning("drain worker %s: the database failed, its run ends: %s", n, exc)

    def work(n: int) -> None:
        owner = owners[n]
        conn = rt.open_database(migrate=False)
        try:
            while time.monotonic() < deadline:
                if not take_slot():
                    return
                job = jobs.claim(conn, owner, targets=targets, serial=runner.serial, lease_seconds=rt.config.queue.lease_seconds)
                if job is None:
                    give_back()
                    due = jobs.next_due_in(conn, targets)
                    remaining = deadline - time.monotonic()
                    if due is None or due > remaining:
                        return
                    pause = min(max(due, 0.05), remaining, 1.0)
                    if stop is not None:
                        stop.wait(pause)
                    else:
                        time.sleep(pause)
                    continue
                runner.ready()
                if preview and job["target"] == "crm":
                    if not copy or not copy[0].execute("SELECT 1 FROM jobs WHERE id = ?", (job["id"],)).fetchone():
                        copy[:] = [store.snapshot(conn)]  # first job, or one newer than the copy
                    context = runner.context(job, copy[0], owner, run_started)
                    run_job(runner, context, summary, lock, record=conn, preview=True)
                else:
                    run_job(runner, runner.context(job, conn, owner, run_started), summary, lock)
                if on_job:
                    on_job(summary)
        finally:
            conn.close()

    threads = [threading.Thread(target=worker, args=(n,), name=f"drain-{n}") for n in range(concurrency)]
    done = threading.Event()
    beat = threading.Thread(target=heartbeat, args=(rt, owners, done), name="drain-heartbeat", daemon=True)
    for t in threads:
        t.start()
    beat.start()
    for t in threads:
        t.join()
    done.set()
    beat.join()
    runner.close()
    for c in copy:
        c.close()
    summary.elapsed_s = time.monotonic() - started
    conn = rt.open_database(migrate=False)
    try:
        with store.atomic(conn):
            settings.put(conn, "last_drain", {"at": store.iso(), "summary": summary.line()})
    finally:
        conn.close()
    return summary


def watch(
    runner: JobRunner,
    stop: threading.Event,
    *,
    interval_s: float = 30.0,
    max_seconds: float = 55,
    concurrency: int = 3,
    on_run: Callable[[DrainSummary], None] | None = None,
) -> DrainSummary:
    """``drain --watch``: drain runs back to back for a host that prefers a service to cron. When a run
    finds nothing due, wait ``interval_s`` (the spec's 30 s queue poll) or until ``stop``. Each run is a
    run of its own (the CRM mirror is refreshed at most once in it). Once ``stop`` is set, the running jobs
    finish and nothing new is claimed, so no job is left leased. Returns the totals."""
    totals = DrainSummary()
    started = time.monotonic()
    while not stop.is_set():
        try:
            summary = drain(runner, max_seconds=max_seconds, concurrency=concurrency, stop=stop)
            for name in ("claimed", "succeeded", "skipped", "retrying", "failed", "review", "crm_requests"):
                setattr(totals, name, getattr(totals, name) + getattr(summary, name))
            totals.failed_jobs += summary.failed_jobs
            if on_run is not None:
                on_run(summary)
        except (store.Error, ConfigError) as exc:
            if isinstance(exc, ConfigError) and exc.key != "database":
                raise
            # the database out of reach for a moment (a PostgreSQL restart or failover): a service waits and tries
            # again, as systemd would restart it, without a traceback
            logger.warning("drain --watch: the database failed; trying again in %g s: %s", interval_s, exc)
            stop.wait(interval_s)
            continue
        if not summary.claimed:
            stop.wait(interval_s)
    totals.elapsed_s = time.monotonic() - started
    return totals
