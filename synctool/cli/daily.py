"""`synctool serve`, `poll`, `inject`, `backup` and `prune`: the receiver and the commands cron runs beside drain."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from synctool.cli.host import host_wide
from synctool.console import AsJson, action, ctx_obj, exit_if_failed, key_values, render


def serve(
    ctx: typer.Context,
    host: str = typer.Option(None, help="address to listen on (default: receiver.host in config)"),
    port: int = typer.Option(None, help="port to listen on (default: receiver.port in config)"),
    admin_api: bool = typer.Option(
        None, "--admin-api/--no-admin-api", help="also mount the /api/* admin routes (JWT roles); default: receiver.admin_api"
    ),
    admin_ui: bool = typer.Option(
        None,
        "--admin-ui/--no-admin-ui",
        help="also serve the staff page under /admin (sign-in links: synctool users login-link); default: receiver.admin_ui",
    ),
) -> None:
    """Run the webhook receiver, the admin API and the staff page.

    The receiver (GET /health, POST /webhooks/*) runs with uvicorn; the admin API and the staff page when asked.
    On a host with organisations (and no --org) it serves every one under /o/NAME/ (its webhooks, and its staff
    page and admin API as its config says); a single install's config beside them keeps the root, and these
    options are its.

    Example: synctool serve --host 127.0.0.1 --port 8787 --admin-api --admin-ui
    """
    from synctool import orgs
    from synctool.web.receiver import run
    from synctool.web.receiver import serve as serve_op

    obj = ctx_obj(ctx)
    environ = obj.rt.environ if obj.environ is None else obj.environ  # the root's, read once
    named = obj.org if obj.org is not None else (environ.get("SYNCTOOL_ORG") or None)
    if named is not None or not orgs.names(environ):
        serve_op(obj.rt, host=host, port=port, admin_api=admin_api, admin_ui=admin_ui)
        return
    from synctool.web import host as host_app

    listen = obj.rt.config.receiver  # the single install's, else the defaults (and their environment variables)
    single = obj.rt if host_app.single_install(obj.config_path, environ) else None
    from synctool.web.host_page import routes as host_page

    app = host_app.build(environ, single, admin_api=admin_api, admin_ui=admin_ui, host_routes=host_page(environ))
    run(app, host or listen.host, port or listen.port)


@host_wide()
def poll(
    ctx: typer.Context,
    source: str = typer.Option(None, help="one platform's poll (a role); default: every platform that polls"),
    fresh: bool = typer.Option(False, "--fresh", help="ignore the saved watermark and look back --lookback (default 24h)"),
    lookback: str = typer.Option(None, help="how far back to look, e.g. 24h or 7d (implies --fresh)"),
    as_json: AsJson = False,
) -> None:
    """Backup poll of each platform in use that has one. It queues what the webhooks did not announce.

    Cron runs it every 15 minutes; quiet unless it queued something. A platform that fails (credentials, an
    outage) does not stop the others: each is polled, then one line per failed platform goes to stderr and
    the exit code is 1.

    Example: synctool poll --lookback 7d
    """
    from synctool.ops.poll import poll as poll_op

    obj = ctx_obj(ctx)
    result = poll_op(obj.db, obj.rt, source=source, fresh=fresh, lookback=lookback)

    def for_people(result: dict) -> None:
        if result["queued"] or sys.stdout.isatty():  # cron's mail stays empty when nothing was queued
            for role, found in result["sources"].items():
                if found["status"] == "ok":
                    typer.echo(
                        f"poll {role}: {found['seen']} seen since {found['since']}, "
                        f"{found['queued']} queued ({found['requests']} requests)"
                    )

    render(result, as_json, people=for_people)
    exit_if_failed(result["failed"], "poll")


@action(target="source", note="file")
def inject(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="the payload file, as the platform would send it ('-' for stdin)"),
    source: str = typer.Option(..., "--source", help="a source that polls (synctool platforms lists them)"),
    as_json: AsJson = False,
) -> None:
    """Store a webhook payload without checking its signature. It takes the receiver's path WITHOUT a
    signature check, and is logged as injected.

    Example: synctool inject transaction.json --source donations
    """
    from synctool.errors import InvalidInput
    from synctool.ops.deliveries import inject as inject_op

    if str(file) == "-":
        body = sys.stdin.buffer.read()
    else:
        try:
            body = file.read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {file}: {exc.strerror}") from None
    obj = ctx_obj(ctx)
    result = inject_op(obj.db, obj.rt, source, body)
    render(result, as_json)


def _backup_of(name: str | None, arguments: dict) -> dict:
    """On a host, each part's own backup file (``ops.host.backup_path``)."""
    from synctool.ops.host import backup_path

    return {**arguments, "path": backup_path(arguments["path"], name)}


@host_wide(_backup_of)
def backup(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="the backup file to write"),
    overwrite: bool = typer.Option(False, help="replace an existing file"),
    as_json: AsJson = False,
) -> None:
    """Copy the database, consistently, while synctool keeps writing. The receiver and drain go on
    (SQLite's online backup).

    Prints the file's size and the rows per table. Restore: stop cron and the receiver, copy the file back
    to the database's path, run `synctool doctor`. On PostgreSQL the copy is a SQLite file of one moment of the
    database; restore it into an empty one with `SYNCTOOL_DB=PATH synctool store copy --to postgresql://...`. On a host with organisations and no --org, organisation NAME's
    copy is PATH with .NAME before its suffix (synctool-2026-12-07.riverside.db) and the single install's is PATH.

    Example: synctool backup /var/backups/synctool-$(date +%F).db
    """
    from synctool.ops.backup import backup as backup_op

    result = backup_op(ctx_obj(ctx).rt, path, overwrite=overwrite)

    def for_people(result: dict) -> None:
        key_values({k: v for k, v in result.items() if k != "rows"})
        render([{"table": t, "rows": n} for t, n in result["rows"].items()], columns=["table", "rows"])

    render(result, as_json, people=for_people)


@host_wide()
def prune(
    ctx: typer.Context,
    dry_run: bool = typer.Option(False, "--dry-run", help="say what would go (counts, dates); change nothing"),
    vacuum: bool = typer.Option(
        False, "--vacuum", help="then rewrite the database whole (VACUUM), once for a database made before 0.3.0"
    ),
    quiet: bool = typer.Option(
        False, "--quiet", help="for cron: print nothing (the log file gets one line); with --dry-run, one line"
    ),
    as_json: AsJson = False,
) -> None:
    """Drop the donor data synctool no longer needs. That is the raw bodies of deliveries older than
    retention.raw_bodies_days (400 by default; the delivery rows, their jobs, ids and amounts stay, and a body a
    job still needs is kept), and expired sign-in links and sessions, old sent mail and sign-in requests. Then keep
    the database compact: free pages go back to the file system, the query planner's statistics are refreshed
    (PRAGMA optimize), and the day's size is recorded for `doctor`.

    Cron runs it nightly (crontab.example). Running it again drops nothing more. A job whose body was dropped
    cannot be replayed from it: `deliveries show` and `syncs show` say so. A database made before 0.3.0 only
    reuses its free pages until `--vacuum` rewrites it once; the rewrite holds the write lock while it runs
    (deliveries wait), so run it when traffic is low.

    Example: synctool prune --dry-run
    """
    from synctool.ops.retention import KINDS, database_said, said
    from synctool.ops.retention import prune as prune_op

    obj = ctx_obj(ctx)
    result = prune_op(obj.db, obj.rt, dry_run=dry_run, vacuum=vacuum)

    def for_people(result: dict) -> None:
        received = result["raw_bodies_received"]
        rows = [{"kind": name, "count": result["counts"][kind], "what": what} for kind, (name, what) in KINDS.items()]
        if received:
            rows[0]["what"] = (
                f"received {received['from'][:10]} to {received['to'][:10]}, over {result['raw_bodies_days']} days ago"
            )
        table_title = "would drop (dry run)" if result["dry_run"] else "dropped"
        render(rows, columns=["kind", "count", "what"], title=table_title)
        if result["kept_for_jobs"]:
            typer.echo(f"kept {result['kept_for_jobs']} older raw bodies for the jobs that still need them")
        typer.echo(database_said(result))
        if result["dry_run"]:
            typer.echo("dry run: nothing was changed")

    if quiet and not as_json:
        if dry_run:  # asked for what would go: said even when quiet
            typer.echo(said(result))
        return
    render(result, as_json, people=for_people)
