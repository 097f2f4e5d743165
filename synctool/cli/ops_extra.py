"""`synctool test-connections`, `doctor`, `alerts` and `dev`: checks and test/dev operations."""

from __future__ import annotations

import typer

from synctool.cli.common import ctx_obj, emit_json, key_values, sub_app

alerts_app = sub_app("Alert e-mails: a digest after a drain in which jobs failed for good, and the daily summary.")
dev_app = sub_app("Development and test operations.")


def test_connections(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Check the CRM, donation, POS and mailing connections: one line each; exit 1 when any fails.

    Example: synctool test-connections
    """
    from synctool.ops.checks import test_connections as op

    obj = ctx_obj(ctx)
    results = op(obj.db, obj.config)
    if as_json:
        emit_json(results)
    else:
        for r in results:
            typer.echo(f"{r['name']:<10} {'ok  ' if r['ok'] else 'FAIL'}  {r['detail']}")
    if not all(r["ok"] for r in results):
        raise typer.Exit(1)


def doctor(ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Check configuration, secrets (present or not; never their values), keyring, database, cron and backlog.

    Example: synctool doctor
    """
    from synctool.ops.checks import doctor as op

    obj = ctx_obj(ctx)
    checks = op(obj.db, obj.config)
    if as_json:
        emit_json(checks)
    else:
        for c in checks:
            typer.echo(f"{c['status'].upper():<5} {c['check']:<34} {c['detail']}" + (f"  -> {c['fix']}" if c["fix"] else ""))
    if any(c["status"] == "fail" for c in checks):
        raise typer.Exit(1)


@alerts_app.command("summary")
def alerts_summary(ctx: typer.Context,
                   hours: int = typer.Option(24, min=1, max=24 * 31, help="the window, in hours"),
                   dry_run: bool = typer.Option(False, "--dry-run", help="print the e-mail instead of sending it"),
                   as_json: bool = typer.Option(False, "--json", help="print the report as JSON")) -> None:
    """The daily summary e-mail: per source, what succeeded, was skipped, failed or was recovered by the
    poll; the failures needing action with the command for each; CRM requests spent and budget left; cron
    and mirror freshness. Plain text and HTML, to the alert recipients (cron: once a day).

    Example: synctool alerts summary --dry-run
    """
    from synctool.ops.alerts import summary

    obj = ctx_obj(ctx)
    report = summary(obj.db, obj.config, hours=hours, send=not dry_run)
    if as_json:
        emit_json({k: v for k, v in report.items() if k not in ("text", "html")})
    elif dry_run:
        typer.echo(report["text"], nl=False)
    else:
        typer.echo(f"summary sent to {report['recipients']} recipient(s): {report['subject']}")


@alerts_app.command("test")
def alerts_test(ctx: typer.Context) -> None:
    """Send one test alert to the alert recipients.

    Example: synctool alerts test
    """
    from synctool.ops.alerts import test

    obj = ctx_obj(ctx)
    result = test(obj.db, obj.config)
    typer.echo(f"test alert sent to {', '.join(result['recipients'])}")


@dev_app.command("reset-test-data")
def reset_test_data(ctx: typer.Context, yes: bool = typer.Option(False, "--yes", help="do not ask")) -> None:
    """Delete deliveries, jobs, ledgers and portal records (sandbox CRM environment only).

    Example: synctool dev reset-test-data --yes
    """
    from synctool.ops.dev import reset_test_data as op

    if not yes:
        typer.confirm("Delete all deliveries, jobs and portal records?", abort=True)
    obj = ctx_obj(ctx)
    emit_json(op(obj.db, obj.config))


@dev_app.command("poll-cron")
def poll_cron(ctx: typer.Context) -> None:
    """Do what cron does, once, now: the backup poll, then a drain.

    Example: synctool dev poll-cron
    """
    from synctool.ops.dev import poll_cron as op

    obj = ctx_obj(ctx)
    key_values(op(obj.db, obj.config))


@dev_app.command("poll-now")
def poll_now(ctx: typer.Context) -> None:
    """Run the backup poll now (same as `synctool poll`).

    Example: synctool dev poll-now
    """
    from synctool.ops.poll import poll

    obj = ctx_obj(ctx)
    key_values(poll(obj.db, obj.config))
