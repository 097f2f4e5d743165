"""The command reference (docs/commands.md), written from the commands themselves: each one's help text,
usage and options, as `--help` shows them, in Markdown. A test fails when the file is out of date.

    python -m synctool.cli.reference > docs/commands.md
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

HEADER = """# Command reference

Every synctool command, written from the commands themselves (`python -m synctool.cli.reference >
docs/commands.md`; a test fails when this file is out of date). `synctool COMMAND --help` shows the same.
Listing commands share `--json` (the data the admin API returns) and `--columns`; usage errors exit 2, an
unknown id 3, a refused state change 4.
"""


def commands(group: Any, prefix: str = "synctool") -> Iterator[tuple[str, Any]]:
    """``(path, command)`` for every command under ``group``, in the order ``--help`` lists them."""
    ctx = typer.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        path = f"{prefix} {name}"
        if hasattr(command, "list_commands"):
            if command.invoke_without_command:  # a group that also lists: its help is a command's
                yield path, command
            yield from commands(command, path)
        else:
            yield path, command


def _option(param: Any) -> str:
    names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
    if param.param_type_name == "argument":
        names = f"`{(param.metavar or param.name).upper()}`"
    parts = [param.help or ""]
    if getattr(param, "required", False):
        parts.append("(required)")
    default = param.default
    if param.param_type_name == "option" and default not in (None, False, (), []) and not callable(default):
        parts.append(f"(default: `{default}`)")
    return f"| {names} | {' '.join(p for p in parts if p).replace('|', '/')} |"


def outside_groups() -> set[str]:
    """The command groups of platform packages installed beside synctool: not synctool's own reference."""
    from synctool import platforms

    return {name for p in platforms.registered() if p.name not in platforms.DEFAULT_PLATFORMS for name in p.commands}


def markdown() -> str:
    from synctool.cli.main import app

    out = [HEADER]
    root = typer.main.get_command(app)
    outside = outside_groups()
    for path, command in commands(root):
        if len(path.split()) > 1 and path.split()[1] in outside:
            continue
        out.append(f"## `{path}`\n")
        pieces = " ".join(command.collect_usage_pieces(typer.Context(command)))
        out.append(f"```\n{path} {pieces}\n```\n")
        out.append((command.help or "").strip() + "\n")
        params = [p for p in command.params if p.name not in ("help",)]
        if params:
            out.append("| option | meaning |\n|---|---|")
            out.extend(_option(p) for p in params)
            out.append("")
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(markdown())
