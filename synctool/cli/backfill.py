"""`synctool backfill`: queue the platforms' history that synctool has never seen."""

from __future__ import annotations

import sys

import typer

from synctool.console import AsJson, action, ctx_obj, exit_if_failed, render


@action(target="source")
def backfill(
    ctx: typer.Context,
    since: str = typer.Option(..., help="first day, YYYY-MM-DD or a duration back (180d)"),
    until: str = typer.Option(None, help="last day (inclusive); default: today"),
    source: str = typer.Option(None, help="a source that offers a backfill; default: each"),
    dry_run: bool = typer.Option(False, "--dry-run", help="say what was found and what it will cost; queue nothing"),
    as_json: AsJson = False,
) -> None:
    """Past gifts: page the history of each platform that offers one.

    This brings in the gifts of the months before synctool: each platform that offers a history (`synctool
    platforms` says which) is paged, and each item synctool has never seen is queued, through the normal path (drain writes them; nothing already synced is written twice). First it says what it found
    and what it will cost in CRM requests and time at synctool's share of the CRM budget. A platform whose
    history cannot be read is named on stderr (exit 1); the others' items are queued all the same.

    Example: synctool backfill --since 2026-01-01 --dry-run
    """
    from synctool.ops.backfill import backfill as op

    obj = ctx_obj(ctx)
    bar = None
    if not as_json and sys.stdout.isatty():
        from rich.progress import Progress

        bar = Progress(transient=True)
    task = None

    def progress(done: int, total: int) -> None:
        nonlocal task
        if bar is not None:
            if task is None:
                bar.start()
                task = bar.add_task("queueing", total=total)
            bar.update(task, completed=done)

    try:
        result = op(obj.db, obj.rt, since=since, until=until, source=source, dry_run=dry_run, progress=progress)
    finally:
        if bar is not None and task is not None:
            bar.stop()
    cost = result["estimate"]
    minutes = max(1, round(cost["seconds"] / 60)) if cost["seconds"] else 0
    line = (
        f"{result['found']} transaction(s) from {result['from']} to {result['to']}: {result['already_synced']} already synced, "
        f"{result['new']} new; about {cost['crm_requests']} CRM requests ({cost['gifts']} gifts, {cost['new_donors']} new donors), "
        f"about {minutes} minute(s) at synctool's share of the CRM budget"
    )

    def for_people(data: dict) -> None:
        typer.echo(line)
        typer.echo(
            "dry run: nothing queued" if data["dry_run"] else f"queued {data['queued']}; `synctool drain` (cron) writes them"
        )

    render(result, as_json, people=for_people)
    exit_if_failed(result["failed"], "backfill")
