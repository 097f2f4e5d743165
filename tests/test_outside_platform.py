"""A platform package outside synctool's tree (tests/data/kinddesk: KindDesk, a made-up donation platform with its
own config section), built and installed into a folder of its own as pip installs any package. Registered through
the entry point group alone, it passes its own tests written with ``synctool.testing`` (receiver, drain, poll,
backfill, reconcile, mappings, doctor, test-connections, ``synctool platforms``), and synctool's tests that take
their platform lists from the registry (marked ``registry``) stay green beside it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(__file__).parent / "data" / "kinddesk"
#: the modules whose tests take their platform lists from the registry (those tests are marked ``registry``)
LISTING = [
    "tests/test_runtime.py",
    "tests/test_inbox.py",
    "tests/test_platforms.py",
    "tests/test_admin.py",
    "tests/test_receiver.py",
]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    folder = tmp_path_factory.mktemp("outside")
    source = shutil.copytree(PACKAGE, folder / "kinddesk")
    site = folder / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
           "--disable-pip-version-check", "--target", str(site), str(source)]  # fmt: skip
    built = subprocess.run(pip, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    assert list(site.glob("synctool_kinddesk-*.dist-info/entry_points.txt"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCTOOL_", "PYTEST_"))}
    env["PYTHONPATH"] = str(site)
    return source, env


def pytest_run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip


def test_an_installed_platform_package_passes_its_own_tests_with_synctool_testing(installed):
    source, env = installed
    ran = pytest_run([str(source / "tests")], source, env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "2 passed" in ran.stdout


def test_synctools_suite_stays_green_with_it_installed(installed):
    _, env = installed
    ran = pytest_run(["-m", "registry", *LISTING], ROOT, env)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
