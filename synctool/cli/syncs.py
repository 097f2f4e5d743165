"""`synctool syncs`, `stats`, `jobs`, `retry-all` and `drain`: the sync log and the queue."""

from __future__ import annotations

import sys

import typer

from synctool.cli.common import columns_option, ctx_obj, emit_json, key_values, sub_app, table

app = sub_app("The sync log: every delivery, poll result and operator request, with its outcome.")
jobs_app = sub_app("The job queue: list pending or failed jobs and put failed ones back in the queue.")

#: in order of importance; a narrow terminal shows the first ones (--json has every field)
SYNC_COLUMNS = ["id", "when", "source", "entity", "status", "amount", "message", "email", "attempts", "crm_gift_id"]
JOB_COLUMNS = ["id", "target", "entity", "status", "attempts", "run_after", "last_error"]


def for_people(row: dict) -> dict:
    """A sync log row with the short forms a table shows: an 8-character id (`syncs show` takes it), the
    minute it arrived, "type id" for the entity, and the message or the error."""
    return {**row, "id": row["id"][:8], "when": (row.get("created_at") or "")[5:16].replace("T", " "),
            "entity": f"{row['entity_type']} {row['entity_id']}",
            "message": row.get("last_error") if row.get("status") == "failed" else row.get("message")}


@app.command("list")
def list_(
    ctx: typer.Context,
    status: str = typer.Option(None, help="queued, running, succeeded, skipped, failed or resolved"),
    source: str = typer.Option(None, help="donations, pos, mailing, payments or portal"),
    date_from: str = typer.Option(None, "--from", help="created at or after: ISO date/time or a duration ago (24h)"),
    date_to: str = typer.Option(None, "--to", help="created at or before: ISO date/time (a bare date is inclusive)"),
    q: str = typer.Option(None, "--q", help="text in the external id, e-mail, name or error"),
    page: int = typer.Option(1, help="page number, from 1"),
    limit: int = typer.Option(50, help="rows per page (1-500)"),
    sort: str = typer.Option("created_at", help="created_at, updated_at, finished_at, status, source, attempts, external_id, amount"),
    order: str = typer.Option("desc", help="asc or desc"),
    as_json: bool = typer.Option(False, "--json", help="print JSON: {items, total, page, limit, pages}"),
    columns: str = columns_option(),
) -> None:
    """List sync records, newest first, with filters and paging.

    Example: synctool syncs list --status failed --source pos --from 7d --q ada@example.org
    """
    from synctool.ops.syncs import SyncQuery, list_syncs
    from synctool.validation import parse

    query = parse(SyncQuery, dict(status=status, source=source, date_from=date_from, date_to=date_to, q=q, page=page,
                                  limit=limit, sort=sort, order=order), where="options")
    result = list_syncs(ctx_obj(ctx).db, query)
    if as_json:
        emit_json(result)
        return
    table([for_people(r) for r in result["items"]], SYNC_COLUMNS, chosen=columns)
    typer.echo(f"page {result['page']} of {max(result['pages'], 1)}, {result['total']} records")


@app.command("show")
def show(ctx: typer.Context, sync_id: str = typer.Argument(..., help="the record's UUID"),
         as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Show one sync record with its attempts and the delivery it came from.

    Example: synctool syncs show 0b7e3c1e-6a1f-4c55-9d43-2f0f6c1b9a10
    """
    from synctool.ops.syncs import show_sync

    record = show_sync(ctx_obj(ctx).db, sync_id)
    if as_json:
        emit_json(record)
        return
    attempts = record.pop("attempts_log")
    delivery = record.pop("delivery")
    key_values(record)
    typer.echo("\nattempts:")
    table(attempts, ["number", "started_at", "finished_at", "outcome", "crm_requests", "error"])
    if delivery:
        typer.echo(f"\ndelivery {delivery['id']} ({delivery['source']} {delivery['event_type']}, "
                   f"received {delivery['received_at']}):")
        typer.echo(delivery["body"])


@app.command("resolve")
def resolve(ctx: typer.Context, sync_id: str = typer.Argument(..., help="the failed record's UUID"),
            notes: str = typer.Option(None, help="what was done about it"),
            by: str = typer.Option(None, help="who resolved it"),
            as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Mark a failed record resolved without running it again.

    Example: synctool syncs resolve 0b7e3c1e-6a1f-4c55-9d43-2f0f6c1b9a10 --notes "entered by hand" --by sam
    """
    from synctool.ops.syncs import ResolveBody, resolve as resolve_op
    from synctool.validation import parse

    record = resolve_op(ctx_obj(ctx).db, sync_id, parse(ResolveBody, {"notes": notes, "resolvedBy": by}, where="options"))
    if as_json:
        emit_json(record)
    else:
        typer.echo(f"resolved {sync_id} at {record['resolved_at']}")


def stats(ctx: typer.Context, window: str = typer.Option("24h", help="24h, 7d or 30d"),
          as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Counts of sync records over a window: total, succeeded, failed, skipped, queued, per source.

    Example: synctool stats --window 7d
    """
    from synctool.ops.syncs import StatsQuery, stats as stats_op
    from synctool.validation import parse

    result = stats_op(ctx_obj(ctx).db, parse(StatsQuery, {"window": window}, where="options"))
    if as_json:
        emit_json(result)
        return
    per_source = result.pop("per_source")
    key_values(result)
    table([{"source": s, **v} for s, v in per_source.items()],
          ["source", "total", "succeeded", "failed", "skipped", "queued", "running"])


@jobs_app.command("list")
def jobs_list(ctx: typer.Context, status: str = typer.Option("all", help="all, pending (queued or running) or failed"),
              target: str = typer.Option(None, help="crm, portal, cms or messaging"),
              limit: int = typer.Option(100, help="at most this many (1-500)"),
              as_json: bool = typer.Option(False, "--json", help="print JSON"),
              columns: str = columns_option()) -> None:
    """List jobs, newest first.

    Example: synctool jobs list --status failed --target crm
    """
    from synctool.ops.syncs import list_jobs

    rows = list_jobs(ctx_obj(ctx).db, status=status, target=target, limit=limit)
    if as_json:
        emit_json(rows)
    else:
        table([for_people(r) for r in rows], JOB_COLUMNS, chosen=columns)


@jobs_app.command("retry")
def jobs_retry(ctx: typer.Context, job_id: str = typer.Argument(..., help="the failed job's id"),
               as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Put a failed job back in the queue (failed -> queued) with fresh attempts.

    Example: synctool jobs retry 0b7e3c1e-6a1f-4c55-9d43-2f0f6c1b9a10
    """
    from synctool.ops.syncs import retry

    row = retry(ctx_obj(ctx).db, job_id)
    emit_json(row) if as_json else typer.echo(f"job {job_id} queued; the next drain runs it")


def retry_all(ctx: typer.Context, source: str = typer.Option(None, help="only this source's failed jobs"),
              fresh: bool = typer.Option(False, "--fresh", help="re-fetch the source data (donation transactions) first"),
              as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Put every unresolved failed job back in the queue.

    Example: synctool retry-all --source donations --fresh
    """
    from synctool.ops.syncs import SourceQuery, retry_all as retry_all_op
    from synctool.validation import parse

    obj = ctx_obj(ctx)
    query = parse(SourceQuery, {"source": source}, where="options")
    if fresh:
        from synctool.ops.dev import retry_all_fresh

        result = retry_all_fresh(obj.db, obj.config, query)
    else:
        result = retry_all_op(obj.db, query)
    emit_json(result) if as_json else typer.echo(f"{result['requeued']} failed jobs queued again")


def drain(
    ctx: typer.Context,
    max_seconds: float = typer.Option(55, help="stop claiming new jobs after this long (cron: under a minute)"),
    max_jobs: int = typer.Option(None, help="stop after this many jobs"),
    concurrency: int = typer.Option(3, help="jobs run at once (1-3)"),
    watch: bool = typer.Option(False, "--watch", help="keep running as a service: claim jobs as they come, "
                                                      "stop cleanly on SIGTERM or Ctrl-C"),
    interval: float = typer.Option(None, "--interval", help="with --watch: seconds to wait when nothing is due "
                                                             "(default queue.watch_interval_s, 30)"),
) -> None:
    """Run the queued CRM jobs that are due. Safe to overlap with itself; cron runs it every minute.

    Quiet with one summary line when not on a terminal; a progress bar when it is. With --watch it runs
    until SIGTERM or SIGINT, then lets the running jobs finish (none is left leased) and exits 0; see
    synctool-drain.service for a systemd unit.

    Example: synctool drain --max-seconds 55
    """
    from synctool.worker import drain as drain_op

    obj = ctx_obj(ctx)
    config = obj.config
    obj.db  # create and migrate before the workers start
    if watch:
        _watch(obj, interval if interval is not None else config.queue.watch_interval_s, concurrency)
        return
    if sys.stderr.isatty():
        from rich.progress import Progress, SpinnerColumn, TextColumn

        with Progress(SpinnerColumn(), TextColumn("{task.description}"), transient=True) as progress:
            task = progress.add_task("draining", total=None)
            summary = drain_op(config, max_seconds=max_seconds, max_jobs=max_jobs, concurrency=concurrency,
                               on_job=lambda s: progress.update(task, description=
                                   f"{s.succeeded} succeeded, {s.skipped} skipped, {s.retrying} to retry, {s.failed} failed"))
    else:
        summary = drain_op(config, max_seconds=max_seconds, max_jobs=max_jobs, concurrency=concurrency)
    if summary.claimed or sys.stdout.isatty():
        typer.echo(summary.line())
    from synctool.ops.alerts import after_drain

    alert = after_drain(obj.db, config, summary.failed_jobs)
    if alert and alert.get("sent"):
        typer.echo(f"alert sent to {alert['recipients']} recipient(s) about {alert['failed']} failed job(s)")


def _watch(obj, interval: float, concurrency: int) -> None:
    import signal
    import threading

    from synctool.ops.alerts import after_drain
    from synctool.worker import watch

    stop = threading.Event()

    def request_stop(signum, frame) -> None:
        typer.echo(f"drain --watch: {signal.Signals(signum).name}; finishing the running jobs", err=True)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, request_stop)

    def after_run(summary) -> None:
        if summary.claimed:
            typer.echo(summary.line())
        after_drain(obj.db, obj.config, summary.failed_jobs)

    typer.echo(f"drain --watch: polling the queue every {interval:g} s when idle; SIGTERM or Ctrl-C stops", err=True)
    totals = watch(obj.config, stop, interval_s=interval, concurrency=concurrency, on_run=after_run)
    typer.echo(f"drain --watch stopped: {totals.claimed} jobs, {totals.succeeded} succeeded, {totals.failed} failed",
               err=True)
