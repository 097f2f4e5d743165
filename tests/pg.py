"""A real PostgreSQL for the tests, started by the tests themselves.

The first test that asks (the ``pg_url`` fixture, tests/conftest.py) starts a throwaway cluster of the test process's
own (each xdist worker its own) on 127.0.0.1 alone, on a free port, its unix socket in its folder, and stops it when
the process ends. The cluster is a copy of one ``initdb`` made once for this PostgreSQL (the machine's 14+, found on
PATH, else the newest /usr/lib/postgresql/*/bin) and this schema, kept in the temporary folder (``cluster``): a copy
costs a tenth of a second, ``initdb`` seconds. Every test that asks gets a database of its own, a copy of one
already holding synctool's PostgreSQL schema (``CREATE DATABASE ... TEMPLATE``: about 25 ms, where writing the schema
costs a few hundred).

Authentication is ``trust``, on loopback and the socket alone: the cluster holds test data only, lives as long as the
run, and its folder is its owner's alone (0700); a password would have to reach every process a test starts (they
read libpq's environment) without any test touching ``os.environ``.

Where no server can be started (a user's fresh clone with no PostgreSQL, or no psycopg) the tests that need one skip
and the run says so once (``ABSENT``, tests/conftest.py ``pytest_terminal_summary``); where ``CI`` is set they fail.
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import glob
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ABSENT = "PostgreSQL tests skipped: no PostgreSQL server to start here (initdb and pg_ctl, 14 or newer) or no psycopg"

MEMORY_FS = Path("/dev/shm")

#: the user the cluster runs as when the tests run as root (PostgreSQL refuses to run as root)
SERVER_USER = "postgres"


def binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: PATH's, else the newest /usr/lib/postgresql/*/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    versions = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0
    )
    return Path(versions[-1]).parent if versions else None


def _root_without_server_user() -> bool:
    if os.geteuid() != 0:
        return False
    import pwd

    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        return True
    return shutil.which("runuser") is None


@functools.cache
def available() -> bool:
    """Whether a server can be started here (cheap: nothing is started)."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return False
    return binaries() is not None and not _root_without_server_user()


def required(environ: Mapping[str, str] = os.environ) -> None:
    """Skip the calling test where no server can be started; fail it where ``CI`` is set (CI never skips it)."""
    if available():
        return
    if environ.get("CI"):
        pytest.fail(f"CI needs PostgreSQL: {ABSENT}")
    pytest.skip(ABSENT)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    """A running throwaway cluster: ``url(name)`` for a database of it."""

    folder: Path
    port: int
    bin: Path
    template: str = "synctool_template"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://synctool@127.0.0.1:{self.port}/{database}"

    def admin(self):
        import psycopg

        return psycopg.connect(self.url(), autocommit=True)

    def new_database(self) -> str:
        """A database of its own, a copy of the migrated template; its URL."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}" STRATEGY FILE_COPY')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """The test's database gone, with whatever connection to it is left (the process's pools for it closed
        first): a run makes hundreds, each a few megabytes of the memory file system."""
        from synctool.store import postgres

        postgres.close_pools(url)
        name = url.rsplit("/", 1)[1]
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session ended, the server back on the same port (its options kept in
        postmaster.opts) once it accepts connections again, as an operator's restart or a failover would."""
        _run(self.bin / "pg_ctl", "restart", "-D", self.folder / "data", "-m", "fast", "-w", "-t", "30", "-l",
             self.folder / "server.log")  # fmt: skip

    def stop(self) -> None:
        _run(self.bin / "pg_ctl", "stop", "-D", str(self.folder / "data"), "-m", "fast", check=False)
        for _ in range(20):  # a server process still leaving may write a last file while the folder goes
            shutil.rmtree(self.folder, ignore_errors=True)
            if not self.folder.exists():
                return
            time.sleep(0.05)


def _run(*args: object, check: bool = True) -> subprocess.CompletedProcess[str]:
    command = [str(a) for a in args]
    if os.geteuid() == 0:  # PostgreSQL never runs as root
        command = ["runuser", "-u", SERVER_USER, "--", *command]
    return subprocess.run(command, capture_output=True, text=True, check=check, cwd="/")


#: why this process's server would not start (tried once: the tests after the first skip at once)
_FAILED: list[str] = []


def _start(bin: Path, folder: Path) -> int:
    """Start the cluster in ``folder``/data on a free loopback port, its socket in ``folder``; the port."""
    last: subprocess.CalledProcessError | None = None
    for _ in range(3):  # a free port can be taken between the probe and the server's bind
        port = free_port()
        options = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off -c synchronous_commit=off"
            " -c full_page_writes=off -c max_connections=200"
        )
        try:
            _run(bin / "pg_ctl", "start", "-D", folder / "data", "-w", "-t", "30", "-l", folder / "server.log", "-o", options)
        except subprocess.CalledProcessError as exc:
            last = exc
            continue
        return port
    raise last or RuntimeError("pg_ctl start failed")


def temporary_root() -> Path:
    """Where the clusters go: a memory file system when the machine has one and TMPDIR names no other place (the
    fast suite's choice, tests/conftest.py, which xdist's workers do not inherit), else the temporary folder."""
    if not os.environ.get("TMPDIR") and os.access(MEMORY_FS, os.W_OK) and shutil.disk_usage(MEMORY_FS).free >= 2 * 1024**3:
        return MEMORY_FS
    return Path(tempfile.gettempdir())


def _private_folder(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=temporary_root()))
    if os.geteuid() == 0:
        shutil.chown(folder, SERVER_USER, SERVER_USER)
    return folder


def copy_cluster(bin: Path, target: Path) -> None:
    """``target``: a copy of a stopped cluster holding the migrated template, made once for this PostgreSQL and this
    schema and kept in the temporary folder (``initdb`` costs seconds; a copy of its result a tenth of one). The
    processes take turns, under one lock, at making it and at copying it, so one made for another schema (another
    checkout's run) is removed only while nobody copies it."""
    from synctool.store import schema_postgres

    made = f"{bin}:{(bin / 'initdb').stat().st_mtime_ns}:{schema_postgres.ddl()}:{'|'.join(map(str, schema_postgres.MIGRATIONS.items()))}"
    key = hashlib.sha256(made.encode()).hexdigest()[:12]
    root = temporary_root()
    kept = root / f"synctool-pg-cluster-{os.geteuid()}-{key}"
    with open(root / f"synctool-pg-cluster-{os.geteuid()}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if kept.exists():
            _run("cp", "-a", kept / "data", target)
            return
        for stale in root.glob(f"synctool-pg-cluster-{os.geteuid()}-*"):
            shutil.rmtree(stale, ignore_errors=True)
        folder = _private_folder("synctool-pg-init-")
        try:
            _run(bin / "initdb", "-D", folder / "data", "-U", "synctool", "-A", "trust", "-E", "UTF8", "--locale=C",
                 "--no-sync", "--no-instructions", "--wal-segsize=1")  # fmt: skip
            running = Server(folder, _start(bin, folder), bin)
            _make_template(running)
            _run(bin / "pg_ctl", "stop", "-D", folder / "data", "-m", "fast")
            os.rename(folder, kept)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        _run("cp", "-a", kept / "data", target)


@functools.cache
def server() -> Server:
    """The test process's cluster, started on first use (a copy of ``cluster``'s, well under a second once that is
    made) and stopped when the process ends."""
    running = own_server()
    atexit.register(running.stop)
    return running


def own_server() -> Server:
    """A cluster of the caller's own, started (a copy of ``cluster``'s): for a drill that restarts or stops its server,
    which must never be the one the process's other tests share (``server``). The caller stops it."""
    required()
    if _FAILED:
        pytest.skip(_FAILED[0])
    bin = binaries()
    assert bin is not None
    folder = _private_folder("synctool-pg-")
    try:
        copy_cluster(bin, folder / "data")
        (folder / "data" / "postmaster.pid").unlink(missing_ok=True)
        port = _start(bin, folder)
    except (subprocess.CalledProcessError, OSError) as exc:
        log = (folder / "server.log").read_text(errors="replace")[-2000:] if (folder / "server.log").exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        detail = exc.stderr if isinstance(exc, subprocess.CalledProcessError) else exc
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL would not start: {detail}\n{log}")
        _FAILED.append(f"{ABSENT} (it would not start: {str(detail).strip()[:200]})")
        pytest.skip(_FAILED[0])
    return Server(folder, port, bin)


def _make_template(running: Server) -> None:
    import psycopg

    from synctool.store import schema_postgres

    with running.admin() as conn:
        conn.execute(f'CREATE DATABASE "{running.template}"')
    with psycopg.connect(running.url(running.template), autocommit=True) as conn:
        schema_postgres.apply(conn)
