"""The drill tier: the real `synctool serve` and `synctool drain` processes, started as an operator starts
them, against the project's fakes on loopback ports, with faults made the way they happen on a server
(``kill -9``, a database made read-only or full, a lock held by another process, a CRM that fails).

Every test here is marked ``drill``: the fast suite leaves them out (``-m "not drill"`` in pyproject), and
`.ci/run` runs them after it with ``python -m pytest -m drill``, and again with ``SYNCTOOL_TEST_ENGINE=postgresql``: each
site's processes then share a PostgreSQL database of the drill's own (``SYNCTOOL_DB``, its URL, on the run's throwaway
server, tests/pg.py) as the fast suite's tests do (tests/conftest.py ``env``); the drills about SQLite itself (its file,
its modes, its write lock) are marked ``sqlite_only`` and left out there, and those about PostgreSQL
(``postgresql_only``) run there alone.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from synctool.fakes import samples
from synctool.fakes.world import WEBHOOK_SECRETS, FakeWorld
from tests import helpers
from tests.conftest import ON_POSTGRES

ROOT = Path(__file__).resolve().parents[2]
POS_URL = "https://sync.example.org/webhooks/pos"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "postgresql_only(reason): a drill about PostgreSQL itself: the PostgreSQL drill leg alone runs it"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.drill)
        if not ON_POSTGRES and item.get_closest_marker("postgresql_only") is not None:
            item.add_marker(pytest.mark.skip(reason="about PostgreSQL: the PostgreSQL drill leg runs it"))


class Site:
    """One synctool install in a folder of its own: its config, database and environment, and the real
    processes an operator would start on it."""

    def __init__(self, folder: Path, world: FakeWorld, database_url: str | None = None):
        self.folder = folder
        self.world = world
        self.db_path = folder / "synctool.db"
        #: on PostgreSQL (SYNCTOOL_TEST_ENGINE=postgresql) the site's database, shared by its processes
        self.database_url = database_url
        (folder / "config.yaml").write_text("{}\n")
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCTOOL_", "CRM_", "POS_", "DONATIONS_"))}
        self.env: dict[str, str] = {
            **keep,
            "SYNCTOOL_KEYRING": "off",
            "SYNCTOOL_CONFIG": str(folder / "config.yaml"),
            "SYNCTOOL_DB": database_url or str(self.db_path),
            "SYNCTOOL_HOME": str(folder / "home"),
            "POS_WEBHOOK_NOTIFICATION_URL": POS_URL,
            **WEBHOOK_SECRETS,
            **world.env(),
            "CRM_RATE_LIMIT_REQUESTS": "100000",
            "CRM_SHARE_REQUESTS": "100000",
            "CRM_RATE_LIMIT_WINDOW_S": "1",
            "CRM_MIN_INTERVAL_MS": "0",
            "CRM_RETRY_BASE_MS": "10",
            "PLATFORM_API_RETRY_BASE_MS": "10",
            "CRM_TIMEOUT_S": "1",  # the CRM fake's "timeout" faults answer after 1.5 s
            "CRM_CONFIRM_AFTER_S": "1",
            "QUEUE_RETRY_DELAY_MS": "100",
            "QUEUE_LEASE_SECONDS": "2",
        }
        self.procs: list[subprocess.Popen] = []
        self.port = 0

    # -- processes ---------------------------------------------------------------------------------

    def popen(self, *args: str, env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.Popen:
        log = open(self.folder / f"{args[-1] if args[0].startswith('-') else args[0]}-{len(self.procs)}.log", "ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "synctool.cli.main", *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            **kwargs,
        )
        log.close()
        self.procs.append(proc)
        return proc

    def run(self, *args: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "synctool.cli.main", *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def serve(
        self, *options: str, args: tuple[str, ...] = (), env: dict[str, str] | None = None, **kwargs: Any
    ) -> subprocess.Popen:
        """`synctool [options] serve [args]` on a free loopback port, once it answers /health."""
        self.port = self.port or helpers.free_port()
        proc = self.popen(*options, "serve", "--host", "127.0.0.1", "--port", str(self.port), *args, env=env, **kwargs)
        helpers.wait_for(f"{self.url}/health")
        return proc

    def drain(self, max_seconds: float, env: dict[str, str] | None = None) -> subprocess.Popen:
        return self.popen("drain", "--max-seconds", str(max_seconds), env=env)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    # -- deliveries -------------------------------------------------------------------------------

    def post(self, client: httpx.Client | None, route: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
        query = f"?secret={WEBHOOK_SECRETS['MAILING_WEBHOOK_SECRET']}" if route == "mailing" else ""
        if client is None:
            return httpx.post(f"{self.url}/webhooks/{route}{query}", content=body, headers=headers, timeout=30)
        return client.post(f"{self.url}/webhooks/{route}{query}", content=body, headers=headers)

    def give(self, n: int, *, client: httpx.Client | None = None, email: str | None = None) -> httpx.Response:
        """Givebutter's signed ``transaction.succeeded`` for donor ``n`` (transaction ``T<n>``)."""
        body, headers = givebutter_delivery(n, email=email)
        return self.post(client, "donations", body, headers)

    # -- the database, read as an auditor would ----------------------------------------------------

    def rows(self, sql: str, *params: Any) -> list[tuple]:
        if self.database_url:
            from synctool import store

            with store.connect(self.database_url, migrate=False) as pg:
                return [tuple(row) for row in pg.execute(sql, params).fetchall()]
        conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=30)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def statuses(self) -> dict[str, int]:
        return dict(self.rows("SELECT status, count(*) FROM jobs GROUP BY status"))

    def wait_until_done(self, timeout: float) -> dict[str, int]:
        """Wait for every job to be finished (succeeded, skipped or failed); the statuses then."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.statuses()
            if found and not set(found) - {"succeeded", "skipped", "failed"}:
                return found
            time.sleep(0.1)
        return self.statuses()


def kill_under_load(site: Site, proc: subprocess.Popen, *, after: int, senders: int = 8) -> list[str]:
    """``senders`` threads post signed deliveries to the receiver; once ``after`` are acknowledged, ``kill -9``.
    Returns the job ids of every delivery that got a 200."""
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def sender(worker: int) -> None:
        with httpx.Client(timeout=5) as client:
            i = 0
            while not stop.is_set():
                try:
                    r = site.give(worker * 100_000 + i, client=client)
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    with lock:
                        acknowledged.append(r.json()["job_id"])
                i += 1

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(senders)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 20
    while len(acknowledged) < after and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stop.set()
    for t in threads:
        t.join()
    return acknowledged


def givebutter_delivery(n: int, *, email: str | None = None) -> tuple[bytes, dict[str, str]]:
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn["id"] = f"T{n}"
    txn["number"] = str(10_000 + n)
    txn["email"] = email or f"donor{n}@example.org"
    txn["first_name"], txn["last_name"] = "Donor", f"Number{n}"
    body = samples.givebutter("transaction.succeeded", txn)
    return body, {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"], "Content-Type": "application/json"}


@pytest.fixture
def world() -> Iterator[FakeWorld]:
    """Every fake on a loopback port, the CRM's rate limit out of the way (pacing is not what is drilled)."""
    with FakeWorld(crm_limit=100_000, crm_window_s=1.0, serve=True) as w:
        yield w


@pytest.fixture
def site(tmp_path: Path, world: FakeWorld) -> Iterator[Site]:
    """A site on SQLite's file, or on PostgreSQL a database of its own (made from the migrated template, dropped after)."""
    if not ON_POSTGRES:
        s = Site(tmp_path, world)
        yield s
        s.stop()
        return
    from tests import pg

    server = pg.server()
    s = Site(tmp_path, world, server.new_database())
    assert s.database_url is not None
    try:
        yield s
    finally:
        s.stop()
        server.drop_database(s.database_url)


@pytest.fixture
def coded_site(site: Site) -> Site:
    return coded(site)


def coded(site: Site) -> Site:
    """A site with the CRM's reference lists cached and the donation mappings set, as an operator would (the
    commands run in this process, through the CLI, to keep each drill to a few seconds)."""
    from typer.testing import CliRunner

    from synctool.cli.main import app
    from synctool.console import AppContext

    for args in (
        ("crm", "refresh"),
        ("mappings", "types", "set", "donations:default", "--fund-id", "2398", "--campaign-id", "822"),
        ("mappings", "payments", "set", "donations:card", "--payment-type-id", "1509"),
    ):
        result = CliRunner().invoke(app, list(args), obj=AppContext(environ=site.env, transports={}), catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return site


def crm_state(world: FakeWorld) -> dict[str, Any]:
    return httpx.get(world.url("crm") + "/_fake/state", timeout=10).json()


def crm_fault(world: FakeWorld, mode: str, *, count: int = 1, method: str | None = None, path: str | None = None) -> None:
    body = {"mode": mode, "count": count, "method": method, "path": path}
    httpx.post(world.url("crm") + "/_fake/faults", content=json.dumps(body), timeout=10).raise_for_status()


@contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """Make files and folders read-only as a restore with the wrong owner or a read-only remount would: by
    their mode, and, for root (whom modes do not stop), by the immutable attribute."""
    modes = {p: p.stat().st_mode for p in paths if p.exists()}
    for p in modes:
        p.chmod(0o555 if p.is_dir() else 0o444)
    immutable = os.geteuid() == 0
    if immutable:
        for p in modes:
            subprocess.run(["chattr", "+i", str(p)], check=True)
    try:
        yield
    finally:
        for p, mode in modes.items():
            if immutable:
                subprocess.run(["chattr", "-i", str(p)], check=True)
            p.chmod(mode)
