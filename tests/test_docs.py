"""Every command has help text with an example; the command reference in docs/ is written from the
commands and current; the README links every document in docs/; the output options are one set."""

from __future__ import annotations

from pathlib import Path

import typer

from synctool.cli.main import app
from synctool.cli.reference import commands, markdown

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


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


def test_the_command_reference_is_current_and_names_every_command():
    written = (ROOT / "docs" / "commands.md").read_text()
    assert written == markdown(), "docs/commands.md is out of date: python -m synctool.cli.reference > docs/commands.md"
    missing = [path for path, _ in ALL if f"## `{path}`" not in written]
    assert missing == []


def test_the_readme_links_every_document_and_stays_a_guide():
    for doc in (ROOT / "docs").glob("*.md"):
        assert f"docs/{doc.name}" in README, doc.name
    assert len(README.splitlines()) < 300


def test_json_and_columns_are_one_option_set():
    """Every --json and --columns is the shared option (cli.common.AsJson / Columns): one help text each."""
    helps: dict[str, set[str]] = {"--json": set(), "--columns": set()}
    for _, command in ALL:
        for param in command.params:
            for name in helps:
                if name in getattr(param, "opts", []):
                    helps[name].add(param.help)
    assert len(helps["--json"]) == 1 and len(helps["--columns"]) == 1, helps


def test_readme_opens_with_the_two_commands():
    block = README.split("```bash", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block[0].endswith("synctool demo") and "pytest" in block[1]
