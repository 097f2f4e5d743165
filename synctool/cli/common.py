"""What every command shares: the lazily opened config and database, output, and error translation."""

from __future__ import annotations

import json
import sqlite3
import sys
from dataclasses import dataclass, field
from typing import Any

import typer
from typer.core import TyperGroup

from synctool.errors import (ConfigError, Conflict, InvalidInput, NotFound, StoreUnavailable,
                             SynctoolError)

EXIT_CODES = {ConfigError: 2, InvalidInput: 2, NotFound: 3, Conflict: 4, StoreUnavailable: 5}


@dataclass
class AppContext:
    config_path: str | None = None
    _config: Any = None
    _db: sqlite3.Connection | None = None
    extra: dict = field(default_factory=dict)

    @property
    def config(self):
        if self._config is None:
            from synctool.config import load_config

            self._config = load_config(self.config_path)
        return self._config

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            from synctool import store

            self._db = store.connect(self.config.db_path)
        return self._db


def ctx_obj(ctx: typer.Context) -> AppContext:
    root = ctx.find_root()
    if root.obj is None:
        root.obj = AppContext()
    return root.obj


class SynctoolGroup(TyperGroup):
    """Turns synctool's named errors into one line on stderr and an exit code, never a traceback."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except SynctoolError as exc:
            code = next((c for t, c in EXIT_CODES.items() if isinstance(exc, t)), 1)
            detail = getattr(exc, "detail", "")
            typer.echo(f"Error: {exc}" + (f" ({detail})" if detail else ""), err=True)
            raise typer.Exit(code) from None


class RootGroup(SynctoolGroup):
    """The `synctool` group. Command groups are built only when named: typer spends about 1 ms per
    command building them, which a cron job or `syncs list --json` should not pay for 80 commands."""

    lazy: dict[str, str] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return list(super().list_commands(ctx)) + [name for name in self.lazy if name not in self.commands]

    def get_command(self, ctx: Any, name: str) -> Any:
        command = super().get_command(ctx, name)
        if command is None and name in self.lazy:
            import importlib

            module, _, attr = self.lazy[name].partition(":")
            command = typer.main.get_group(getattr(importlib.import_module(module), attr))
            command.name = name
            self.commands[name] = command
        return command


def sub_app(help_text: str) -> typer.Typer:
    return typer.Typer(help=help_text, cls=SynctoolGroup, no_args_is_help=True, add_completion=False,
                       pretty_exceptions_enable=False)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def table(rows: list[dict[str, Any]], columns: list[str], title: str | None = None) -> None:
    """A Rich table for people; ``--json`` output bypasses this."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, show_lines=False)
    for col in columns:
        t.add_column(col)
    for row in rows:
        t.add_row(*["" if row.get(c) is None else str(row.get(c)) for c in columns])
    Console().print(t)
    if not rows:
        typer.echo("(none)")


def key_values(data: dict[str, Any]) -> None:
    width = max((len(k) for k in data), default=0)
    for key, value in data.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, default=str)
        typer.echo(f"{key.ljust(width)}  {'' if value is None else value}")
