"""`synctool test-connections` and `synctool doctor`: is everything reachable and configured."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import typer

from synctool.cli.host import host_wide
from synctool.console import AsJson, ctx_obj, render_outcome


def test_connections(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Check the CRM and each platform in use, one line each. Each says ok, or FAIL with why (credentials not
    set, refused, down); the platforms in use are those `synctool platforms` names. Every one is tried whatever the others answer; exit 1 when any fails.

    Example: synctool test-connections
    """
    from synctool.ops.checks import test_connections as op

    obj = ctx_obj(ctx)
    report(
        op(obj.db, obj.rt),
        as_json,
        lambda r: f"{r['name']:<10} {'FAIL' if not r['ok'] else r['state']}  {r['detail']}",
        failed=lambda r: not r["ok"],
    )


def _doctor_line(c: dict) -> str:
    return f"{c['status'].upper():<5} {c['check']:<34} {c['detail']}" + (f"  -> {c['fix']}" if c["fix"] else "")


def _host_doctor(arguments: Mapping[str, Any]) -> None:
    """On a host, after each organisation's doctor: the host's own lines (its data folder, its organisations)."""
    from synctool.ops.host import host_checks

    report(host_checks(ctx_obj(arguments["ctx"]).environ or {}), bool(arguments["as_json"]), _doctor_line,
           failed=lambda c: c["status"] == "fail")  # fmt: skip


@host_wide(host=_host_doctor)
def doctor(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Check configuration, secrets, database, cron and backlog. Secrets are said present or not, never their
    values; the keyring too. On a host with organisations and no --org: each organisation's checks (what is missing
    from its keyring service synctool:NAME or its secrets.env), then the host's.

    Example: synctool doctor
    """
    from synctool.ops.checks import doctor as op

    obj = ctx_obj(ctx)
    report(
        op(obj.db, obj.rt),
        as_json,
        _doctor_line,
        failed=lambda c: c["status"] == "fail",
    )


def report(rows: list[dict], as_json: bool, line: Callable[[dict], str], *, failed: Callable[[dict], bool]) -> None:
    """One line a check (or JSON); exit 1 when any failed."""
    render_outcome(
        rows,
        as_json,
        ok=not any(failed(row) for row in rows),
        people=lambda rows: typer.echo("\n".join(line(row) for row in rows)),
    )
