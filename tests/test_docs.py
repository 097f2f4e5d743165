"""Every command has help text with an example; the command reference in docs/ is written from the
commands and current; the README links every document in docs/; the output options are one set."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from synctool.cli.main import app
from synctool.cli.reference import commands, markdown, outside_groups

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


ALL = list(commands(typer.main.get_command(app)))


def the_cli_tree(group: Any, prefix: str = "synctool") -> set[str]:
    """Every command the CLI runs (a group that runs without a subcommand too), walked here from click's own
    groups, not by the reference's writer, so a writer that skipped some would not hide them."""
    ctx = typer.Context(group)
    found = set()
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if command.hidden:
            continue
        path = f"{prefix} {name}"
        if hasattr(command, "list_commands"):  # a group (typer's own click)
            found |= the_cli_tree(command, path) | ({path} if command.invoke_without_command else set())
        else:
            found.add(path)
    return found


def test_the_documented_commands_are_the_cli_s_commands_both_ways():
    documented = set(re.findall(r"^## `(synctool[^`]*)`$", (ROOT / "docs" / "commands.md").read_text(), re.M))
    outside = outside_groups()
    real = {path for path in the_cli_tree(typer.main.get_command(app)) if (path.split() + [""])[1] not in outside}
    assert len(real) > 80 and {"synctool init", "synctool drain", "synctool settings plans-report-changes"} <= real
    assert sorted(real - documented) == [], "commands docs/commands.md does not document"
    assert sorted(documented - real) == [], "commands docs/commands.md documents that the CLI does not have"


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
    outside = outside_groups()
    missing = [path for path, _ in ALL if f"## `{path}`" not in written and (path.split() + [""])[1] not in outside]
    assert missing == []


def test_the_readme_links_every_document_and_stays_a_guide():
    for doc in (ROOT / "docs").glob("*.md"):
        assert f"docs/{doc.name}" in README, doc.name
    assert len(README.splitlines()) < 300


def test_json_and_columns_are_one_option_set():
    """Every --json and --columns is the shared option (console.AsJson / Columns): one help text each."""
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


def test_help_reads_as_help(cli, env):
    """Whole-sentence summaries wrapped at the terminal's width, flags without a value, values named for what
    they are, and the top-level commands grouped by task."""
    env["COLUMNS"] = "100"
    out = cli("--help").stdout
    for section in ("Getting started:", "Daily operation:", "Money:", "Platforms:", "Team and settings:"):
        assert section in out, out
    assert "<bool>" not in out and "<str>" not in out and "--config PATH" in out
    assert not [line for line in out.splitlines()[1:] if line.endswith("...")]  # no summary cut short
    assert "page the history of each platform that offers one" in " ".join(out.split())
    platforms = out.split("Platforms:")[1].split("\n\n")[0]
    assert all(name in platforms for name in ("donations", "pos", "mailing", "portal"))
    reconcile = cli("reconcile", "--help").stdout
    assert "--from DATE" in reconcile and "--fix " in reconcile and "<" not in reconcile.split("Options:")[1]
