"""`synctool webhooks`: the webhooks each platform must send, checked and registered through their APIs."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from synctool.cli.host import host_wide
from synctool.console import AsJson, action, ctx_obj, exit_if_failed, render, sub_app

app = sub_app("The platforms' webhooks: check and register them. Registered or repaired through their APIs.")


#: the option of `webhooks status` and `register`
Sources = Annotated[Optional[str], typer.Option(help="comma-separated sources; default: all")]  # noqa: UP045  (typer reads it at run time)


def _sources(value: str | None) -> list[str] | None:
    return [s.strip() for s in value.split(",") if s.strip()] if value else None


@app.command("status")
def status(
    ctx: typer.Context,
    source: Sources = None,
    as_json: AsJson = False,
) -> None:
    """Ask each platform what is registered and compare it with what synctool needs: the URL (for a platform
    that signs its URL, exactly that URL), the events its handlers read, enabled, and the secret stored on
    this side. One line per platform in use: ok, missing, wrong URL, missing events, disabled, no secret, not
    configured, error, with the fix. Then, per platform that keeps a record of its deliveries, how many it reports
    failed in the last 24 h and how many of those never arrived (`synctool webhooks heal` replays them).
    Exit 1 when any is not ok, or a failed delivery never arrived; a platform that could not be asked is
    named on stderr, one line each, after the others are checked.

    Example: synctool webhooks status
    """
    from synctool.ops.webhooks import status as op

    result = op(ctx_obj(ctx).db, ctx_obj(ctx).rt, _sources(source))
    columns = ["source", "where", "state", "detail", "fix"]
    render(result, as_json, rows=result["sources"], columns=columns, title=f"webhooks for {result['url'] or '(no public URL)'}")
    if not as_json:
        render(
            result["deliveries"], False, columns=["source", "failed", "not_received", "detail"], title="failed deliveries, 24 h"
        )
    exit_if_failed(result["failed"], "webhooks status")
    if not result["ok"]:
        raise typer.Exit(1)


@app.command("heal")
@host_wide()
def heal(
    ctx: typer.Context,
    since: str = typer.Option("7d", help="a duration ago (24h, 7d) or an ISO date"),
    source: str = typer.Option(None, help="comma-separated sources; default: every platform that keeps a record"),
    dry_run: bool = typer.Option(False, "--dry-run", help="say what would be replayed; store nothing"),
    quiet: bool = typer.Option(False, "--quiet", help="for cron: one line when something was replayed, else nothing"),
    as_json: AsJson = False,
) -> None:
    """Replay each delivery a platform reports it failed to make (`synctool platforms` says which keep such a
    record: "heal"), from the platform's own record, through the receiver's path: the same parse, the
    same dedup on the provider's event id (a delivery that did arrive is skipped), stored with its job for
    drain. The platform's API, read with synctool's key, is the origin (a delivery's signature is not in
    that record). Prints what it found, replayed and skipped, and which platforms keep no record. A platform
    whose record cannot be read (credentials, an outage) does not stop the others: it is named on stderr and
    the exit code is 1.

    Example: synctool webhooks heal --since 7d --dry-run
    """
    from synctool.ops.webhooks import heal as op

    result = op(ctx_obj(ctx).db, ctx_obj(ctx).rt, since=since, sources=_sources(source), dry_run=dry_run)
    title = (
        f"{result['found']} failed deliveries since {result['since'][:16]}: {result['replayed']} replayed, "
        f"{result['skipped']} received already; {result['requests']} platform requests"
    )
    if quiet and not as_json:
        if result["replayed"]:
            typer.echo(f"webhooks heal: {title}")
    else:
        render(
            result, as_json, rows=result["items"], columns=["source", "event_type", "action", "event_id", "detail"], title=title
        )
    if not as_json and not quiet and result["unrecorded"]:
        typer.echo(f"no delivery record to read: {', '.join(result['unrecorded'])} (the backup poll and reconcile cover them)")
    exit_if_failed(result["failed"], "webhooks heal")
    if any(r["action"] == "refused" for r in result["items"]):
        raise typer.Exit(1)


@app.command("register")
@action(target="source", note="url")
def register(
    ctx: typer.Context,
    url: str = typer.Option(..., help="the receiver's public address, https://HOST (the routes /webhooks/<source> are added)"),
    source: Sources = None,
    as_json: AsJson = False,
) -> None:
    """Create what is missing and repair what is wrong, idempotently (never a second registration for a
    route), by each platform's own API (`synctool platforms` says which can). The secrets the platforms return go to
    the keyring; without one, the `export` lines to put in synctool's environment are printed (to stderr,
    and never in --json). Restart `synctool serve` afterwards so it reads them.

    Example: synctool webhooks register --url https://sync.example.org --source pos,payments
    """
    from synctool.ops.webhooks import register as op

    result = op(ctx_obj(ctx).db, ctx_obj(ctx).rt, url, _sources(source))
    export = result["export"]
    render(
        {key: value for key, value in result.items() if key != "export"},
        as_json,
        rows=result["registered"],
        columns=["source", "where", "action", "detail"],
        title=f"webhooks at {result['url']}",
    )
    if export:
        kept = ctx_obj(ctx).rt.secrets.file  # an organisation's secrets.env: it never reads the environment
        if kept is None:
            print(
                "No keyring on this machine: put these in synctool's environment (cron's env file, the service unit):",
                file=sys.stderr,
            )
        else:
            print(f"No keyring on this machine: add these lines to {kept} (chmod 600):", file=sys.stderr)
        for name, value in export.items():
            print(f"export {name}='{value}'" if kept is None else f"{name}={value}", file=sys.stderr)
    if result["restart_receiver"] and not as_json:
        typer.echo("restart `synctool serve` so the receiver reads the new secrets")
    exit_if_failed(result["failed"], "webhooks register")
