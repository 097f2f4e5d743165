"""A platform declares its hooks: each names its function by reference (``synctool.platforms.hooks``), resolved in
one place (``synctool.lazy.load``), and every reference of every registered platform resolves to a function that takes what
the core passes, as the contract's types say (``synctool.platforms.contract``; docs/platforms.md gives them field by
field and ``tests/test_platform_docs.py`` holds the page to them). Declaring a platform imports none of its hooks'
modules, so start-up stays lazy."""

from __future__ import annotations

import ast
import dataclasses
import json
import sqlite3
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from synctool import platforms
from synctool.platforms import Hook, Loaded, Served
from synctool.platforms.reconcile import Expected, Payout
from synctool.platforms.webhook import Missed
from synctool.runtime import Runtime
from synctool.testing import hook_problems

REGISTERED = platforms.registered()
PACKAGE = Path(platforms.__file__).resolve().parent


@pytest.mark.parametrize("platform", REGISTERED, ids=[p.name for p in REGISTERED])
def test_every_hook_a_platform_names_resolves_with_the_signature_the_contract_gives(platform: platforms.Platform):
    assert hook_problems(platform) == []


def test_a_reference_to_nothing_or_to_a_function_with_other_parameters_is_found_before_it_is_called():
    givebutter = next(p for p in REGISTERED if p.name == "givebutter")
    wrong = dataclasses.replace(
        givebutter,
        poll=Hook("synctool.platforms.givebutter.poll:no_such_function"),
        expected=Hook("synctool.platforms.givebutter.poll:poll"),  # (conn, rt, *, fresh, lookback): not (conn, rt, start, end)
        registration=Loaded("synctool.platforms.givebutter.client"),  # a module with no status() or register()
        handlers={"transaction": Hook("synctool.platforms.givebutter.no_such_module:transaction")},
        fake=dataclasses.replace(givebutter.fake, make=Served("synctool.platforms.givebutter.fake:NoSuchFake")),  # type: ignore[arg-type]
    )
    found = {line.split(":", 1)[0] for line in hook_problems(wrong)}
    assert found == {"poll", "expected", "registration", "handlers.transaction", "fake.make"}


def test_no_built_in_platform_wraps_a_hook_by_hand():
    """No function of a platform package's ``__init__.py`` imports inside its body: each hook is a reference."""
    wrappers = [
        f"{path.relative_to(PACKAGE.parent)}:{node.name}"
        for path in sorted(PACKAGE.glob("*/__init__.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and any(isinstance(n, ast.Import | ast.ImportFrom) for n in ast.walk(node))
    ]
    assert wrappers == []


def test_declaring_the_platforms_imports_none_of_their_hooks_modules():
    code = (
        "import json, sys; from synctool import platforms; platforms.registered();"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('synctool.platforms.') and m.count('.') > 2)))"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(ran.stdout) == []


# A tiny platform's hooks, deliberately wrong in their types only: each takes as many arguments as the core passes.
def poll_with_a_wrong_parameter_type(
    conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: int | None = None
) -> dict[str, object]:
    return {}


def expected_with_a_wrong_return_type(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> list[Expected]:
    return []


def missed_with_its_parameters_swapped(conn: sqlite3.Connection, since: str, rt: Runtime) -> tuple[list[Missed], int]:
    return [], 0


def checks_without_annotations(conn, rt):  # type: ignore[no-untyped-def]
    return []


def payouts_as_the_contract_types_them(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    return [], 0


def test_a_hook_of_the_wrong_types_is_named_with_what_is_wrong():
    here = __name__
    tiny = platforms.Platform(
        name="tiny",
        role="tiny",
        poll=Hook(f"{here}:poll_with_a_wrong_parameter_type"),
        expected=Hook(f"{here}:expected_with_a_wrong_return_type"),
        missed=Hook(f"{here}:missed_with_its_parameters_swapped"),
        checks=Hook(f"{here}:checks_without_annotations"),
        payouts=Hook(f"{here}:payouts_as_the_contract_types_them"),
    )
    found = {line.split(":", 1)[0]: line for line in hook_problems(tiny)}
    assert sorted(found) == ["checks", "expected", "missed", "poll"]
    assert "lookback is int | None, the core passes str | None" in found["poll"]
    assert "it returns list[" in found["expected"] and "the hook answers tuple[list[" in found["expected"]
    assert "since is str, the core passes Runtime" in found["missed"]
    assert "conn is not annotated" in found["checks"]


def test_a_hook_whose_types_come_from_a_relative_import_for_type_checkers_resolves(tmp_path, monkeypatch):
    """An outside package's module that imports its types under ``if TYPE_CHECKING:`` relatively (``from .types
    import ...``), beside a stub-only import, is read as the module would read it: its hook is as the contract says."""
    package = tmp_path / "relkind"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kinds.py").write_text("from collections.abc import Mapping\nAnswer = Mapping[str, object]\n")
    (package / "poll.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    import sqlite3\n"
        "    from _typeshed import StrPath\n"  # a stub-only module: no module to import at run time
        "    from synctool.runtime import Runtime\n"
        "    from .kinds import Answer\n"
        "def poll(conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> Answer:\n"
        "    return {}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    kind = platforms.Platform(name="relkind", role="relkind", poll=Hook("relkind.poll:poll"))
    assert hook_problems(kind) == []
