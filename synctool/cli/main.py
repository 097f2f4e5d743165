"""The `synctool` command. Each command parses options, calls one operation and renders its result."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from io import TextIOWrapper
from pathlib import Path
from typing import Any, cast

# synctool uses no pydantic plugin, and looking for one (reading every installed package's entry points)
# costs about 20 ms of each command's start-up; a value the caller set is kept
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

import typer  # noqa: E402

from synctool.cli import backfill, checks, jobs, preview, syncs
from synctool.console import AsJson, RootGroup, ctx_obj, exit_if_failed, key_values, render

app = typer.Typer(
    help="Keep the donor CRM (Little Green Light) in step with the platforms that bring the organisation money and people.",
    cls=RootGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's own help: paragraphs rewrapped to the terminal, flags read as flags
)
RootGroup.lazy = {
    "deliveries": "synctool.cli.deliveries:app",
    "syncs": "synctool.cli.syncs:app",
    "jobs": "synctool.cli.jobs:app",
    "crm": "synctool.cli.crm:app",
    "mappings": "synctool.cli.mappings:app",
    "settings": "synctool.cli.settings:app",
    "users": "synctool.cli.users:app",
    "refunds": "synctool.cli.refunds:app",
    "donors": "synctool.cli.donors:app",
    "events": "synctool.cli.events:app",
    "reconcile": "synctool.cli.reconcile:app",
    "year-end": "synctool.cli.year_end:app",
    "webhooks": "synctool.cli.webhooks:app",
    "alerts": "synctool.cli.alerts:app",
    "dev": "synctool.cli.dev:app",
}


def _platform_groups() -> dict[str, Callable[[], Any]]:
    from synctool.platforms import command_groups

    return command_groups()


RootGroup.platform_groups = staticmethod(_platform_groups)  # each platform's own group (synctool.platforms)
app.command("test-connections")(checks.test_connections)
app.command("doctor")(checks.doctor)
app.command("stats")(syncs.stats)
app.command("overview")(syncs.overview)
app.command("retry-all")(jobs.retry_all)
app.command("drain")(jobs.drain)
app.command("backfill")(backfill.backfill)
app.command("sync-mode")(preview.sync_mode)
app.command("preview")(preview.preview)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (test runners swap it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def _private_open(path: str, flags: int) -> int:
    """The log file's opener: a new file is created 0600 (its lines name donors and gifts); one already there
    keeps its mode (deploy/synctool.logrotate creates them 0600)."""
    from synctool.store import private_file

    private_file(Path(path))
    return os.open(path, flags)


def _setup_logging(verbose: bool, log_file: str | None) -> None:
    handlers: list[logging.Handler] = []
    stream = _StderrHandler()
    stream.setLevel(logging.INFO if verbose else logging.WARNING)
    handlers.append(stream)
    if log_file:
        from logging.handlers import WatchedFileHandler

        class PrivateLog(WatchedFileHandler):
            """Reopened when logrotate moves the file away, so a long-running serve or drain --watch keeps
            logging; opened, and reopened, through ``_private_open``."""

            def _open(self) -> TextIOWrapper:
                stream = open(self.baseFilename, self.mode, encoding=self.encoding, errors=self.errors, opener=_private_open)
                return cast(TextIOWrapper, stream)  # a text mode ("a"), so a TextIOWrapper

        file_handler = PrivateLog(Path(log_file).expanduser())
        file_handler.setLevel(logging.INFO)
        handlers.append(file_handler)
    logging.basicConfig(
        level=logging.INFO, handlers=handlers, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )


@app.callback()
def root(
    ctx: typer.Context,
    config: str = typer.Option(
        None, "--config", "-c", help="config file (default: $SYNCTOOL_CONFIG or ~/.config/synctool/config.yaml)"
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="log progress to stderr"),
    log_file: str = typer.Option(None, "--log-file", help="also append log lines to this file"),
) -> None:
    from synctool import platforms

    platforms.registered()  # every platform's config section is known before the config is read
    obj = ctx_obj(ctx)
    if config is not None or obj.runtime is None:
        obj.config_path = config
    if log_file is None and ctx.invoked_subcommand not in (None, "init"):
        from synctool.errors import SynctoolError

        try:  # config's log_file, when the config can be read (a command that needs it says why not)
            log_file = obj.rt.config.log_file
        except SynctoolError:
            pass
    _setup_logging(verbose, log_file)


@app.command()
def init(
    ctx: typer.Context,
    force: bool = typer.Option(False, help="overwrite an existing config file"),
    platforms: str = typer.Option(
        None, "--platforms", help="the platforms this organisation uses, comma-separated (`synctool platforms` names them)"
    ),
    currency: str = typer.Option(
        None, "--currency", help="the CRM's one currency, ISO 4217 (default USD): money in another is held for a person"
    ),
) -> None:
    """Write a starter config file and create the database. Re-running is harmless. --platforms writes the
    `platforms:` key (into an existing config file too, keeping the rest of it); the platforms left out are
    absent everywhere: no webhook route, no doctor lines, no poll. --currency writes `organisation.currency` (the
    CRM's one currency; a gift in another is held until someone says what the bank credited).

    Example: synctool init --platforms NAME,NAME  (the names `synctool platforms` prints)
    """
    from synctool.ops.setup import init as init_op

    obj = ctx_obj(ctx)
    import os

    chosen = [name.strip() for name in platforms.split(",") if name.strip()] if platforms is not None else None
    environ = os.environ if obj.environ is None else obj.environ
    result = init_op(obj.config_path, environ, force=force, platforms=chosen, currency=currency)
    key_values(result)


@app.command("platforms")
def platforms_(ctx: typer.Context, as_json: AsJson = False) -> None:
    """List the platforms synctool knows (its own and those a package added): each one's role (its source
    name in the sync log), whether it is in use (`platforms:` in config; `synctool init --platforms`) and, for
    one in use, whether its credentials are set; its webhook route, command group, what it can do (poll,
    reconcile, payouts, backfill, webhook registration, connection test), job targets and secrets.

    Example: synctool platforms
    """
    from synctool.platforms import describe

    rows = describe(ctx_obj(ctx).rt)
    shown = [{**r, "in_use": "yes" if r["in_use"] else "no", "credentials": r["credentials"] or ""} for r in rows]
    render(rows, as_json, rows=shown, columns=["name", "role", "in_use", "credentials", "webhook", "can"])


@app.command()
def backup(
    ctx: typer.Context,
    path: str = typer.Argument(..., help="the backup file to write"),
    overwrite: bool = typer.Option(False, help="replace an existing file"),
    as_json: AsJson = False,
) -> None:
    """Copy the database, consistently, while the receiver and drain keep writing (SQLite's online backup).

    Prints the file's size and the rows per table. Restore: stop cron and the receiver, copy the file back
    to the database's path, run `synctool doctor`.

    Example: synctool backup /var/backups/synctool-$(date +%F).db
    """
    from synctool.ops.backup import backup as backup_op

    result = backup_op(ctx_obj(ctx).rt, path, overwrite=overwrite)

    def for_people(result: dict) -> None:
        key_values({k: v for k, v in result.items() if k != "rows"})
        render([{"table": t, "rows": n} for t, n in result["rows"].items()], columns=["table", "rows"])

    render(result, as_json, people=for_people)


@app.command()
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
    """Drop the donor data synctool no longer needs: the raw bodies of deliveries older than
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


@app.command()
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
    """Run the webhook receiver (GET /health, POST /webhooks/*) with uvicorn, and optionally the admin API
    and the staff page.

    Example: synctool serve --host 127.0.0.1 --port 8787 --admin-api --admin-ui
    """
    from synctool.web.receiver import serve as serve_op

    serve_op(ctx_obj(ctx).rt, host=host, port=port, admin_api=admin_api, admin_ui=admin_ui)


@app.command()
def inject(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="the payload file, as the platform would send it ('-' for stdin)"),
    source: str = typer.Option(..., "--source", help="a source that polls (synctool platforms lists them)"),
    as_json: AsJson = False,
) -> None:
    """Store a webhook payload through the receiver's path WITHOUT a signature check (logged as injected).

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


@app.command()
def poll(
    ctx: typer.Context,
    source: str = typer.Option(None, help="one platform's poll (a role); default: every platform that polls"),
    fresh: bool = typer.Option(False, "--fresh", help="ignore the saved watermark and look back --lookback (default 24h)"),
    lookback: str = typer.Option(None, help="how far back to look, e.g. 24h or 7d (implies --fresh)"),
    as_json: AsJson = False,
) -> None:
    """Backup poll of each platform in use that has one: queue what its webhooks did not announce.

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


@app.command()
def demo(as_json: AsJson = False) -> None:
    """Run the whole path against local fakes: receiver, signed deliveries, poll, drain, and what the CRM holds.

    Needs no configuration and touches nothing outside this machine (loopback only, a temporary database).

    Example: synctool demo
    """
    from synctool.fakes.demo import run

    def for_people(report: dict) -> None:
        render(report["sync_log"], columns=["source", "what", "status", "outcome", "crm_gift_id"], title="sync log")
        render(report["crm_constituents"], columns=["id", "name", "tags"], title="CRM constituents (fake)")
        gift_columns = ["id", "external_id", "amount", "deductible", "date", "fund", "paid_by", "donor"]
        render(report["crm_gifts"], columns=gift_columns, title="CRM gifts (fake)")
        refund_columns = ["source", "refund_id", "gift_external_id", "amount", "amount_before", "amount_after", "state", "policy"]
        render(report["refunds"], columns=refund_columns, title="refunds (`synctool refunds list`)")
        stats = report["crm_requests"]
        typer.echo("\nThe daily summary e-mail (`synctool alerts summary --dry-run`):\n")
        typer.echo(report["summary_mail"])
        typer.echo(f"CRM requests: {stats['requests']}, 429s: {stats['rejected_429']}; demo took {report['seconds']} s")

    render(run(say=(lambda line: None) if as_json else typer.echo), as_json, people=for_people)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
