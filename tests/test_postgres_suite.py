"""The fast suite on PostgreSQL (``SYNCTOOL_TEST_ENGINE=postgresql``): the list of what still fails there only
shrinks, and the command gate lets through what works and refuses the rest in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import KNOWN_FAILURES, known_failures

TESTS = Path(__file__).parent


def test_every_known_failure_names_a_test_that_exists_and_says_why() -> None:
    listed = known_failures()
    lines = [line for line in KNOWN_FAILURES.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert len(lines) == len(listed), "a test is listed twice"
    for test, why in listed.items():
        assert why, f"{test}: no reason given"
        path, _, name = test.partition("::")
        function = name.split("[", 1)[0]
        assert (TESTS.parent / path).is_file(), f"{test}: no such file"
        source = (TESTS.parent / path).read_text()
        assert re.search(rf"^(async )?def {re.escape(function)}\(", source, re.M), f"{test}: no such test"
        marked = re.search(rf"sqlite_only\([^)]*\)\n(@.*\n)*(async )?def {re.escape(function)}\(", source)
        assert not marked, f"{test}: marked sqlite_only, never run on PostgreSQL"
    assert list(listed) == sorted(listed), "kept in order, so that merges stay easy"


def test_the_known_failures_file_reads_as_one_test_and_its_reason_a_line(tmp_path: Path) -> None:
    (tmp_path / "known.txt").write_text("# heading\n\ntests/test_x.py::test_a[p]  # why it fails\n")
    assert known_failures(tmp_path / "known.txt") == {"tests/test_x.py::test_a[p]": "why it fails"}


@pytest.mark.no_database
def test_the_commands_run_on_postgresql(cli, env, pg_url: str) -> None:
    env["SYNCTOOL_DB"] = pg_url
    put = cli("settings", "alert-recipients", "ops@example.org")
    assert put.exit_code == 0, put.output
    shown = cli("settings", "alert-recipients", "--json")
    assert shown.exit_code == 0 and "ops@example.org" in shown.output, shown.output
