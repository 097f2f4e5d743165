"""`synctool dev`: development and test operations."""

from __future__ import annotations

import typer

from synctool.console import action, ctx_obj, emit_json, key_values, sub_app

app = sub_app("Development and test operations.")


@app.command("reset-test-data")
@action()
def reset_test_data(ctx: typer.Context, yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Delete deliveries, jobs, ledgers and the platforms' local records (sandbox CRM environment only).

    Example: synctool dev reset-test-data --yes
    """
    from synctool.ops.dev import reset_test_data as op

    if not yes:
        typer.confirm("Delete all deliveries, jobs and the platforms' local records?", abort=True)
    obj = ctx_obj(ctx)
    emit_json(op(obj.db, obj.rt))


@app.command("poll-cron")
def poll_cron(ctx: typer.Context) -> None:
    """Do what cron does, once, now: the backup poll, then a drain.

    Example: synctool dev poll-cron
    """
    from synctool.ops.dev import poll_cron as op

    obj = ctx_obj(ctx)
    key_values(op(obj.db, obj.rt))


@app.command("poll-now")
def poll_now(ctx: typer.Context) -> None:
    """Run the backup poll now (same as `synctool poll`).

    Example: synctool dev poll-now
    """
    from synctool.ops.poll import poll

    obj = ctx_obj(ctx)
    key_values(poll(obj.db, obj.rt))
