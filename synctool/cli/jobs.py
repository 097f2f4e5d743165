"""`synctool jobs`, `retry-all` and `drain`: the queue."""

from __future__ import annotations

import sys
import threading

import typer

from synctool.cli.host import host_parts, part_runtime, said
from synctool.cli.syncs import for_people
from synctool.console import AsJson, Columns, action, ctx_obj, options_as, render, sub_app

app = sub_app("The job queue: list it, and put failed jobs back. Pending and failed jobs, and retries.")

JOB_COLUMNS = ["id", "target", "entity", "status", "attempts", "run_after", "last_error"]


@app.command("list")
def jobs_list(
    ctx: typer.Context,
    status: str = typer.Option("all", help="all, pending (queued or running) or failed"),
    target: str = typer.Option(
        None, help="a job target: crm, cms, messaging, or one a platform adds (synctool platforms lists them)"
    ),
    limit: int = typer.Option(100, help="at most this many (1-500)"),
    as_json: AsJson = False,
    columns: Columns = None,
) -> None:
    """List jobs, newest first.

    Example: synctool jobs list --status failed --target crm
    """
    from synctool.ops.syncs import list_jobs

    rows = list_jobs(ctx_obj(ctx).db, status=status, target=target, limit=limit)
    render(rows, as_json, rows=[for_people(r) for r in rows], columns=JOB_COLUMNS, chosen=columns)


@app.command("retry")
@action(target="job_id")
def jobs_retry(
    ctx: typer.Context,
    job_id: str = typer.Argument(..., help="the failed job's id"),
    as_json: AsJson = False,
) -> None:
    """Put a failed job back in the queue (failed -> queued) with fresh attempts.

    Example: synctool jobs retry 0b7e3c1e-6a1f-4c55-9d43-2f0f6c1b9a10
    """
    from synctool.ops.syncs import retry

    row = retry(ctx_obj(ctx).db, job_id)
    render(row, as_json, people=lambda _: typer.echo(f"job {job_id} queued; the next drain runs it"))


@app.command("release")
@action(target="job_id", note="amount")
def jobs_release(
    ctx: typer.Context,
    job_id: str = typer.Argument(..., help="the held job's id (or its first 8 characters, as `synctool overview` shows)"),
    amount: str = typer.Option(..., "--amount", help="what the bank credited, in the organisation's currency (54.12)"),
    as_json: AsJson = False,
) -> None:
    """Release a job held for money in another currency ("held: 74.16 CAD in a USD organisation"): it is queued
    again and the next drain writes the gift (or refund, or deposit) once at --amount, the amount the bank
    credited, with a note naming the original amount and currency. `synctool syncs resolve ID` settles it
    without writing anything instead.

    Example: synctool jobs release 0b7e3c1e --amount 54.12
    """
    import getpass

    from synctool.ops.syncs import ReleaseBody, release
    from synctool.validation import parse

    result = release(ctx_obj(ctx).db, job_id, parse(ReleaseBody, {"amount": amount}, where="options"), by=getpass.getuser())
    render(
        result,
        as_json,
        people=lambda r: typer.echo(
            f"job {r['job']}: {r['held']} released at {r['released']}; {r['jobs_queued']} job(s) queued, the next drain writes it"
        ),
    )


@action(target="source")
def retry_all(
    ctx: typer.Context,
    source: str = typer.Option(None, help="only this source's failed jobs"),
    fresh: bool = typer.Option(False, "--fresh", help="re-fetch the source data (donation transactions) first"),
    as_json: AsJson = False,
) -> None:
    """Put every unresolved failed job back in the queue.

    Example: synctool retry-all --source donations --fresh
    """
    from synctool.ops.syncs import SourceQuery
    from synctool.ops.syncs import retry_all as retry_all_op

    obj = ctx_obj(ctx)
    result = retry_all_op(obj.db, options_as(ctx, SourceQuery), fresh=fresh, rt=obj.rt)
    render(result, as_json, people=lambda r: typer.echo(f"{r['requeued']} failed jobs queued again"))


def drain(
    ctx: typer.Context,
    max_seconds: float = typer.Option(55, help="stop claiming new jobs after this long (cron: under a minute)"),
    max_jobs: int = typer.Option(None, help="stop after this many jobs"),
    concurrency: int = typer.Option(None, help="jobs run at once (1-3; default: queue.concurrency in config, 3)"),
    watch: bool = typer.Option(
        False, "--watch", help="keep running as a service: claim jobs as they come, stop cleanly on SIGTERM or Ctrl-C"
    ),
    interval: float = typer.Option(
        None, "--interval", help="with --watch: seconds to wait when nothing is due (default queue.watch_interval_s, 30)"
    ),
) -> None:
    """Run the queued CRM jobs that are due. Safe to overlap with itself; cron runs it every minute.

    Quiet with one summary line when not on a terminal; a progress bar when it is. With --watch it runs
    until SIGTERM or SIGINT, then lets the running jobs finish (none is left leased) and exits 0; see
    synctool-drain.service for a systemd unit.

    On a host with organisations and no --org: every organisation's due jobs, and the single install's when its
    config is there, each under a header naming it; the organisations take turns (SYNCTOOL_HOST_WORKERS at once,
    each for up to SYNCTOOL_HOST_SLICE_S seconds), so a busy one holds no other back (docs/organisations.md).

    Example: synctool drain --max-seconds 55

    Example: synctool drain --watch --interval 30
    """
    from synctool.ops.drain import drain as drain_op

    names = host_parts(ctx)
    if names:  # a host: every organisation's due jobs, fairly, and the single install's
        _drain_host(ctx, names, max_seconds, max_jobs, concurrency, watch, interval)
        return
    obj = ctx_obj(ctx)
    rt = obj.rt
    db = obj.db  # created and migrated before the workers start
    if concurrency is None:
        concurrency = rt.config.queue.concurrency
    if watch:
        _watch(db, rt, interval if interval is not None else rt.config.queue.watch_interval_s, concurrency)
        return
    if sys.stderr.isatty():  # a person watching: a spinner with the counts so far
        from rich.progress import Progress, SpinnerColumn, TextColumn

        with Progress(SpinnerColumn(), TextColumn("{task.description}"), transient=True) as progress:
            task = progress.add_task("draining", total=None)
            summary, alert = drain_op(
                db,
                rt,
                max_seconds=max_seconds,
                max_jobs=max_jobs,
                concurrency=concurrency,
                on_job=lambda s: progress.update(
                    task, description=(f"{s.succeeded} succeeded, {s.skipped} skipped, {s.retrying} to retry, {s.failed} failed")
                ),
            )
    else:
        summary, alert = drain_op(db, rt, max_seconds=max_seconds, max_jobs=max_jobs, concurrency=concurrency)
    for line in _drain_said(summary, [alert] if alert else []):
        typer.echo(line)


def _drain_said(summary, alerts: list) -> list[str]:
    """A drain's lines: its summary (when it ran something, or a person watches) and each alert it sent."""
    lines = [summary.line()] if summary.claimed or sys.stdout.isatty() else []
    return lines + [
        f"alert sent to {alert['recipients']} recipient(s) about {alert['failed']} failed job(s)"
        for alert in alerts
        if alert.get("sent")
    ]


def _drain_host(ctx: typer.Context, names: list, max_seconds: float, max_jobs, concurrency, watch: bool, interval) -> None:
    """`drain` on a host (``ops.host.drain_host``): each organisation's lines under its header, its error as the
    command would say it; the exit code is the worst of them. With --watch, run after run until SIGTERM."""

    from synctool.config import host_tuning
    from synctool.ops.host import drain_host, label, worst

    tuning = host_tuning(ctx_obj(ctx).environ)

    def run(seconds: float, stop: threading.Event | None = None) -> list:
        return drain_host(
            names,
            lambda name: part_runtime(ctx, name),
            max_seconds=seconds,
            max_jobs=max_jobs,
            concurrency=concurrency,
            workers=tuning.workers,
            slice_s=tuning.slice_s,
            stop=stop,
        )

    if watch:
        _watch_host(run, interval)
        return
    shares = run(max_seconds)
    for share in shares:
        err = f"Error: {share.error}\n" if share.error is not None else ""
        out = "".join(line + "\n" for line in _drain_said(share.summary, share.alerts)) if share.visits else ""
        said(label(share.name), out, err, as_json=False)
    code = worst([share.code for share in shares])
    if code:
        raise typer.Exit(code)


def _stopped_by_signals() -> threading.Event:
    """An event SIGTERM or SIGINT sets (`drain --watch` then claims nothing more and lets the running jobs finish)."""
    import signal

    stop = threading.Event()

    def request_stop(signum, frame) -> None:
        typer.echo(f"drain --watch: {signal.Signals(signum).name}; finishing the running jobs", err=True)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, request_stop)
    return stop


def _watch_host(run, interval: float | None) -> None:
    """`drain --watch` on a host: fair runs of every organisation (``run(seconds, stop)``) back to back until SIGTERM
    or SIGINT, each organisation's lines under its header; ``interval`` (default 30 s) between runs that found
    nothing due."""
    from synctool.ops.host import label

    stop = _stopped_by_signals()
    pause = 30.0 if interval is None else interval
    typer.echo(f"drain --watch: every organisation of this host, polling every {pause:g} s when idle", err=True)
    claimed = 0
    while not stop.is_set():
        shares = run(55, stop)
        for share in shares:
            err = f"Error: {share.error}\n" if share.error is not None else ""
            out = share.summary.line() + "\n" if share.summary.claimed else ""
            said(label(share.name), out, err, as_json=False)
        ran = sum(share.summary.claimed for share in shares)
        claimed += ran
        if not ran:
            stop.wait(pause)
    typer.echo(f"drain --watch stopped: {claimed} jobs", err=True)


def _watch(db, rt, interval: float, concurrency: int) -> None:
    from synctool.ops.drain import watch

    stop = _stopped_by_signals()
    typer.echo(f"drain --watch: polling the queue every {interval:g} s when idle; SIGTERM or Ctrl-C stops", err=True)
    totals = watch(
        db,
        rt,
        stop,
        interval_s=interval,
        concurrency=concurrency,
        on_run=lambda summary: typer.echo(summary.line()) if summary.claimed else None,
    )
    typer.echo(f"drain --watch stopped: {totals.claimed} jobs, {totals.succeeded} succeeded, {totals.failed} failed", err=True)
