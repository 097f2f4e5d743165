"""The terminal kit every command group stands on, the CLI's and the platforms' (``commands.py``): the
lazily opened config and database, output, and error translation. It sits low so a platform's commands
use it without importing the CLI above them; the core (ops, queue, crm, store) never imports it."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from synctool.errors import SynctoolError, exit_code, one_of


@dataclass
class AppContext:
    """The command's Runtime (built on first use from ``--config`` and ``environ``, the process environment unless
    the caller hands one in with its transports: ``app(obj=AppContext(environ=..., transports=...))``)
    and its database."""

    config_path: str | None = None
    runtime: Any = None
    environ: Mapping[str, str] | None = None
    transports: Mapping[str, Any] = field(default_factory=dict)
    _db: sqlite3.Connection | None = None
    extra: dict = field(default_factory=dict)

    @property
    def rt(self):
        if self.runtime is None:
            from synctool.runtime import Runtime

            self.runtime = Runtime.from_environ(self.config_path, self.environ, transports=self.transports)
        return self.runtime

    @property
    def config(self):
        return self.rt.config

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            from synctool import store

            self._db = store.connect(self.rt.db_path)
        return self._db


def ctx_obj(ctx: typer.Context) -> AppContext:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = AppContext()
    return root.obj


#: the metavar an option's value shows in --help, by the option's name (else its name in capitals, as argparse does)
METAVARS = {
    "config": "PATH", "log-file": "PATH", "csv": "PATH", "from": "DATE", "to": "DATE", "until": "DATE",
    "since": "WHEN", "columns": "COL,...", "base-url": "URL", "url": "URL", "email": "EMAIL",
}  # fmt: skip


def name_metavars(params: list[Any]) -> None:
    """``--from DATE`` rather than typer's ``--from <str>``; a flag shows no value at all."""
    for param in params:
        if getattr(param, "param_type_name", "") != "option" or param.is_flag or param.count or param.metavar:
            continue
        long = max(param.opts, key=len).lstrip("-")
        param.metavar = METAVARS.get(long, long.upper().replace("-", "_"))


def summary(command: Any) -> str:
    """A command's one-line summary for the command list: the first sentence of its help, whole (the list
    wraps it at the terminal's width rather than cutting it)."""
    text = command.short_help or command.help or ""
    first = " ".join(text.strip().split("\n\n")[0].split())
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", first)[0]


class SynctoolGroup(TyperGroup):
    """Turns synctool's named errors into one line on stderr and an exit code, never a traceback; its help
    lists each command with a whole-sentence summary."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.invoke_without_command:  # a group that lists when named alone (`mappings overrides`) runs, not helps
            self.no_args_is_help = False

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except SynctoolError as exc:
            code = exit_code(exc)
            detail = getattr(exc, "detail", "")
            typer.echo(f"Error: {exc}" + (f" ({detail})" if detail else ""), err=True)
            raise typer.Exit(code) from None

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        name_metavars(params)
        return params

    def get_command(self, ctx: Any, name: str) -> Any:
        command = super().get_command(ctx, name)
        if command is not None:
            name_metavars(command.params)
        return command

    #: (title, command names) for the command list; one section, "Commands", when empty
    sections: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        found = {n: c for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) is not None and not c.hidden}
        placed: set[str] = set()
        for title, names in self.sections:
            rows = [(n, summary(found[n])) for n in names if n in found]
            placed.update(n for n, _ in rows)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
        rest = [(n, summary(c)) for n, c in found.items() if n not in placed]
        if rest:
            with formatter.section("Other commands" if self.sections else "Commands"):
                formatter.write_dl(rest)


class RootGroup(SynctoolGroup):
    """The `synctool` group. Command groups are built only when named: typer spends about 1 ms per
    command building them, which a cron job or `syncs list --json` should not pay for 80 commands."""

    lazy: dict[str, str] = {}
    #: the platforms' own command groups (name -> ``module:app``), read from the registry only when a name
    #: is not a built-in's or the whole list is shown: `syncs list` does not load every platform
    platform_groups: Callable[[], dict[str, Callable[[], Any]]] = staticmethod(dict)
    #: the top-level commands by task (a platform's own group joins "Platforms" by itself)
    sections: tuple[tuple[str, tuple[str, ...]], ...] = (
        (
            "Getting started",
            ("init", "platforms", "doctor", "test-connections", "crm", "webhooks", "backfill", "sync-mode", "preview", "demo"),
        ),
        (
            "Daily operation",
            ("serve", "drain", "poll", "overview", "syncs", "jobs", "retry-all", "deliveries", "stats", "alerts",
             "backup", "prune"),
        ),
        ("Money", ("reconcile", "year-end", "refunds", "mappings", "donors", "events")),
        ("Platforms", ()),
        ("Team and settings", ("users", "settings", "inject", "dev")),
    )  # fmt: skip

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        platforms = tuple(self.platform_groups())
        self.sections = tuple((title, platforms if title == "Platforms" else names) for title, names in type(self).sections)
        super().format_commands(ctx, formatter)

    def list_commands(self, ctx: Any) -> list[str]:
        every = {**self.lazy, **self.platform_groups()}
        return list(super().list_commands(ctx)) + [name for name in every if name not in self.commands]

    def get_command(self, ctx: Any, name: str) -> Any:
        command = super().get_command(ctx, name)
        if command is None and name not in self.commands:
            if name in self.lazy:  # the CLI's own groups: ``module:attribute``
                import importlib

                module, _, attr = self.lazy[name].partition(":")
                app = getattr(importlib.import_module(module), attr)
            elif name in (groups := self.platform_groups()):  # a platform's: its hook returns the app
                app = groups[name]()
            else:
                return None
            command = typer.main.get_group(app)
            command.name = name
            self.commands[name] = command
        return command


def sub_app(help_text: str) -> typer.Typer:
    return typer.Typer(
        help=help_text,
        cls=SynctoolGroup,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # click's own help: paragraphs rewrapped to the terminal, flags read as flags
    )


#: the output options every command that prints data shares (sqlite-utils' ``output_options`` is the model)
AsJson = Annotated[bool, typer.Option("--json", help="print JSON (what the admin API returns) instead of text")]
Columns = Annotated[
    Optional[str],  # noqa: UP045  (typer reads the annotation at run time)
    typer.Option("--columns", help="comma-separated columns to show (any key of --json); default: those that fit the terminal"),
]


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def render(
    data: Any,
    as_json: bool = False,
    *,
    columns: list[str] | None = None,
    rows: list[dict[str, Any]] | None = None,
    chosen: str | None = None,
    title: str | None = None,
    people: Callable[[Any], None] | None = None,
) -> None:
    """The one renderer: ``data`` as JSON with ``--json``; else ``people(data)`` when a command words its
    own text, a table of ``rows`` (default: ``data``) when it names ``columns`` (``chosen`` is
    ``--columns``), one ``key  value`` line per field for an object, a table for a list of objects."""
    if as_json:
        emit_json(data)
    elif people is not None:
        people(data)
    elif columns is not None:
        table(data if rows is None else rows, columns, title, chosen=chosen)
    elif isinstance(data, dict):
        key_values(data)
    elif isinstance(data, list) and all(isinstance(r, dict) for r in data):
        table(data, list(dict.fromkeys(k for r in data for k in r)), title, chosen=chosen)
    else:
        typer.echo(data)


#: columns whose text may be cut short to fit; the others keep their width or are left out
TEXT_COLUMNS = {
    "message",
    "error",
    "last_error",
    "outcome",
    "title",
    "name",
    "label",
    "emails",
    "tags",
    "note",
    "values",
    "description",
    "what",
    "entity",
    "why",
    "can",
    "credentials",
}
MIN_TEXT_WIDTH = 10
#: the text columns that say what happened (a failed record's error): they widen before the others
FIRST_TO_GROW = {"message", "error", "last_error", "why", "credentials"}
GAP = 2  # between two columns: a space of padding, then Rich's (invisible) separator


def pick_columns(rows: list[dict[str, Any]], columns: list[str], width: int, chosen: str | None = None) -> dict[str, int | None]:
    """The columns to show and their widths: ``chosen`` (checked against what the rows hold; Rich sizes
    them), else the most important of ``columns`` (in their order of importance) that fit ``width`` at their
    natural width, text columns cut to what is left but never below ``MIN_TEXT_WIDTH``."""
    if chosen:
        wanted = [c.strip() for c in chosen.split(",") if c.strip()]
        known = list(dict.fromkeys([*columns, *(k for r in rows for k in r)]))
        for col in wanted:
            one_of(col, known, "column")
        return dict.fromkeys(wanted)
    natural = {c: max([len(c)] + [len(str(r.get(c) if r.get(c) is not None else "")) for r in rows[:200]]) for c in columns}
    widths: dict[str, int] = {}
    used = -GAP  # no gap before the first column
    for col in columns:
        need = min(natural[col], MIN_TEXT_WIDTH) if col in TEXT_COLUMNS else natural[col]
        if used + GAP + need > width:
            break  # a less important column never takes the place of a more important one
        widths[col] = need
        used += GAP + need
    # what is left goes first to the column that says what happened, then to the other text columns
    for col in [c for c in widths if c in FIRST_TO_GROW]:
        extra = min(natural[col] - widths[col], width - used)
        widths[col] += max(extra, 0)
        used += max(extra, 0)
    growing = [c for c in widths if c in TEXT_COLUMNS]
    while growing and used < width:  # what is left widens the text columns, a character each in turn
        for col in list(growing):
            if used >= width or widths[col] >= natural[col]:
                growing.remove(col)
                continue
            widths[col] += 1
            used += 1
    return {c: widths[c] for c in columns if c in widths} or {columns[0]: None}


def table(rows: list[dict[str, Any]], columns: list[str], title: str | None = None, *, chosen: str | None = None) -> None:
    """A Rich table for people that fits the terminal (``--json`` output bypasses this): ``columns`` in
    their order of importance; text columns are cut short before any column is left out."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console()
    shown = pick_columns(rows, columns, console.width, chosen)
    t = Table(title=title, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    for col, width in shown.items():
        t.add_column(col, overflow="ellipsis", no_wrap=True, min_width=width, max_width=width)
    for row in rows:
        t.add_row(*["" if row.get(c) is None else str(row.get(c)) for c in shown])
    console.print(t)
    if not rows:
        typer.echo("(none)")


def key_values(data: dict[str, Any]) -> None:
    width = max((len(k) for k in data), default=0)
    for key, value in data.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, default=str)
        typer.echo(f"{key.ljust(width)}  {'' if value is None else value}")


def exit_if_failed(failed: Mapping[str, str], what: str) -> None:
    """After a command that ran each platform in use (``ops/each.py``): one line on stderr per platform that
    failed, naming it and why, then exit 1. Nothing when every platform's part ran."""
    if not failed:
        return
    for role, error in failed.items():
        typer.echo(f"Error: {what} {role} failed: {error}", err=True)
    raise typer.Exit(1)
