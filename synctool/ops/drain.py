"""Draining the queue as the operator and cron do it: the run, then the failure digest for what failed for
good in it, then the mail waiting in the outbox (`synctool drain`, and each run of `synctool drain --watch`)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from synctool import notices, store
from synctool.ops import outbox, sign_in
from synctool.ops.alerts import Digest, after_drain
from synctool.platforms.runner import runner
from synctool.queue.worker import DrainSummary
from synctool.queue.worker import drain as drain_queue
from synctool.queue.worker import watch as watch_queue
from synctool.runtime import Runtime


def drain(
    conn: store.Connection,
    rt: Runtime,
    *,
    max_seconds: float = 55,
    max_jobs: int | None = None,
    concurrency: int = 3,
    on_job: Callable[[DrainSummary], None] | None = None,
    stop: threading.Event | None = None,
    run_started: str | None = None,
) -> tuple[DrainSummary, Digest | None]:
    """One run of the due jobs, then the digest e-mail; returns the summary and what the alert did. Once ``stop`` is
    set no job is claimed (a host's `drain --watch` told to stop); ``run_started``: a host's run this drain is a
    slice of (``queue.worker.drain``)."""
    send_mail(conn, rt)  # first: a sign-in link is waited for by a person, a job by nobody
    summary = drain_queue(
        runner(rt),
        max_seconds=max_seconds,
        max_jobs=max_jobs,
        concurrency=concurrency,
        on_job=on_job,
        stop=stop,
        run_started=run_started,
    )
    return summary, after_drain(conn, rt, summary.failed_jobs)


def watch(
    conn: store.Connection,
    rt: Runtime,
    stop: threading.Event,
    *,
    interval_s: float,
    concurrency: int = 3,
    on_run: Callable[[DrainSummary], None] | None = None,
) -> DrainSummary:
    """Runs back to back until ``stop``, each followed by its digest; returns the totals."""

    current: list[store.Connection] = [conn]

    def after_run(summary: DrainSummary) -> None:
        if not current:
            current.append(rt.open_database(migrate=False))
        try:
            after_drain(current[0], rt, summary.failed_jobs)
            send_mail(current[0], rt)
        except store.Error:
            # the database went away (a PostgreSQL restart ends every session): the next run's digest and mail go
            # through a fresh connection (the watch waits and tries again: queue.worker.watch)
            dropped = current.pop()
            if dropped is not conn:
                dropped.close()
            raise
        if on_run is not None:
            on_run(summary)

    return watch_queue(runner(rt), stop, interval_s=interval_s, concurrency=concurrency, on_run=after_run)


def send_mail(conn: store.Connection, rt: Runtime) -> dict[str, int]:
    """The mail waiting in the outbox, each kind through its sender; then the chat notices (``synctool.notices``)."""
    sent = outbox.send_due(conn, rt, {outbox.SIGN_IN: sign_in.send_link})
    notices.send_due(conn, rt)
    return sent
