"""The terminal kit every command group stands on, the CLI's and the platforms' (``commands.py``): the
lazily opened config and database, output, and error translation. It sits low so a platform's commands
use it without importing the CLI above them; the core (ops, queue, crm, store) never imports it."""

from __future__ import annotations

import functools
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
    #: writes one row of the staff actions log: ``(conn, action, target, note, outcome)`` (the CLI's root sets it,
    #: ``synctool.cli.main``; none: a command run without the root records nothing)
    log_action: Callable[[sqlite3.Connection, str, str | None, str | None, str], None] | None = None

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
            from synctool import renamed_keys, store

            self._db = store.connect(self.rt.db_path)
            for line in renamed_keys.unsaid(self._db, self.rt.config):
                typer.echo(line, err=True)
        return self._db


def ctx_obj(ctx: typer.Context) -> AppContext:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = AppContext()
    return root.obj


#: a command's argument by its parameter's name, or a function of its arguments
Said = str | Callable[[dict[str, Any]], Any] | None


def action(
    target: Said = None, *, note: Said = None, when: Callable[[dict[str, Any]], Any] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Marks a command that changes something, so each run of it joins the staff actions log that the staff
    page and the admin API write (`synctool syncs actions`): who ran it (the OS user), role and ``via`` ``cli``,
    the command (``jobs retry``), its target (the argument ``target`` names, or what it makes of the arguments),
    the note (``note``'s, alike) and the outcome: ``done``, ``refused: <why>`` or ``failed (exit N)``. Not
    written: a run with ``--dry-run``, or one that ``when(arguments)`` says changes nothing (a show-or-set
    command that only shows).

    The one place a CLI action is recorded: a command names what it acts on, never how it is written."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            ctx = kwargs.get("ctx")  # click's context (typer hands over its base class, not ``typer.Context``)
            if ctx is None or kwargs.get("dry_run") or (when is not None and not when(kwargs)):
                return fn(*args, **kwargs)
            said, aim = _value(note, kwargs), _value(target, kwargs)
            try:
                result = fn(*args, **kwargs)
            except SynctoolError as exc:
                _log(ctx, aim, said, f"refused: {exc}")
                raise
            except typer.Exit as exc:
                _log(ctx, aim, said, "done" if not exc.exit_code else f"failed (exit {exc.exit_code})")
                raise
            _log(ctx, aim, said, "done")
            return result

        run.synctool_action = True  # type: ignore[attr-defined]  # (tests list the commands that are actions)
        return run

    return mark


def _value(said: Said, arguments: dict[str, Any]) -> str | None:
    if said is None:
        return None
    value = said(arguments) if callable(said) else arguments.get(said)
    if value is None or value == "" or value == [] or value == ():
        return None
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _log(ctx: Any, target: str | None, note: str | None, outcome: str) -> None:
    """One row of the staff actions log for the running command, when the database can be opened (a command
    that failed because it cannot has nothing to record in)."""
    obj = ctx_obj(ctx)
    if obj.log_action is None:
        return
    names = []
    at: Any = ctx
    while at.parent is not None:
        names.append(at.info_name)
        at = at.parent
    try:
        obj.log_action(obj.db, " ".join(reversed(names)), target, note, outcome)
    except SynctoolError:
        pass


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

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = [(n, summary(c)) for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) is not None and not c.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@dataclass(frozen=True)
class Command:
    """One top-level command of `synctool`, the core's and a platform's alike (``Platform.commands``): where it
    is and the section of `synctool --help` that lists it. ``target`` is ``"module:attribute"`` (a Typer app: a
    command group; or a function: one command) or a function that returns either (a platform's hook). It is
    imported only when the command is named or the whole list is shown."""

    target: str | Callable[[], Any]
    section: str


def load_command(name: str, entry: Command) -> Any:
    """The click command of a table entry: a Typer app becomes a group, a function one command."""
    if isinstance(entry.target, str):
        import importlib

        module, _, attr = entry.target.partition(":")
        found = getattr(importlib.import_module(module), attr)
    else:
        found = entry.target()
    command: Any
    if isinstance(found, typer.Typer):
        command = typer.main.get_group(found)
    else:  # one command, built as ``app.command(name)(found)`` would build it
        from typer.models import CommandInfo

        command = typer.main.get_command_from_info(
            CommandInfo(name=name, callback=found), pretty_exceptions_short=True, rich_markup_mode=None
        )
    command.name = name
    name_metavars(command.params)
    return command


class RootGroup(SynctoolGroup):
    """The `synctool` group, built from one table of commands (name -> ``Command``) that the CLI and the
    platforms feed; its help lists them by section. A command is built only when named: typer spends about
    1 ms per command building them, which a cron job or `syncs list --json` should not pay for 80 commands."""

    #: the core's commands, in the order `--help` lists them within their sections
    table: dict[str, Command] = {}
    #: the commands the platforms add (``Platform.commands``), read from the registry only when a name is not
    #: the core's or the whole list is shown: `syncs list` does not load every platform
    more: Callable[[], dict[str, Command]] = staticmethod(dict)
    #: the sections of `--help`, in order (a section no title names comes after them)
    titles: tuple[str, ...] = ()

    def every(self) -> dict[str, Command]:
        """The whole table: the core's commands, then the platforms' (a core name is never taken)."""
        return {**self.table, **{name: entry for name, entry in self.more().items() if name not in self.table}}

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        every = self.every()
        found = {n: c for n in every if (c := self.get_command(ctx, n)) is not None and not c.hidden}
        titles = list(dict.fromkeys([*self.titles, *(entry.section for entry in every.values())]))
        for title in titles:
            rows = [(n, summary(c)) for n, c in found.items() if every[n].section == title]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.every())

    def get_command(self, ctx: Any, name: str) -> Any:
        command: Any = self.commands.get(name)
        if command is None:
            entry = self.table.get(name) or self.more().get(name)
            if entry is None:
                return None
            command = self.commands[name] = load_command(name, entry)
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


def blocks(rows: list[dict[str, Any]], heading: Callable[[dict[str, Any]], str], fields: list[str]) -> None:
    """One block per row, for rows too wide for a table: a heading line, then ``field  value`` lines indented
    under it, the values wrapped at the terminal's width between words: nothing is cut short (a secret's
    name, a command). A field a row has no value for is left out."""
    import shutil
    import textwrap

    width = shutil.get_terminal_size().columns
    label = max((len(f) for f in fields), default=0)
    indent = " " * (2 + label + 2)
    out = []
    for n, row in enumerate(rows):
        out.extend([""] * (n > 0) + [heading(row)])
        for name in fields:
            value = row.get(name)
            if value is None or value == "":
                continue
            lines = textwrap.wrap(
                str(value),
                max(width - len(indent), 20),
                break_long_words=False,
                break_on_hyphens=False,
            )
            out.append(f"  {name.replace('_', ' ').ljust(label)}  {lines[0]}")
            out.extend(indent + line for line in lines[1:])
    typer.echo("\n".join(out))


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
