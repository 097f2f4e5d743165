"""Command groups: synctool's errors become one line on stderr and an exit code, never a traceback; help lists
each command with a whole-sentence summary and names each option's value (``--from DATE``). The root group is
built from one table of commands, each imported only when it is named."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup, TyperOption
from typer.models import CommandInfo

from synctool.console.context import ctx_obj
from synctool.console.output import AsJson, render
from synctool.errors import SynctoolError, exit_code
from synctool.lazy import load

if TYPE_CHECKING:  # typer's own copy of click, which it does not name publicly
    from typer._click.core import Command as ClickCommand
    from typer._click.core import Context, Parameter
    from typer._click.formatting import HelpFormatter

    from synctool import store

#: the metavar an option's value shows in --help, by the option's name (else its name in capitals, as argparse does)
METAVARS = {
    "config": "PATH", "log-file": "PATH", "csv": "PATH", "from": "DATE", "to": "DATE", "until": "DATE",
    "since": "WHEN", "columns": "COL,...", "base-url": "URL", "url": "URL", "email": "EMAIL",
}  # fmt: skip


def name_metavars(params: list[Parameter]) -> None:
    """``--from DATE`` rather than typer's ``--from <str>``; a flag shows no value at all. (Click's objects here
    and below are typer's own copy of click, which it does not name publicly.)"""
    for param in params:
        if not isinstance(param, TyperOption) or param.is_flag or param.count or param.metavar:
            continue
        long = max(param.opts, key=len).lstrip("-")
        param.metavar = METAVARS.get(long, long.upper().replace("-", "_"))


def summary(command: ClickCommand) -> str:
    """A command's one-line summary for the command list: the first sentence of its help, whole (the list
    wraps it at the terminal's width rather than cutting it)."""
    text = command.short_help or command.help or ""
    first = " ".join(text.strip().split("\n\n")[0].split())
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", first)[0]


def _write_section(formatter: HelpFormatter, title: str, rows: list[tuple[str, str]]) -> None:
    if rows:
        with formatter.section(title):
            formatter.write_dl(rows)


class SynctoolGroup(TyperGroup):
    """Turns synctool's named errors into one line on stderr and an exit code, never a traceback; its help
    lists each command with a whole-sentence summary."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # (click's own arguments, passed on)
        super().__init__(*args, **kwargs)
        if self.invoke_without_command:  # a group that lists when named alone (`mappings overrides`) runs, not helps
            self.no_args_is_help = False

    def invoke(self, ctx: Context) -> Any:  # (what the command's function returned)
        try:
            return super().invoke(ctx)
        except SynctoolError as exc:
            code = exit_code(exc)
            detail = getattr(exc, "detail", "")
            typer.echo(f"Error: {exc}" + (f" ({detail})" if detail else ""), err=True)
            raise typer.Exit(code) from None

    def get_params(self, ctx: Context) -> list[Parameter]:
        params = super().get_params(ctx)
        name_metavars(params)
        return params

    def get_command(self, ctx: Context, name: str) -> ClickCommand | None:
        command = super().get_command(ctx, name)
        if command is not None:
            name_metavars(command.params)
        return command

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        rows = [(n, summary(c)) for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) is not None and not c.hidden]
        _write_section(formatter, "Commands", rows)


#: what a ``Command`` names: a Typer app (a command group) or a function (one command)
CommandTarget = typer.Typer | Callable[..., object]


@dataclass(frozen=True)
class Command:
    """One top-level command of `synctool`, the core's and a platform's alike (``Platform.commands``): where it
    is and the section of `synctool --help` that lists it. ``target`` is ``"module:attribute"`` (a Typer app: a
    command group; or a function: one command) or a function that returns either (a platform's hook). It is
    imported only when the command is named or the whole list is shown."""

    target: str | Callable[[], object]
    section: str


def load_command(name: str, entry: Command) -> ClickCommand:
    """The click command of a table entry: a Typer app becomes a group, a function one command."""
    found = load(entry.target) if isinstance(entry.target, str) else entry.target()
    command: ClickCommand
    if isinstance(found, typer.Typer):
        command = typer.main.get_group(found)
    elif not callable(found):
        raise TypeError(f"the command {name!r} is neither a Typer app nor a function: {found!r}")
    else:  # one command, built as ``app.command(name)(found)`` would build it
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

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        every = self.every()
        found = {n: c for n in every if (c := self.get_command(ctx, n)) is not None and not c.hidden}
        titles = list(dict.fromkeys([*self.titles, *(entry.section for entry in every.values())]))
        for title in titles:
            _write_section(formatter, title, [(n, summary(c)) for n, c in found.items() if every[n].section == title])

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.every())

    def get_command(self, ctx: Context, name: str) -> ClickCommand | None:
        command = self.commands.get(name)
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


def listing_group(
    parent: typer.Typer,
    name: str,
    help_text: str,
    rows: Callable[[store.Connection], Sequence[Mapping[str, object]]],
    columns: list[str],
) -> typer.Typer:
    """The command group ``parent name``, which lists what ``rows`` reads from the database when named alone (a
    table of ``columns``, or ``--json``) and holds the commands that change it: `synctool mappings funds`
    lists the fund overrides, `synctool mappings funds set` sets one."""
    group = sub_app(help_text)

    def list_rows(ctx: typer.Context, as_json: AsJson = False) -> None:
        if ctx.invoked_subcommand is None:
            render(rows(ctx_obj(ctx).db), as_json, columns=columns)

    group.callback(invoke_without_command=True)(list_rows)
    parent.add_typer(group, name=name)
    return group
