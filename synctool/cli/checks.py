"""`synctool test-connections` and `synctool doctor`: is everything reachable and configured."""

from __future__ import annotations

import typer

from synctool.cli.common import ctx_obj, emit_json


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
