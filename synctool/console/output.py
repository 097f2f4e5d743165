"""What a command prints: the output options every command that prints data shares (sqlite-utils'
``output_options`` is the model) and the one renderer behind them: JSON with ``--json``, else text for people."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Optional

import typer

from synctool.console.tables import Row, printable, table

AsJson = Annotated[bool, typer.Option("--json", help="print JSON (what the admin API returns) instead of text")]
Columns = Annotated[
    Optional[str],  # noqa: UP045  (typer reads the annotation at run time)
    typer.Option("--columns", help="comma-separated columns to show (any key of --json); default: those that fit the terminal"),
]


def emit_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def render(
    data: Any,
    as_json: bool = False,
    *,
    columns: list[str] | None = None,
    rows: Sequence[Row] | None = None,
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


def render_outcome(data: Any, as_json: bool, *, ok: bool, **how: Any) -> None:
    """``render(data, as_json, **how)``, then exit 1 unless ``ok``: a command whose exit code says how it went
    (a connection test, a record synced now)."""
    render(data, as_json, **how)
    if not ok:
        raise typer.Exit(1)


def blocks(rows: Sequence[Row], heading: Callable[[Any], str], fields: list[str]) -> None:
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


def key_values(data: Mapping[str, object]) -> None:
    width = max((len(k) for k in data), default=0)
    for key, value in data.items():
        if isinstance(value, (dict, list)):
            value = json.dumps(value, default=str)
        typer.echo(f"{key.ljust(width)}  {printable('' if value is None else str(value))}")


def exit_if_failed(failed: Mapping[str, str], what: str) -> None:
    """After a command that ran each platform in use (``ops/per_platform.py``): one line on stderr per platform that
    failed, naming it and why, then exit 1. Nothing when every platform's part ran."""
    if not failed:
        return
    for role, error in failed.items():
        typer.echo(f"Error: {what} {role} failed: {error}", err=True)
    raise typer.Exit(1)
