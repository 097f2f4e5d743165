"""The `synctool` command: one table of its commands, the root options, and logging. Each command parses
options, calls one operation and renders its result."""

from __future__ import annotations

import getpass
import logging
import os
import sys
from io import TextIOWrapper
from pathlib import Path
from typing import TYPE_CHECKING, cast

# synctool uses no pydantic plugin, and looking for one (reading every installed package's entry points)
# costs about 20 ms of each command's start-up; a value the caller set is kept
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

import typer  # noqa: E402

from synctool.console import Command, RootGroup, ctx_obj, key_values  # noqa: E402

if TYPE_CHECKING:
    from synctool import store

app = typer.Typer(
    help="Keep the donor CRM (Little Green Light) in step with the platforms that bring the organisation money and people.",
    cls=RootGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's own help: paragraphs rewrapped to the terminal, flags read as flags
)

START, DAILY, MONEY, PLATFORMS, TEAM = "Getting started", "Daily operation", "Money", "Platforms", "Team and settings"
#: every top-level command: name -> where it is (``module:attribute``, a Typer app or one command's function)
#: and its section in `synctool --help`. The platforms add theirs (``Platform.commands``) to the same table,
#: in the Platforms section. A command's module is imported only when the command is named or listed.
COMMANDS: dict[str, Command] = {
    "init": Command(lambda: init, START),  # below: it alone reads the process environment
    "platforms": Command("synctool.cli.setup:platforms", START),
    "doctor": Command("synctool.cli.checks:doctor", START),
    "test-connections": Command("synctool.cli.checks:test_connections", START),
    "crm": Command("synctool.cli.crm:app", START),
    "webhooks": Command("synctool.cli.webhooks:app", START),
    "sync-mode": Command("synctool.cli.preview:sync_mode", START),
    "preview": Command("synctool.cli.preview:preview", START),
    "demo": Command("synctool.cli.setup:demo", START),
    "serve": Command("synctool.cli.daily:serve", DAILY),
    "drain": Command("synctool.cli.jobs:drain", DAILY),
    "poll": Command("synctool.cli.daily:poll", DAILY),
    "overview": Command("synctool.cli.syncs:overview", DAILY),
    "syncs": Command("synctool.cli.syncs:app", DAILY),
    "jobs": Command("synctool.cli.jobs:app", DAILY),
    "retry-all": Command("synctool.cli.jobs:retry_all", DAILY),
    "deliveries": Command("synctool.cli.deliveries:app", DAILY),
    "stats": Command("synctool.cli.syncs:stats", DAILY),
    "alerts": Command("synctool.cli.alerts:app", DAILY),
    "backup": Command("synctool.cli.daily:backup", DAILY),
    "prune": Command("synctool.cli.daily:prune", DAILY),
    "store": Command("synctool.cli.store:app", DAILY),
    "reconcile": Command("synctool.cli.reconcile:app", MONEY),
    "year-end": Command("synctool.cli.year_end:app", MONEY),
    "backfill": Command("synctool.cli.backfill:backfill", MONEY),
    "refunds": Command("synctool.cli.refunds:app", MONEY),
    "mappings": Command("synctool.cli.mappings:app", MONEY),
    "donors": Command("synctool.cli.donors:app", MONEY),
    "events": Command("synctool.cli.events:app", MONEY),
    "plans": Command("synctool.cli.plans:app", MONEY),
    "users": Command("synctool.cli.users:app", TEAM),
    "settings": Command("synctool.cli.settings:app", TEAM),
    "inject": Command("synctool.cli.daily:inject", TEAM),
    "dev": Command("synctool.cli.dev:app", TEAM),
    "orgs": Command("synctool.cli.orgs:app", TEAM),
}


def platform_commands() -> dict[str, Command]:
    """The commands the registered platforms add, each in the Platforms section."""
    from synctool import platforms

    return {name: Command(hook, PLATFORMS) for p in platforms.registered() for name, hook in p.commands.items()}


RootGroup.table = COMMANDS
RootGroup.more = staticmethod(platform_commands)
RootGroup.titles = (START, DAILY, MONEY, PLATFORMS, TEAM)


def log_action(conn: store.Connection, action: str, target: str | None, note: str | None, outcome: str) -> None:
    """A command that changed something (``console.action``), in the staff actions log beside the staff page's
    and the admin API's: who is the OS user who ran it."""
    from synctool.ops.actions import record

    record(conn, who=_os_user(), role="cli", via="cli", action=action, target=target, note=note, outcome=outcome)


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's): its number
        return f"uid {os.getuid()}"


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
    # httpx logs each request's whole URL at INFO: a chat webhook's path is its token, so no log file may hold it
    for chatty in ("httpx", "httpcore"):
        logging.getLogger(chatty).setLevel(logging.WARNING)


@app.callback()
def root(
    ctx: typer.Context,
    config: str = typer.Option(
        None, "--config", "-c", help="config file (default: $SYNCTOOL_CONFIG or ~/.config/synctool/config.yaml)"
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="log progress to stderr"),
    log_file: str = typer.Option(None, "--log-file", help="also append log lines to this file"),
    org: str = typer.Option(
        None, "--org", help="run the command for this organisation (default: $SYNCTOOL_ORG; `synctool orgs list` names them)"
    ),
) -> None:
    from synctool import platforms

    platforms.registered()  # every platform's config section is known before the config is read
    obj = ctx_obj(ctx)
    ctx.call_on_close(obj.close_database)  # the command's connection given back as it ends (PostgreSQL's pool)
    if obj.log_action is None:
        obj.log_action = log_action
    if config is not None or obj.runtime is None:
        obj.config_path = config
    if org is not None:
        obj.org = org
    if obj.environ is None:  # the process's, read here once for every command (`orgs` too)
        obj.environ = os.environ
    environ = obj.environ
    named = obj.org if obj.org is not None else (environ.get("SYNCTOOL_ORG") or None)
    if named is not None and ctx.invoked_subcommand != "orgs":  # an unknown one is refused before any command runs
        from synctool import orgs

        orgs.find(named, environ)
    if log_file is None and ctx.invoked_subcommand not in (None, "init"):
        from synctool.errors import SynctoolError

        try:  # config's log_file, when the config can be read (a command that needs it says why not)
            log_file = obj.rt.config.log_file
        except SynctoolError:
            pass
    _setup_logging(verbose, log_file)


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
    chosen = [name.strip() for name in platforms.split(",") if name.strip()] if platforms is not None else None
    environ = os.environ if obj.environ is None else obj.environ
    result = init_op(obj.config_path, environ, force=force, platforms=chosen, currency=currency, org=obj.org)
    key_values(result)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
