"""Every test gets a fresh config and database under tmp_path, no keyring, and an environment of its own
(a dict: nothing is read from or written to the machine's)."""

from __future__ import annotations

import functools
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# bytecode is written whatever PYTHONDONTWRITEBYTECODE says (this machine sets it): without it every xdist worker
# rewrites every test module's asserts and compiles synctool again, 6 s of each worker's start; the files go to
# __pycache__ (ignored by git) and the processes a test starts read them
sys.dont_write_bytecode = False

import typer.main  # noqa: E402
import typer.testing  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from synctool import platforms  # noqa: E402
from tests import helpers  # noqa: E402

#: tests/data/kinddesk is an outside platform package with tests of its own (tests/test_outside_platform.py runs them)
collect_ignore = ["data"]

platforms.registered()  # as every command does first: the platforms' config sections are known before a config is read

# typer's CliRunner builds the whole command tree again on every invoke (about 40 ms a call on a 2-core machine,
# a fifth of the suite's time); the tree is the same for every call in a process, so it is built once
typer.testing._get_command = functools.cache(typer.main.get_command)  # type: ignore[attr-defined]

# the values the secret-leak tests grep for
TEST_SECRETS = {
    "DONATIONS_WEBHOOK_SECRET": "gb-secret-7f3a9c",
    "POS_WEBHOOK_SIGNATURE_KEY": "sq-key-51d0e2",
    "MAILING_WEBHOOK_SECRET": "mc-secret-a8b4",
    "PAYMENTS_WEBHOOK_SECRET": "whsec_test_9e8d7c",
    "PORTAL_WEBHOOK_SECRET": "portal-secret-3c2b",
}
POS_URL = "https://sync.example.org/webhooks/pos"


#: the fast suite's temporary folders go on a memory file system when the machine has a roomy one
MEMORY_FS, MEMORY_FS_FREE = Path("/dev/shm"), 2 * 1024**3


#: ``SYNCTOOL_TEST_ENGINE=postgresql``: the fast suite against PostgreSQL (each test a database of its own on the run's
#: throwaway server, tests/pg.py); anything else (or unset) SQLite's file, as ever
ENGINE = os.environ.get("SYNCTOOL_TEST_ENGINE", "sqlite").strip().lower() or "sqlite"
ON_POSTGRES = ENGINE in ("postgresql", "postgres", "pg")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only(reason): the test is about SQLite itself (its file, modes, WAL, PRAGMAs, a file backup, an old"
        " file's upgrade): the PostgreSQL leg (SYNCTOOL_TEST_ENGINE=postgresql) leaves it out",
    )
    # Every commit is on disk before it returns (synchronous=FULL), and the fast suite makes tens of thousands
    # of them: on a memory file system its run took 60 s where the disk took 80 (a 2-core machine). Nothing in
    # it needs a disk (no test there pulls the power); the drill tier stays on one, whose faults (a full disk,
    # an immutable file) need a real file system. A place the caller chose (TMPDIR, --basetemp) is kept.
    if config.getoption("markexpr") != "not drill" or os.environ.get("TMPDIR") or config.option.basetemp:
        return
    if os.access(MEMORY_FS, os.W_OK) and shutil.disk_usage(MEMORY_FS).free >= MEMORY_FS_FREE:
        tempfile.tempdir = str(MEMORY_FS)  # where pytest's tmp_path_factory makes its folders (xdist's workers' too)


#: the tests that still fail on PostgreSQL, each with why (the list only shrinks: tests/test_postgres_suite.py)
KNOWN_FAILURES = Path(__file__).parent / "postgres_known_failures.txt"


def known_failures(path: Path = KNOWN_FAILURES) -> dict[str, str]:
    """``postgres_known_failures.txt`` read: test id -> why it fails on PostgreSQL (``ID  # why``, a line each)."""
    found = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            test, _, why = line.partition("#")
            found[test.strip()] = why.strip()
    return found


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker more than the cores. The fast suite waits as much as it computes (servers on loopback,
    subprocesses, a database's fsync), so a third worker on two cores fills those waits: 53 s -> 45 s measured side
    by side on a 2-core machine (issue 59's batch, 940 tests)."""
    return (os.cpu_count() or 1) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On PostgreSQL, the tests about SQLite itself (``sqlite_only``: the SQLite leg runs them) and those known to
    fail there yet (``postgres_known_failures.txt``; ``SYNCTOOL_TEST_KNOWN_FAILURES=run`` runs them too) are left
    out, said in the summary. On SQLite, the fast suite's tests that need a PostgreSQL server (``pg_url``) are left
    to the PostgreSQL leg, which runs them once (CI ran them five times, in every SQLite leg: a sixth of the fast
    suite's time); the drill tier keeps its own."""
    if not ON_POSTGRES:
        server_tests = [
            item for item in items if "pg_url" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("drill")
        ]
        if server_tests:
            config.hook.pytest_deselected(items=server_tests)
            items[:] = [item for item in items if item not in server_tests]
        return
    known = {} if os.environ.get("SYNCTOOL_TEST_KNOWN_FAILURES") == "run" else known_failures()
    left_out = [item for item in items if item.get_closest_marker("sqlite_only") is not None or item.nodeid in known]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from tests import contracts, pg

    if not contracts.available():
        terminalreporter.write_line(contracts.ABSENT)
    if not ON_POSTGRES:  # (said whatever was collected: under xdist the workers collect, not this process)
        terminalreporter.write_line(
            "the tests that need a PostgreSQL server run in the PostgreSQL leg"
            " (SYNCTOOL_TEST_ENGINE=postgresql python -m pytest; .ci/run runs it)" + ("" if pg.available() else f"; {pg.ABSENT}")
        )
    if ON_POSTGRES:
        terminalreporter.write_line(
            f"engine: PostgreSQL (SYNCTOOL_TEST_ENGINE={ENGINE}); left out: the tests marked sqlite_only, and the"
            f" {len(known_failures())} tests/postgres_known_failures.txt lists (SYNCTOOL_TEST_KNOWN_FAILURES=run runs them)"
        )


@functools.cache
def migrated_database(folder: Path) -> bytes:
    """A new database with every migration applied, made once per test process: migrating costs about 50 ms,
    a copy well under 1."""
    from synctool import store

    store.connect(folder / "template.db").close()  # the last connection to close folds the WAL into the file
    return (folder / "template.db").read_bytes()


@pytest.fixture(autouse=True)
def env(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The environment the test's synctool runs with: a dict, never ``os.environ`` (which no test changes).
    ``runtime()`` (tests.helpers), the ``cli`` fixture and the subprocess helpers all read it. Its database is
    there already, migrated, unless the test is marked ``no_database``: SQLite's file in ``tmp_path``, or with
    ``SYNCTOOL_TEST_ENGINE=postgresql`` a PostgreSQL database of the test's own (``pg_url``) (a ``no_database`` test keeps its file's path: it is about making one)."""
    (tmp_path / "config.yaml").write_text("{}\n")
    database = str(tmp_path / "synctool.db")
    on_postgres = ON_POSTGRES and request.node.get_closest_marker("no_database") is None
    if on_postgres:
        database = request.getfixturevalue("pg_url")
    elif request.node.get_closest_marker("no_database") is None:
        (tmp_path / "synctool.db").write_bytes(migrated_database(tmp_path_factory.getbasetemp()))
        (tmp_path / "synctool.db").chmod(0o600)  # as synctool makes it (doctor fails a database others can read)
    values = {
        "SYNCTOOL_KEYRING": "off",
        "SYNCTOOL_CONFIG": str(tmp_path / "config.yaml"),
        "SYNCTOOL_DB": database,
        # the host's data folder (organisations) is the test's own, never the machine's ~/.local/share/synctool
        "SYNCTOOL_HOME": str(tmp_path / "home"),
        # the suite's sample donors share one name and one address under many e-mails, which `review` (the
        # default) rightly holds as one person; the tests of that matching (test_donor_matching) set it
        "DONORS_MATCHING": "email",
    }
    helpers.CURRENT.update(env=values, transports={})
    yield values
    helpers.CURRENT.clear()


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL database of the test's own, holding synctool's schema, on the run's throwaway server (tests/pg.py:
    started when a test first asks), dropped after it; the test skips where no server can be started, and fails where
    CI is set."""
    from tests import pg

    server = pg.server()
    url = server.new_database()
    yield url
    server.drop_database(url)


@pytest.fixture
def isolated(tmp_path: Path) -> Path:
    """The test's folder, holding its config.yaml and database."""
    return tmp_path


@pytest.fixture
def transports() -> dict:
    """Role -> the in-process transport to that role's fake (filled by ``fake_crm`` and ``world``)."""
    return helpers.CURRENT["transports"]


@pytest.fixture
def secrets_env(env: dict[str, str]) -> dict[str, str]:
    env.update(TEST_SECRETS)
    env["POS_WEBHOOK_NOTIFICATION_URL"] = POS_URL
    return TEST_SECRETS


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def cli(runner: CliRunner):
    """Run a synctool command; returns the click Result."""
    from synctool.cli.main import app
    from synctool.console import AppContext

    def run(*args: str, input: str | None = None):
        obj = AppContext(environ=helpers.CURRENT["env"], transports=helpers.CURRENT["transports"])
        # Rich sizes tables by $COLUMNS: click sets it for the command's duration only
        columns = {"COLUMNS": obj.environ["COLUMNS"]} if "COLUMNS" in obj.environ else None
        return runner.invoke(app, list(args), input=input, catch_exceptions=False, obj=obj, env=columns)

    return run


@pytest.fixture
def db(env: dict[str, str]):
    from synctool import store

    conn = store.connect(env["SYNCTOOL_DB"])
    yield conn
    conn.close()


CRM_KEY = "crm-test-key-0c1d"


def quick_crm(env: dict[str, str], limit: int) -> None:
    """CRM pacing scaled right down (``limit`` requests a second, no gap) and quick retries, the platforms' too."""
    env.update(
        PLATFORM_API_RETRY_BASE_MS="10",
        CRM_RATE_LIMIT_REQUESTS=str(limit),
        CRM_SHARE_REQUESTS=str(limit),
        CRM_RATE_LIMIT_WINDOW_S="1",
        CRM_MIN_INTERVAL_MS="0",
        CRM_RETRY_BASE_MS="10",
        # below the fake's 1.5 s "timeout" faults, and far enough above a loaded machine's slowest answer
        # (0.5 s made a busy run's request time out now and then, and cost it a request or a confirm)
        CRM_TIMEOUT_S="1",
    )


@pytest.fixture
def fake_crm(env, transports):
    """The LGL fake in process (behind an AppTransport), synctool pointed at it, pacing scaled right down."""
    from synctool.fakes.crm import FakeCrm, create_app
    from synctool.fakes.transport import AppTransport

    crm = FakeCrm(CRM_KEY, limit=1000, window_s=1.0, timeout_sleep_s=1.5)
    crm.url = "http://crm.fake.invalid"
    transports["crm"] = AppTransport(create_app(crm))
    env.update(CRM_API_BASE_URL=crm.url + "/api/v1", CRM_API_KEY=CRM_KEY)
    quick_crm(env, 1000)
    return crm


@pytest.fixture
def served_crm(env):
    """The LGL fake on a loopback port, for the tests whose other processes call it."""
    from synctool.fakes.crm import FakeCrm, create_app
    from synctool.fakes.server import BackgroundServer

    crm = FakeCrm(CRM_KEY, limit=1000, window_s=1.0, timeout_sleep_s=1.5)
    with BackgroundServer(create_app(crm)) as server:
        crm.url = server.url
        env.update(CRM_API_BASE_URL=server.url + "/api/v1", CRM_API_KEY=CRM_KEY)
        quick_crm(env, 1000)
        yield crm


@pytest.fixture
def crm_client(fake_crm, db):
    from synctool.crm import environment as crm

    client = crm.open_client(db, helpers.runtime())
    yield client
    client.close()


@pytest.fixture
def world(env, transports, secrets_env, request):
    """Every fake in process, synctool pointed at them, pacing scaled right down, quick retries."""
    from synctool.fakes.world import FakeWorld

    w = FakeWorld(crm_limit=10_000, crm_window_s=1.0)
    env.update(w.env())
    transports.update(w.transports())
    quick_crm(env, 10_000)
    env["QUEUE_RETRY_DELAY_MS"] = "50"
    yield w
    # whatever a test did, synctool asked the CRM only what LGL documents, and each platform's fake was
    # asked and answered only what the platform's own API description describes (tests/contracts.py)
    helpers.validate_against_openapi(w.crm.requests)
    from tests import contracts

    # a test that makes a fake break it on purpose is exempt; on a clone without the descriptions the check is
    # skipped, and the run's summary says so once (pytest_terminal_summary)
    if request.node.get_closest_marker("off_contract") is None and contracts.available():
        found = [p for role, hook in platforms.fakes().items() if hook.contract
                 for p in contracts.problems(hook.contract, w.recorders[role].exchanges)]  # fmt: skip
        assert not found, "\n".join(found)


@pytest.fixture
def receiver(world):
    """The webhook receiver, in-process, pointed at the same database and fakes as the world."""
    from starlette.testclient import TestClient

    from synctool.web.receiver import create_app

    with TestClient(create_app(helpers.runtime())) as client:
        yield client


@pytest.fixture
def coded(world, cli):
    """Reference data cached and a few mappings set, as an operator would."""
    assert cli("crm", "refresh").exit_code == 0
    assert cli("mappings", "types", "set", "donations:default", "--fund-id", "2398", "--campaign-id", "822").exit_code == 0
    assert cli("mappings", "types", "set", "donations:event", "--fund-id", "2399", "--campaign-id", "823").exit_code == 0
    assert cli("mappings", "payments", "set", "donations:card", "--payment-type-id", "1509").exit_code == 0
    assert cli("mappings", "payments", "set", "pos:CARD", "--payment-type-id", "1509").exit_code == 0
    assert cli("mappings", "payments", "set", "pos:CASH", "--payment-type-id", "1507").exit_code == 0
    assert cli("mappings", "custom-fields", "set", "77", "--crm-field", "referral_source").exit_code == 0
    return world
