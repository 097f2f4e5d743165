"""A platform package outside synctool's tree (tests/data/kinddesk: KindDesk, a made-up donation platform written
from docs/platforms.md alone), built and installed into a folder of its own as pip installs any package.
Registered through the entry point group alone, it passes its own tests written with ``synctool.testing``
(webhook, refunds, local gift dates, poll, backfill, reconcile, payouts, heal, registration, its command); and
installing it changes nothing until ``platforms:`` names it.

The whole fast suite beside it is CI's (``.ci/run`` installs KindDesk into its virtualenv and runs the suite again):
no test of synctool lists the platforms by hand."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent / "data" / "kinddesk"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("outside")
    source = shutil.copytree(PACKAGE, folder / "kinddesk")  # outside synctool's tree: none of its conftest applies
    site = folder / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
           "--disable-pip-version-check", "--target", str(site), str(source)]  # fmt: skip
    built = subprocess.run(pip, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    assert list(site.glob("synctool_kinddesk-*.dist-info/entry_points.txt"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCTOOL_", "PYTEST_", "KIND_"))}
    # the package's folder first, then the caller's path (a worktree whose synctool must win over an editable install)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH", "")]))
    return source, env


def test_an_installed_platform_package_passes_its_own_tests_with_synctool_testing(installed):
    source, env = installed
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "tests"],
                         cwd=source, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert " passed" in ran.stdout and "skipped" not in ran.stdout


#: runs `synctool platforms`, `doctor` and `poll` in a process whose path holds the package, for two configs
COMMANDS = """
import json, sys
from typer.testing import CliRunner
from synctool.cli.main import app
from synctool.console import AppContext

found = {}
for name, env in json.loads(sys.argv[1]).items():
    found[name] = {}
    for command in (["platforms", "--json"], ["doctor", "--json"], ["poll", "--json"]):
        ran = CliRunner().invoke(app, command, obj=AppContext(environ=env), catch_exceptions=False)
        found[name][command[0]] = {"exit": ran.exit_code, "out": ran.stdout, "err": ran.stderr}
print(json.dumps(found))
"""


def test_installing_it_changes_nothing_until_platforms_names_it(installed, tmp_path):
    _, env = installed
    configs = {}
    for name, text in {"absent": "timezone: America/New_York\n", "named": "platforms: [givebutter, kinddesk]\n"}.items():
        (tmp_path / f"{name}.yaml").write_text(text)
        configs[name] = {"SYNCTOOL_KEYRING": "off", "SYNCTOOL_CONFIG": str(tmp_path / f"{name}.yaml"),
                         "SYNCTOOL_DB": str(tmp_path / f"{name}.db")}  # fmt: skip
    ran = subprocess.run([sys.executable, "-c", COMMANDS, json.dumps(configs)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    found = json.loads(ran.stdout)

    absent = found["absent"]
    listed = {p["name"]: p for p in json.loads(absent["platforms"]["out"])}
    assert listed["kinddesk"]["in_use"] is False and listed["givebutter"]["in_use"] is True
    assert "add kinddesk to `platforms:`" in listed["kinddesk"]["turn_on"]
    assert "KIND_" not in absent["doctor"]["out"]  # no secret of it asked for, no check of it
    assert "kind" not in json.loads(absent["poll"]["out"])["sources"]

    named = found["named"]
    listed = {p["name"]: p for p in json.loads(named["platforms"]["out"])}
    assert listed["kinddesk"]["in_use"] is True and listed["square"]["in_use"] is False
    assert listed["kinddesk"]["credentials"] == "missing: KIND_API_KEY, KIND_WEBHOOK_SECRET"
    checks = {c["check"]: c for c in json.loads(named["doctor"]["out"])}
    assert checks["secret KIND_API_KEY"]["status"] == "fail" and "kind fund" in checks
    polled = json.loads(named["poll"]["out"])
    assert list(polled["sources"]) == ["donations", "kind"] and "KIND_API_KEY" in polled["sources"]["kind"]["error"]
