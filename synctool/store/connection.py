"""Connecting to the one SQLite file, and the modes of the files synctool makes.

Every connection is in WAL mode with ``synchronous=FULL`` (a commit is on disk before anyone is told it
happened) and a busy timeout, so cron's drain and poll, the receiver and operator commands can share the
file. The database, its ``-wal`` and ``-shm``, backups, the config and logs are synctool's user's alone; a
database an older version made readable by others (0644) is made so by the first command that opens it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

from synctool.config import is_database_url
from synctool.errors import DatabaseTooNew, StoreUnavailable
from synctool.store import dialect, postgres
from synctool.store.engine import Connection
from synctool.store.migrations import apply_migrations
from synctool.store.transactions import SqliteConnection

BUSY_TIMEOUT_MS = 30_000

log = logging.getLogger("synctool.store")


#: what synctool gives the files it creates (the database, backups, the config, logs) and the folders it makes
#: for them: its own user's alone, whatever the umask (invariant 10)
PRIVATE_FILE, PRIVATE_FOLDER = 0o600, 0o700


def private_folder(folder: Path) -> None:
    """Make ``folder`` and any missing parent, each ``PRIVATE_FOLDER``; a folder already there keeps its mode."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        try:
            made.mkdir(PRIVATE_FOLDER)
        except FileExistsError:  # another process made it first: it is theirs, as they made it
            continue
        os.chmod(made, PRIVATE_FOLDER)  # mkdir's mode passes through the umask


def private_file(path: Path) -> bool:
    """Create ``path`` empty and ``PRIVATE_FILE`` (and its missing folders ``PRIVATE_FOLDER``) unless it is there
    already, whose mode is then left as it is; True when it was created. One system call for a file that exists."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        try:
            fd = os.open(path, flags, PRIVATE_FILE)
        except FileNotFoundError:  # its folder is missing
            private_folder(path.parent)
            fd = os.open(path, flags, PRIVATE_FILE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, PRIVATE_FILE)  # os.open's mode passes through the umask too
    finally:
        os.close(fd)
    return True


def private_to_write(path: Path) -> None:
    """Before a file is written whole (a backup, the config ``init`` writes): created ``PRIVATE_FILE``, or made so
    when it is there already (it is about to hold what synctool writes)."""
    if not private_file(path):
        os.chmod(path, PRIVATE_FILE)


def file_modes(path: Path) -> dict[Path, int]:
    """The database's files as they are now (itself, and its ``-wal`` and ``-shm``, which come and go with the
    connections), with their permission bits."""
    found = {}
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            found[file] = stat.S_IMODE(os.stat(file).st_mode)
        except OSError:
            continue
    return found


def made_private(path: Path) -> list[str]:
    """An existing database and its ``-wal`` and ``-shm`` made ``PRIVATE_FILE`` when its group or others had any
    access (a database made before 0.3 was 0644: every donor's name, address and phone readable by every local
    user), said once in the log (the next command finds them private). What was changed, as ``name 0644``; a file
    that is not synctool's user's to change is left to ``doctor``, which says what to do."""
    changed = []
    for file, mode in file_modes(path).items():
        if mode & 0o077:
            try:
                os.chmod(file, PRIVATE_FILE)
            except OSError:  # gone since, or another user's file: doctor's "database file modes" says what to do
                continue
            changed.append(f"{file.name} {mode:04o}")
    if changed:
        log.warning(
            "%s made 0600, synctool's user's alone (it was %s: made by an older synctool, or copied)", path, ", ".join(changed)
        )
    return changed


def connect(
    path: str | Path,
    *,
    migrate: bool = True,
    busy_timeout_ms: float = BUSY_TIMEOUT_MS,
    password: str | None = None,
    schema: str | None = None,
) -> Connection:
    """Open the database with synctool's settings, creating and migrating it when asked. A write waits up
    to ``busy_timeout_ms`` for another process's write lock before it fails.

    A new database file is created ``PRIVATE_FILE`` before SQLite opens it (its folders ``PRIVATE_FOLDER``):
    SQLite gives the ``-wal`` and ``-shm`` files it makes beside it the main file's mode, so all three stay
    synctool's user's alone. An existing file its group or others may open is made so (``made_private``), and
    ``doctor`` says when one cannot be. A ``postgresql://`` URL opens PostgreSQL instead (``store/postgres.py``;
    ``password`` from the keyring, else libpq's own PGPASSWORD or ~/.pgpass; ``schema``: an organisation's schema, its
    ``search_path`` set as the connection is made)."""
    if is_database_url(path):
        opened = postgres.connect(str(path), migrate=migrate, password=password, schema=schema)
        dialect.use(dialect.POSTGRESQL)  # the spellings without a connection (store.dialect)
        return opened
    dialect.use(dialect.SQLITE)
    path = Path(path)
    try:
        if str(path) not in (":memory:", "") and not private_file(path):
            made_private(path)
        conn = sqlite3.connect(
            str(path), timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False, factory=SqliteConnection
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if conn.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file: free pages can be given back (prune)
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        if migrate:
            apply_migrations(conn)
    except (sqlite3.Error, OSError) as exc:
        raise StoreUnavailable(f"cannot open database {path}: {exc}") from None
    except DatabaseTooNew:
        conn.close()
        raise
    return conn


def describe(conn: Connection) -> dict[str, str]:
    """What ``doctor`` says of the engine: its name and version, where the data is, its pool, the schema's version."""
    if isinstance(conn, postgres.PostgresConnection):
        return postgres.describe(conn)
    return {
        "engine": "SQLite",
        "version": sqlite3.sqlite_version,
        "where": conn.execute("PRAGMA database_list").fetchone()[2] or ":memory:",
        "pool": "",
        "schema": str(conn.execute("PRAGMA user_version").fetchone()[0]),
    }


def snapshot(conn: Connection) -> Connection:
    """A copy of the database behind ``conn`` to write into and throw away: preview mode runs its jobs against one.
    SQLite: an in-memory copy (its online backup), set up as ``connect`` sets up a connection. PostgreSQL: another
    connection of the pool inside a transaction of its own (``postgres.snapshot``: repeatable read, rolled back when
    it is closed), so what the jobs write there is never committed."""
    if isinstance(conn, postgres.PostgresConnection):
        return postgres.snapshot(conn)
    copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False, factory=SqliteConnection)
    cast(sqlite3.Connection, conn).backup(copy)
    copy.row_factory = sqlite3.Row
    copy.execute("PRAGMA foreign_keys = ON")
    return copy


def release_snapshot(conn: Connection) -> None:
    """A job run on a ``snapshot`` is over. PostgreSQL: what it wrote there is rolled back and a new snapshot taken,
    so the row locks its writes took never hold up the database's own record of the job. SQLite: nothing (the
    in-memory copy locks nothing of the database's)."""
    if isinstance(conn, postgres.Snapshot):
        conn.release()


def open_read_only(path: str | Path, *, timeout_s: float = 5) -> Connection:
    """The database at ``path`` opened for reading alone, neither created nor migrated nor made private (another
    organisation's, or one being looked at): ``store.Error`` when it cannot be opened or read."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout_s)
    conn.row_factory = sqlite3.Row
    return conn


@contextmanager
def backup_to(source: str | Path, target: str | Path, *, read_only: bool = False, timeout_s: float = 30) -> Iterator[Connection]:
    """Copy the database at ``source`` to the file ``target`` (SQLite's online backup: page by page, started again
    when a writer changes a page already copied, so the copy is one moment's, never torn) while others write to
    it; ``source`` opened for reading alone when ``read_only``. The block is given a connection to the copy, closed
    after it. ``target``'s mode is the caller's to set before (``private_to_write``, ``private_file``)."""
    origin = (
        sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=timeout_s)
        if read_only
        else sqlite3.connect(str(source), timeout=timeout_s)
    )
    try:
        copy = sqlite3.connect(str(target))
        try:
            origin.backup(copy)
            yield copy
        finally:
            copy.close()
    finally:
        origin.close()
