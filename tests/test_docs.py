"""Every command has help text with an example, and the README names it."""

from __future__ import annotations

from pathlib import Path

import typer

from synctool.cli.main import app

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def commands(group, prefix: str = "synctool"):
    ctx = typer.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        path = f"{prefix} {name}"
        if hasattr(command, "list_commands"):  # a group (typer 0.21+ ships its own click)
            if command.invoke_without_command:  # a group that also lists: its help is a command's
                yield path, command
            yield from commands(command, path)
        else:
            yield path, command


ALL = list(commands(typer.main.get_command(app)))


def test_there_are_many_commands():
    assert len(ALL) > 80


def test_every_command_has_help_with_an_example():
    missing = [path for path, command in ALL if "Example:" not in (command.help or "")]
    assert missing == []
    wrong = [
        path
        for path, command in ALL
        if not any(line.strip().startswith(f"Example: {path}") for line in (command.help or "").splitlines())
    ]
    assert wrong == []


def test_every_command_is_in_the_readme():
    missing = [path for path, _ in ALL if path not in README and path.replace("synctool ", "", 1) not in README]
    assert missing == []


def test_readme_opens_with_the_two_commands():
    block = README.split("```bash", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block[0].endswith("synctool demo") and "pytest" in block[1]
