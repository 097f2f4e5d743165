"""The one SQLite file: connection settings, the schema, and its migrations.

Every connection is in WAL mode with ``synchronous=FULL`` (a commit is on disk before anyone is told it
happened) and a busy timeout, so cron's drain and poll, the receiver and operator commands can share the
file.

Migrations are small functions in order, applied by sqlite-utils' ``Migrations`` and recorded in its
``_sqlite_migrations`` table, so a fresh database and an old one reach the same schema. They run under
``BEGIN IMMEDIATE``, so two processes starting at once take turns. ``PRAGMA user_version`` holds a digest
of the migrations applied (``fingerprint``): a command on an up-to-date database checks that one number and
does not import sqlite-utils at all. A database made before sqlite-utils (its ``_migrations`` table) is
carried over in place by ``_bridge``. A database a newer synctool migrated (a migration this one does not
know) is refused before anything is written (``DatabaseTooNew``): an older synctool never runs on it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synctool import __version__
from synctool.errors import DatabaseTooNew, StoreUnavailable

if TYPE_CHECKING:
    from sqlite_utils import Database

BUSY_TIMEOUT_MS = 30_000
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
MIGRATION_SET = "synctool"

#: the migration functions, in order; ``migrations()`` hands them to sqlite-utils
MIGRATIONS: list[Callable[[Database], None]] = []


def migration(fn: Callable[[Database], None]) -> Callable[[Database], None]:
    MIGRATIONS.append(fn)
    return fn


#: the registered platforms' own migration sets (``Platform.migrations``), added by the registry as it loads:
#: set name (``synctool.portal``) -> a function returning its migrations, in order (imported when applied)
PLATFORM_MIGRATIONS: dict[str, Callable[[], Sequence[Callable[[Database], None]]]] = {}


def add_migrations(platform: str, migrations: Callable[[], Sequence[Callable[[Database], None]]]) -> None:
    PLATFORM_MIGRATIONS[f"{MIGRATION_SET}.{platform}"] = migrations


def migration_sets() -> dict[str, Sequence[Callable[[Database], None]]]:
    """Every migration set this process knows: the core's, then each registered platform's."""
    return {MIGRATION_SET: MIGRATIONS, **{name: load() for name, load in PLATFORM_MIGRATIONS.items()}}


#: migrations a set once had and gave away: a database that applied one is not newer for it (the core's
#: ``m002_portal`` made the portal's tables before the portal had a set of its own, ``platforms/portal/tables.py``)
RETIRED: dict[str, frozenset[str]] = {MIGRATION_SET: frozenset({"m002_portal"})}


def migration_names(sets: Sequence[str] | None = None) -> dict[str, list[str]]:
    """Each migration set's migration names, in order: every set this process knows, or those of ``sets``."""
    return {
        name: [fn.__name__ for fn in functions] for name, functions in migration_sets().items() if sets is None or name in sets
    }


def fingerprint() -> int:
    """What ``PRAGMA user_version`` holds in a database up to date for this process's platforms: a digest of every
    set's migration names (a count would take a database one migration newer, in another set, for up to date)."""
    names = "\n".join(f"{name}:{m}" for name, found in migration_names().items() for m in found)
    return zlib.crc32(names.encode()) & 0x7FFFFFFF or 1


def database(conn: sqlite3.Connection) -> Database:
    """sqlite-utils' view of a connection, for table upserts, listings and schema changes. Write through
    it inside ``atomic(conn)``: sqlite-utils then uses savepoints within synctool's transaction."""
    from sqlite_utils import Database

    return Database(conn, recursive_triggers=False, execute_plugins=False)


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime | None = None) -> str:
    """UTC ISO-8601 with microseconds and a ``Z``; sorts as text in time order."""
    moment = moment or utcnow()
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


class Where:
    """A WHERE clause built one condition at a time, with its parameters (for the list queries)."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, *params: Any) -> Where:
        self.clauses.append(clause)
        self.params.extend(params)
        return self

    def __str__(self) -> str:
        return ("WHERE " + " AND ".join(self.clauses)) if self.clauses else ""


def new_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class LockHolder:
    """Who the locks taken through a connection belong to: the running job's lease owner, so the drain's
    heartbeat renews them with the lease and they lapse with it when the drain dies."""

    owner: str
    ttl_s: float


class Connection(sqlite3.Connection):
    """synctool's connection: ``lock_holder`` is set while a job runs on it (``held_by``)."""

    lock_holder: LockHolder | None = None


@contextmanager
def held_by(conn: sqlite3.Connection, holder: LockHolder) -> Iterator[None]:
    """For the block, the locks taken through ``conn`` (a job's own connection) belong to ``holder``."""
    if not isinstance(conn, Connection):
        raise TypeError("held_by needs a connection from store.connect")
    conn.lock_holder = holder
    try:
        yield
    finally:
        conn.lock_holder = None


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


def connect(path: str | Path, *, migrate: bool = True, busy_timeout_ms: float = BUSY_TIMEOUT_MS) -> sqlite3.Connection:
    """Open the database with synctool's settings, creating and migrating it when asked. A write waits up
    to ``busy_timeout_ms`` for another process's write lock before it fails.

    A new database file is created ``PRIVATE_FILE`` before SQLite opens it (its folders ``PRIVATE_FOLDER``):
    SQLite gives the ``-wal`` and ``-shm`` files it makes beside it the main file's mode, so all three stay
    synctool's user's alone. An existing file's mode is left as it is (``doctor`` says when it is too open)."""
    path = Path(path)
    try:
        if str(path) not in (":memory:", ""):
            private_file(path)
        conn = sqlite3.connect(
            str(path), timeout=busy_timeout_ms / 1000, isolation_level=None, check_same_thread=False, factory=Connection
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


def snapshot(conn: sqlite3.Connection) -> sqlite3.Connection:
    """An in-memory copy of the database behind ``conn`` (SQLite's online backup), set up as ``connect``
    sets up a connection: preview mode runs its jobs against one and throws it away."""
    copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False, factory=Connection)
    conn.backup(copy)
    copy.row_factory = sqlite3.Row
    copy.execute("PRAGMA foreign_keys = ON")
    return copy


# Threads of one process take turns at writing here, so they never meet in SQLite's busy handler, whose
# sleeps (1, 2, 5, 10 ... 100 ms) would idle drain's workers; other processes still wait on busy_timeout.
_WRITE_LOCK = threading.RLock()


@contextmanager
def atomic(conn: sqlite3.Connection, *, immediate: bool = True) -> Iterator[sqlite3.Connection]:
    """A transaction that nests: outside one, ``BEGIN IMMEDIATE`` ... ``COMMIT`` (the write lock taken up
    front, so two processes never deadlock upgrading a read); inside one, a savepoint, so a data function
    can be called on its own or as part of a caller's larger change. Rolls back on any exception."""
    with _WRITE_LOCK:
        if conn.in_transaction:
            name = f"sp_{uuid.uuid4().hex[:12]}"
            conn.execute(f"SAVEPOINT {name}")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:  # SQLite may already have rolled the whole transaction back (disk full, I/O)
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                raise
            conn.execute(f"RELEASE {name}")
            return
        conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            # a failed COMMIT (disk full, read-only, busy) can leave the transaction open: never let the next
            # caller's work become a savepoint inside a transaction that will not commit
            _rollback(conn)
            raise


def put_row(conn: sqlite3.Connection, table: str, key: dict[str, Any], values: dict[str, Any]) -> None:
    """The row of ``table`` whose columns equal ``key`` gets ``values``, its other columns left as they were; a row of
    ``key`` and ``values`` is made when there is none. ``table`` and the column names come from code, never input."""
    where = " AND ".join(f"{name} = ?" for name in key)
    with atomic(conn):
        if conn.execute(f"SELECT 1 FROM {table} WHERE {where}", tuple(key.values())).fetchone() is None:
            row = key | values
            conn.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        elif values:
            conn.execute(
                f"UPDATE {table} SET {', '.join(f'{name} = ?' for name in values)} WHERE {where}",
                (*values.values(), *key.values()),
            )


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the error being raised says what went wrong; this one would only hide it


def migrations(name: str = MIGRATION_SET, functions: Sequence[Callable[[Database], None]] = ()) -> Any:
    """One migration set as sqlite-utils' ``Migrations`` (the core's by default)."""
    from sqlite_utils.migrations import Migrations

    found = Migrations(name)
    for fn in functions or (MIGRATIONS if name == MIGRATION_SET else ()):
        found()(fn)
    return found


def apply_migrations(conn: sqlite3.Connection) -> list[str]:
    """Apply the migrations this database has not seen, the core's then each platform's; return their names.
    Raises DatabaseTooNew, having written nothing, when a newer synctool migrated it."""
    version = fingerprint()
    if conn.execute("PRAGMA user_version").fetchone()[0] == version:
        return []
    pending: list[str] = []
    with atomic(conn):  # one process at a time; the others then find nothing pending
        _refuse_newer(conn)
        _bridge(conn)
        db = database(conn)
        for name, functions in migration_sets().items():
            steps = migrations(name, functions)
            pending += [m.name for m in steps.pending(db)]
            steps.apply(db)
        conn.executemany(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [("migrated_by", __version__), ("migrated_at", iso())],
        )
        conn.execute(f"PRAGMA user_version = {version}")
    return pending


def _refuse_newer(conn: sqlite3.Connection) -> None:
    """DatabaseTooNew when the database holds a migration of a set this synctool knows that it does not know: a
    newer synctool made it, and this one would run on a schema it cannot read (and lower its ``user_version``)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_sqlite_migrations'").fetchone():
        return
    known = {name: set(found) | RETIRED.get(name, frozenset()) for name, found in migration_names().items()}
    unknown = [
        name
        for migration_set, name in conn.execute("SELECT migration_set, name FROM _sqlite_migrations ORDER BY id")
        if migration_set in known and name not in known[migration_set]
    ]
    if not unknown:
        return
    made_by = migrated_by(conn)
    path = conn.execute("PRAGMA database_list").fetchone()[2] or "the database"
    raise DatabaseTooNew(
        f"{path} was migrated by a newer synctool ({made_by or 'unknown version'}: {unknown[0]}) than this one ({__version__});"
        " nothing was changed: upgrade synctool (pip install -U synctool), or restore a backup made before the upgrade"
    )


def _bridge(conn: sqlite3.Connection) -> None:
    """Carry a database made before sqlite-utils over: its ``_migrations`` rows become applied migrations."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone():
        return
    from sqlite_utils.migrations import Migrations

    db = database(conn)
    Migrations(MIGRATION_SET).ensure_migrations_table(db)
    db.table(Migrations.migrations_table).insert_all(
        (
            {"migration_set": MIGRATION_SET, "name": name, "applied_at": applied_at}
            for name, applied_at in conn.execute("SELECT name, applied_at FROM _migrations ORDER BY rowid")
        ),
        ignore=True,
    )
    conn.execute("DROP TABLE _migrations")


def applied_migrations(conn: sqlite3.Connection, sets: Sequence[str] | None = None) -> list[str]:
    """The migrations this database has applied that this synctool knows: of every set, or of ``sets`` (the sets in
    use). A retired migration (``RETIRED``) is not counted."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_sqlite_migrations'").fetchone():
        return []
    known = migration_names(sets)
    return [
        name
        for migration_set, name in conn.execute("SELECT migration_set, name FROM _sqlite_migrations ORDER BY id")
        if name in known.get(migration_set, ())
    ]


def migrated_by(conn: sqlite3.Connection) -> str | None:
    """The synctool version that last migrated this database (None before 0.3.0)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'store_meta'").fetchone():
        return None
    found = conn.execute("SELECT value FROM store_meta WHERE key = 'migrated_by'").fetchone()
    return found[0] if found else None


def size(conn: sqlite3.Connection) -> dict[str, int]:
    """The database file's size, the part of it that is free pages (reused by later writes, or given back by
    ``prune``), and its ``auto_vacuum`` mode (2: incremental, what ``connect`` gives a new database)."""
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    return {
        "bytes": conn.execute("PRAGMA page_count").fetchone()[0] * page,
        "free_bytes": conn.execute("PRAGMA freelist_count").fetchone()[0] * page,
        "auto_vacuum": conn.execute("PRAGMA auto_vacuum").fetchone()[0],
    }


def record_size(conn: sqlite3.Connection, day: str) -> dict[str, int]:
    """Keep today's size (``prune`` does, nightly), for ``growth_per_month``; returns it."""
    found = size(conn)
    with atomic(conn):
        conn.execute(
            "INSERT INTO store_sizes (day, bytes, free_bytes) VALUES (?, ?, ?)"
            " ON CONFLICT (day) DO UPDATE SET bytes = excluded.bytes, free_bytes = excluded.free_bytes",
            (day, found["bytes"], found["free_bytes"]),
        )
        conn.execute("DELETE FROM store_sizes WHERE day < date(?, '-400 days')", (day,))
    return found


def growth_per_month(conn: sqlite3.Connection, *, days: int = 90) -> float | None:
    """Bytes the database's data grew per 30 days over the last ``days`` of recorded sizes (free pages left
    out, so a vacuum does not count as shrinking); None until two sizes a week apart are recorded."""
    rows = conn.execute(
        "SELECT day, bytes - free_bytes FROM store_sizes WHERE day >= date((SELECT max(day) FROM store_sizes), ?) ORDER BY day",
        (f"-{days} days",),
    ).fetchall()
    if len(rows) < 2:
        return None
    (first, used_then), (last, used_now) = rows[0], rows[-1]
    span = (datetime.fromisoformat(last) - datetime.fromisoformat(first)).days
    return (used_now - used_then) * 30 / span if span >= 7 else None


def run_script(conn: sqlite3.Connection, sql: str) -> None:
    """Run statements one by one inside the caller's transaction (executescript would commit)."""
    pending = ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            conn.execute(pending)
            pending = ""
    if pending.strip():
        conn.execute(pending)


@migration
def m001_core(db: Database) -> None:
    run_script(
        db.conn,
        """
    CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        event_id TEXT NOT NULL,
        event_type TEXT,
        received_at TEXT NOT NULL,
        headers TEXT NOT NULL DEFAULT '{}',
        body BLOB NOT NULL,
        verified INTEGER NOT NULL DEFAULT 1,
        note TEXT,
        UNIQUE (source, event_id)
    );

    CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        target TEXT NOT NULL DEFAULT 'crm',
        entity_type TEXT NOT NULL,
        entity_id TEXT NOT NULL,
        external_id TEXT,
        delivery_id INTEGER REFERENCES deliveries (id),
        payload TEXT,
        force INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'queued'
            CHECK (status IN ('queued', 'running', 'succeeded', 'skipped', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL DEFAULT 3,
        run_after TEXT NOT NULL,
        lease_owner TEXT,
        lease_expires TEXT,
        last_error TEXT,
        message TEXT,
        email TEXT,
        name TEXT,
        amount TEXT,
        crm_constituent_id TEXT,
        crm_gift_id TEXT,
        crm_ids TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        finished_at TEXT,
        resolved_at TEXT,
        resolved_by TEXT,
        notes TEXT
    );
    CREATE INDEX jobs_due ON jobs (target, status, run_after);
    CREATE INDEX jobs_status_source_created ON jobs (status, source, created_at);
    CREATE INDEX jobs_created ON jobs (created_at);
    CREATE INDEX jobs_external ON jobs (external_id);

    CREATE VIRTUAL TABLE jobs_search USING fts5 (
        external_id, email, name, last_error, content='jobs', content_rowid='rowid', tokenize='trigram'
    );
    -- The search index is filled in arrears (jobs.index_search, run by drain and before a search),
    -- so the receiver's insert stays cheap; rows already indexed are kept current by this trigger.
    CREATE TABLE search_state (id INTEGER PRIMARY KEY CHECK (id = 1), indexed_rowid INTEGER NOT NULL);
    INSERT INTO search_state (id, indexed_rowid) VALUES (1, 0);
    CREATE TRIGGER jobs_search_update AFTER UPDATE OF external_id, email, name, last_error ON jobs
    WHEN old.rowid <= (SELECT indexed_rowid FROM search_state WHERE id = 1) BEGIN
        INSERT INTO jobs_search (jobs_search, rowid, external_id, email, name, last_error)
        VALUES ('delete', old.rowid, old.external_id, old.email, old.name, old.last_error);
        INSERT INTO jobs_search (rowid, external_id, email, name, last_error)
        VALUES (new.rowid, new.external_id, new.email, new.name, new.last_error);
    END;

    CREATE TABLE job_attempts (
        id INTEGER PRIMARY KEY,
        job_id TEXT NOT NULL REFERENCES jobs (id),
        number INTEGER NOT NULL,
        worker TEXT,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        outcome TEXT,
        error TEXT,
        crm_requests INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX job_attempts_job ON job_attempts (job_id);

    CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );

    CREATE TABLE mappings (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (kind, key)
    );

    CREATE TABLE caches (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        refreshed_at TEXT NOT NULL,
        PRIMARY KEY (kind, key)
    );

    CREATE TABLE crm_requests (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        owner TEXT
    );
    CREATE INDEX crm_requests_at ON crm_requests (at);

    CREATE TABLE crm_writes (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
        crm_id TEXT,
        job_id TEXT,
        updated_at TEXT NOT NULL
    );

    CREATE TABLE users (
        id INTEGER PRIMARY KEY,
        email TEXT NOT NULL UNIQUE,
        role TEXT NOT NULL CHECK (role IN ('viewer', 'admin', 'super_admin')),
        active INTEGER NOT NULL DEFAULT 1,
        invited_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        token_version INTEGER NOT NULL DEFAULT 0
    );

    CREATE TABLE poll_state (
        source TEXT PRIMARY KEY,
        watermark TEXT,
        last_run_at TEXT,
        last_result TEXT
    )
    """,
    )


@migration
def m003_locks(db: Database) -> None:
    """Named locks shared by every process (one person's jobs must not run side by side)."""
    db.table("locks").create({"name": str, "owner": str, "expires": float}, pk="name", not_null={"owner", "expires"})


@migration
def m004_crm_mirror(db: Database) -> None:
    """The local mirror of the CRM's constituents that matching reads (see crm/mirror.py)."""
    run_script(
        db.conn,
        """
    CREATE TABLE crm_constituents (
        id INTEGER PRIMARY KEY,
        is_org INTEGER NOT NULL DEFAULT 0,
        first_name TEXT, middle_name TEXT, last_name TEXT, nick_name TEXT, maiden_name TEXT, org_name TEXT,
        external_constituent_id TEXT,
        created_at TEXT,
        updated_at TEXT,
        mirrored_at TEXT NOT NULL
    );
    CREATE INDEX crm_constituents_external ON crm_constituents (external_constituent_id);
    CREATE INDEX crm_constituents_last_name ON crm_constituents (last_name COLLATE NOCASE);
    -- one row: the CRM's updated_at watermark and what the last refresh did
    CREATE TABLE crm_mirror_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        watermark TEXT,
        refreshed_at TEXT,
        full_loaded_at TEXT,
        last_kind TEXT,
        last_requests INTEGER NOT NULL DEFAULT 0,
        last_rows INTEGER NOT NULL DEFAULT 0,
        last_seconds REAL NOT NULL DEFAULT 0
    );
    INSERT INTO crm_mirror_state (id) VALUES (1)
    """,
    )
    # each constituent's contact rows, gone with it; looked up by the normalised e-mail or the phone's digits
    for table, columns, lookup in (
        ("crm_constituent_emails", "address TEXT NOT NULL, normalized TEXT NOT NULL", "normalized"),
        ("crm_constituent_phones", "number TEXT NOT NULL, digits TEXT NOT NULL", "digits"),
        ("crm_constituent_addresses", "street TEXT, city TEXT, state TEXT, postal_code TEXT, country TEXT", None),
    ):
        db.conn.execute(
            f"CREATE TABLE {table} (constituent_id INTEGER NOT NULL REFERENCES crm_constituents (id)"
            f" ON DELETE CASCADE, {columns})"
        )
        for column in ("constituent_id", lookup):
            if column:
                db.conn.execute(f"CREATE INDEX {table}_{column} ON {table} ({column})")


@migration
def m005_unconfirmed_writes(db: Database) -> None:
    """A gift POST whose answer was lost is ``unconfirmed`` in the ledger until a later search settles it."""
    # statement by statement: executescript would commit the migration's transaction half-way
    for statement in (
        "CREATE TABLE crm_writes_new (key TEXT PRIMARY KEY, kind TEXT NOT NULL,"
        " state TEXT NOT NULL CHECK (state IN ('pending', 'unconfirmed', 'done')), crm_id TEXT, job_id TEXT,"
        " updated_at TEXT NOT NULL)",
        "INSERT INTO crm_writes_new SELECT key, kind, state, crm_id, job_id, updated_at FROM crm_writes",
        "DROP TABLE crm_writes",
        "ALTER TABLE crm_writes_new RENAME TO crm_writes",
    ):
        db.conn.execute(statement)


@migration
def m006_refunds(db: Database) -> None:
    """The gift ledger remembers the amounts synctool wrote (so a refund never writes over a person's edit)
    and that a refunded gift was ``deleted``; the ``refunds`` ledger holds each refund, keyed by its own id."""
    for statement in (
        "CREATE TABLE crm_writes_new (key TEXT PRIMARY KEY, kind TEXT NOT NULL,"
        " state TEXT NOT NULL CHECK (state IN ('pending', 'unconfirmed', 'done', 'deleted')), crm_id TEXT, job_id TEXT,"
        " updated_at TEXT NOT NULL, amount TEXT, deductible TEXT)",
        "INSERT INTO crm_writes_new (key, kind, state, crm_id, job_id, updated_at)"
        " SELECT key, kind, state, crm_id, job_id, updated_at FROM crm_writes",
        "DROP TABLE crm_writes",
        "ALTER TABLE crm_writes_new RENAME TO crm_writes",
    ):
        db.conn.execute(statement)
    db.table("refunds").create(
        {
            "key": str,
            "source": str,
            "refund_id": str,
            "gift_external_id": str,
            "crm_gift_id": str,
            "amount": str,
            "amount_before": str,
            "amount_after": str,
            "policy": str,
            "state": str,
            "reason": str,
            "job_id": str,
            "refunded_on": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="key",
        not_null={"source", "refund_id", "gift_external_id", "amount", "state", "created_at", "updated_at"},
    )
    db.table("refunds").create_index(["gift_external_id"])
    db.table("refunds").create_index(["created_at"])


@migration
def m007_preview(db: Database) -> None:
    """Preview mode: a job can end ``previewed`` with its ``plan`` (what it would write)."""
    _widen_job_statuses(db.conn, "'skipped', 'failed'", "previewed", "007")
    db.conn.execute("ALTER TABLE jobs ADD COLUMN plan TEXT")


def _widen_job_statuses(conn: sqlite3.Connection, last: str, status: str, migration: str) -> None:
    """Add ``status`` to the jobs table's status CHECK, after the statuses ending in ``last``. Widening a CHECK
    constraint is the one schema change SQLite allows in place (its ALTER TABLE docs, "simpler procedure"): the
    table keeps its rows, its indexes and the attempts that reference it."""
    if hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE"):  # Python 3.12+: a build that starts defensive refuses this
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE, False)  # type: ignore[attr-defined]  # 3.12+ only
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = 'jobs'",
        (f"{last})", f"{last}, '{status}')"),
    )
    if f"'{status}'" not in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'jobs'").fetchone()[0]:
        raise sqlite3.OperationalError(f"migration {migration}: the jobs table's status CHECK was not found")
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.execute("PRAGMA writable_schema = OFF")


@migration
def m008_write_errors(db: Database) -> None:
    """An unconfirmed gift write keeps the CRM's answer (or the lost connection) that made it uncertain, so a
    write the confirming search finds absent fails its attempt with the CRM's own error."""
    db.table("crm_writes").add_column("error", str)


@migration
def m009_reconcile_accepted(db: Database) -> None:
    """Differences a person reviewed (``synctool reconcile accept``): the item, what was accepted (status and
    both amounts: a new difference on the same item is reported again), the note, who and when."""
    db.table("reconcile_accepted").create(
        {"external_id": str, "status": str, "platform_amount": str, "crm_amount": str, "reason": str, "note": str,
         "accepted_by": str, "accepted_at": str},
        pk="external_id",
        not_null={"external_id", "status", "note", "accepted_by", "accepted_at"},
    )  # fmt: skip


@migration
def m010_donor_changes(db: Database) -> None:
    """News about known donors (``synctool donors changes``): a contact point (e-mail, phone, address) a
    matched donor's platform data carried and the CRM lacked, the gift that brought it, and what became of
    it: pending, applied (with the CRM's row id) or dismissed. One row per constituent, kind and value."""
    db.table("donor_changes").create(
        {"id": int, "constituent_id": str, "kind": str, "value": str, "match_key": str, "status": str, "source": str,
         "external_id": str, "job_id": str, "created_at": str, "decided_at": str, "crm_row_id": str},
        pk="id",
        not_null={"constituent_id", "kind", "value", "match_key", "status", "created_at"},
    )  # fmt: skip
    db.conn.execute("CREATE UNIQUE INDEX donor_changes_once ON donor_changes (constituent_id, kind, match_key)")
    db.conn.execute("CREATE INDEX donor_changes_status ON donor_changes (status)")


@migration
def m011_staff_page(db: Database) -> None:
    """The staff page (``serve --admin-ui``): one-time sign-in links and the sessions they open, each kept as
    the SHA-256 of its secret (the database never holds a usable link or cookie); and the staff actions,
    who did what through the page or the admin API."""
    db.table("login_links").create(
        {"token_hash": str, "user_id": int, "created_at": str, "expires_at": str, "used_at": str},
        pk="token_hash",
        not_null={"user_id", "created_at", "expires_at"},
    )
    db.table("staff_sessions").create(
        {"id_hash": str, "user_id": int, "csrf": str, "created_at": str, "expires_at": str, "ended_at": str, "flash": str},
        pk="id_hash",
        not_null={"user_id", "csrf", "created_at", "expires_at"},
    )
    db.table("staff_actions").create(
        {"id": int, "at": str, "who": str, "role": str, "via": str, "action": str, "target": str, "note": str,
         "outcome": str},
        pk="id",
        not_null={"at", "who", "via", "action"},
    )  # fmt: skip
    db.conn.execute("CREATE INDEX staff_actions_target ON staff_actions (target)")


@migration
def m012_donor_matches(db: Database) -> None:
    """Known donors under a new e-mail (``donors.matching``): a gift's job can wait as ``review`` while a person
    decides who its donor is (``donor_matches``: the donor, the candidates with their evidence, the decision).
    The mirror's addresses and phones are indexed by the keys the matching compares (postal code, phone's last
    ten digits). The status CHECK is widened in place, as migration 007 did."""
    conn = db.conn
    _widen_job_statuses(conn, "'failed', 'previewed'", "review", "012")
    db.table("donor_matches").create(
        {"id": int, "job_id": str, "source": str, "external_id": str, "email": str, "donor": str, "candidates": str,
         "why": str, "status": str, "constituent_id": str, "decided_by": str, "decided_at": str, "created_at": str},
        pk="id",
        not_null={"job_id", "status", "created_at"},
    )  # fmt: skip
    conn.execute("CREATE INDEX donor_matches_status ON donor_matches (status)")
    conn.execute("CREATE INDEX donor_matches_job ON donor_matches (job_id)")
    conn.execute(
        "CREATE INDEX crm_constituent_addresses_postal ON crm_constituent_addresses"
        " (upper(substr(replace(replace(postal_code, ' ', ''), '-', ''), 1, 5)))"
    )
    conn.execute("CREATE INDEX crm_constituent_phones_suffix ON crm_constituent_phones (substr(digits, -10))")


@migration
def m013_safe_on_the_internet(db: Database) -> None:
    """Mail waits in an ``outbox`` that drain sends (never inside a request); "send me a link" requests are
    counted per address and per client (``sign_in_requests``, as digests) for their rate limits; a delivery whose
    raw body was dropped by ``retention.raw_bodies_days`` says when (``body_pruned_at``); a link or session
    ended by a deactivation stays ended (``revoked_at``)."""
    conn = db.conn
    db.table("outbox").create(
        {"id": int, "kind": str, "user_id": int, "recipients": str, "subject": str, "body": str, "html": str,
         "created_at": str, "send_after": str, "attempts": int, "sent_at": str, "last_error": str},
        pk="id",
        not_null={"kind", "created_at", "send_after"},
        defaults={"attempts": 0},
    )  # fmt: skip
    conn.execute("CREATE INDEX outbox_due ON outbox (sent_at, send_after)")
    db.table("sign_in_requests").create(
        {"id": int, "at": str, "email_hash": str, "client_hash": str},
        pk="id",
        not_null={"at", "email_hash", "client_hash"},
    )
    conn.execute("CREATE INDEX sign_in_requests_email ON sign_in_requests (email_hash, at)")
    conn.execute("CREATE INDEX sign_in_requests_client ON sign_in_requests (client_hash, at)")
    conn.execute("ALTER TABLE deliveries ADD COLUMN body_pruned_at TEXT")
    conn.execute("ALTER TABLE login_links ADD COLUMN revoked_at TEXT")
    conn.execute("ALTER TABLE staff_sessions ADD COLUMN revoked_at TEXT")
    now = iso()
    for table in ("login_links", "staff_sessions"):  # users deactivated before this version stay out when reactivated
        conn.execute(f"UPDATE {table} SET revoked_at = ? WHERE user_id IN (SELECT id FROM users WHERE active = 0)", (now,))


@migration
def m014_currency_holds(db: Database) -> None:
    """One currency (``organisation.currency``): a gift, refund or payout line in another currency holds its job as
    ``review`` (``currency_holds``: the money line's key, its amount and currency, the decision: released at the
    amount the bank credited, or resolved)."""
    conn = db.conn
    db.table("currency_holds").create(
        {"id": int, "job_id": str, "source": str, "kind": str, "key": str, "external_id": str, "amount": str,
         "currency": str, "organisation_currency": str, "status": str, "released_amount": str, "decided_by": str,
         "decided_at": str, "created_at": str},
        pk="id",
        not_null={"job_id", "kind", "key", "amount", "currency", "status", "created_at"},
    )  # fmt: skip
    conn.execute("CREATE INDEX currency_holds_status ON currency_holds (status)")
    conn.execute("CREATE INDEX currency_holds_job ON currency_holds (job_id)")
    conn.execute("CREATE INDEX currency_holds_key ON currency_holds (key)")
    conn.execute("CREATE INDEX currency_holds_external_id ON currency_holds (external_id)")


#: a job's counter in ``job_counts``: the hour it was created in, its source, its status, and whether it came from
#: a platform's poll (the daily summary's "recovered by the backup poll"), as SQL on a row (``new``, ``old``)
JOB_POLLED = "CASE WHEN json_valid({0}.payload) THEN coalesce(json_extract({0}.payload, '$.origin') = 'poll', 0) ELSE 0 END"
_COUNTER = ("substr({0}.created_at, 1, 13)", "{0}.source", "{0}.status", JOB_POLLED)


def _counter(row: str) -> str:
    return ", ".join(part.format(row) for part in _COUNTER)


@migration
def m015_years_of_records(db: Database) -> None:
    """Years of records: what the staff page and the CLI read costs what they show, not the whole log.

    - The search index follows every job as it is written, changed and deleted (triggers, in the writer's own
      transaction); it was filled in arrears by the first search, which held the write lock for seconds.
    - ``job_counts``: jobs per hour created, source, status and origin, kept by triggers as jobs change, so a
      window's counts (the overview, ``stats``, the daily summary) read its hours, not its rows.
    - Open failures have an index of their own (the overview, doctor and the summary count them).
    - ``store_meta`` records which synctool migrated the database (an older one refuses it); ``store_sizes`` the
      database's size each day ``prune`` runs (``doctor``'s growth per month)."""
    conn = db.conn
    mark = conn.execute("SELECT indexed_rowid FROM search_state WHERE id = 1").fetchone()[0]
    conn.execute(
        "INSERT INTO jobs_search (rowid, external_id, email, name, last_error)"
        " SELECT rowid, external_id, email, name, last_error FROM jobs WHERE rowid > ?",
        (mark,),
    )
    conn.execute("DROP TRIGGER jobs_search_update")
    conn.execute("DROP TABLE search_state")
    columns = "external_id, email, name, last_error"
    add = f"INSERT INTO jobs_search (rowid, {columns}) VALUES (new.rowid, new.external_id, new.email, new.name, new.last_error);"
    remove = (
        f"INSERT INTO jobs_search (jobs_search, rowid, {columns})"
        " VALUES ('delete', old.rowid, old.external_id, old.email, old.name, old.last_error);"
    )
    conn.execute(f"CREATE TRIGGER jobs_search_insert AFTER INSERT ON jobs BEGIN {add} END")
    conn.execute(f"CREATE TRIGGER jobs_search_update AFTER UPDATE OF {columns} ON jobs BEGIN {remove} {add} END")
    conn.execute(f"CREATE TRIGGER jobs_search_delete AFTER DELETE ON jobs BEGIN {remove} END")

    conn.execute(
        "CREATE TABLE job_counts (hour TEXT NOT NULL, source TEXT NOT NULL, status TEXT NOT NULL, polled INTEGER NOT NULL,"
        " n INTEGER NOT NULL, PRIMARY KEY (hour, source, status, polled)) WITHOUT ROWID"
    )
    conn.execute(
        f"INSERT INTO job_counts (hour, source, status, polled, n) SELECT {_counter('jobs')}, count(*) FROM jobs"
        " GROUP BY 1, 2, 3, 4"
    )
    count = "INSERT INTO job_counts (hour, source, status, polled, n) VALUES ({}, {}) ON CONFLICT (hour, source, status, polled) DO UPDATE SET n = n + excluded.n;"
    plus, minus = count.format(_counter("new"), 1), count.format(_counter("old"), -1)
    moved = " OR ".join(f"{part.format('old')} IS NOT {part.format('new')}" for part in _COUNTER)
    conn.execute(f"CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN {plus} END")
    conn.execute(
        f"CREATE TRIGGER job_counts_update AFTER UPDATE OF status, source, created_at, payload ON jobs WHEN {moved}"
        f" BEGIN {minus} {plus} END"
    )
    conn.execute(f"CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN {minus} END")

    conn.execute("CREATE INDEX jobs_open_failures ON jobs (status, finished_at) WHERE status = 'failed' AND resolved_at IS NULL")
    conn.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TABLE store_sizes (day TEXT PRIMARY KEY, bytes INTEGER NOT NULL, free_bytes INTEGER NOT NULL)")


@migration
def m016_event_invitations(db: Database) -> None:
    """Who came: a platform's event orders and their tickets (holder, type, check-in, refund), and the CRM
    invitations synctool wrote for them (``crm.invitations``): the buyer's one per event, and one per guest."""
    db.table("event_orders").create(
        {"source": str, "order_id": str, "campaign_id": str, "campaign": str, "buyer_first_name": str,
         "buyer_last_name": str, "buyer_email": str, "constituent_id": str, "constituent_new": int, "amount": str,
         "tickets_expected": int,
         "refunded": int, "ordered_at": str, "updated_at": str},
        pk=("source", "order_id"),
        not_null={"source", "order_id", "campaign_id", "updated_at"},
        defaults={"refunded": 0},
    )  # fmt: skip
    db.table("event_orders").create_index(["campaign_id"])
    db.table("event_tickets").create(
        {"source": str, "ticket_id": str, "order_id": str, "first_name": str, "last_name": str, "email": str,
         "title": str, "price": str, "checked_in_at": str, "refunded": int, "updated_at": str},
        pk=("source", "ticket_id"),
        not_null={"source", "ticket_id", "order_id", "updated_at"},
        defaults={"refunded": 0},
    )  # fmt: skip
    db.table("event_tickets").create_index(["source", "order_id"])
    db.table("invitations").create(
        {"id": int, "event_id": int, "constituent_id": str, "guest_key": str, "parent_id": int, "first_name": str,
         "last_name": str, "crm_id": str, "state": str, "rsvp": int, "notes": str, "attendee_names": str,
         "staff_notes": str, "staff_names": str, "attended_on": str, "attendance_sent": str, "job_id": str, "error": str,
         "updated_at": str},
        pk="id",
        not_null={"event_id", "constituent_id", "guest_key", "state", "updated_at"},
        defaults={"guest_key": ""},
    )  # fmt: skip
    db.conn.execute("CREATE UNIQUE INDEX invitations_once ON invitations (event_id, constituent_id, guest_key)")


#: a gift job's campaign as SQL on a row (``new``, ``old``, ``j``): in the payload a poll or a re-queue kept
JOB_CAMPAIGN = "CASE WHEN json_valid({0}.payload) THEN json_extract({0}.payload, '$.transaction.campaign_id') END"
#: ... or else in the body of the delivery the platform sent (``{0}``: the delivery's row)
DELIVERY_CAMPAIGN = (
    "CASE WHEN json_valid(CAST({0}.body AS TEXT)) THEN json_extract(CAST({0}.body AS TEXT), '$.data.campaign_id') END"
)


@migration
def m017_overview_at_a_million(db: Database) -> None:
    """The overview at a million records: the campaigns with gifts in a window (its unmapped campaigns) cost the
    window's hours, not every job's payload and delivery.

    - ``job_campaigns``: each gift job (``crm`` ``transaction``) with the campaign its payload or else its delivery
      names, kept by triggers as jobs are written, changed and deleted and as a delivery's body is pruned
      (``delivery_id`` is set when the campaign came from the delivery; a body is written before its jobs).
    - ``campaign_hours``: per source, campaign and hour, the gifts whose latest job of that campaign was created in
      that hour, kept by triggers on ``job_campaigns``; a window counts its whole hours from here and its first,
      partial hour from ``job_campaigns`` (as ``job_counts`` does for jobs)."""
    conn = db.conn
    conn.execute(
        "CREATE TABLE job_campaigns (job TEXT PRIMARY KEY, source TEXT NOT NULL, campaign_id NOT NULL,"
        " entity_id TEXT NOT NULL, created_at TEXT NOT NULL, delivery_id INTEGER) WITHOUT ROWID"
    )  # campaign_id untyped: kept as the JSON gave it (118722 and "118722" stay two, as they were)
    conn.execute("CREATE INDEX job_campaigns_gift ON job_campaigns (source, campaign_id, entity_id, created_at)")
    conn.execute("CREATE INDEX job_campaigns_window ON job_campaigns (source, created_at, campaign_id, entity_id)")
    conn.execute("CREATE INDEX job_campaigns_delivery ON job_campaigns (delivery_id) WHERE delivery_id IS NOT NULL")
    conn.execute(
        "CREATE TABLE campaign_hours (source TEXT NOT NULL, hour TEXT NOT NULL, campaign_id NOT NULL, gifts INTEGER NOT NULL,"
        " PRIMARY KEY (source, hour, campaign_id)) WITHOUT ROWID"
    )

    gift = "{0}.target = 'crm' AND {0}.entity_type = 'transaction'"
    columns = "job, source, campaign_id, entity_id, created_at, delivery_id"
    conn.execute(
        f"INSERT INTO job_campaigns ({columns}) SELECT id, source, coalesce(p, d), entity_id, created_at,"
        " CASE WHEN p IS NULL THEN delivery_id END FROM (SELECT j.id, j.source, j.entity_id, j.created_at, j.delivery_id,"
        f" {JOB_CAMPAIGN.format('j')} AS p, {DELIVERY_CAMPAIGN.format('d')} AS d FROM jobs j"
        f" LEFT JOIN deliveries d ON d.id = j.delivery_id WHERE {gift.format('j')}) WHERE coalesce(p, d) IS NOT NULL"
    )
    conn.execute(
        "INSERT INTO campaign_hours (source, hour, campaign_id, gifts) SELECT source, substr(latest, 1, 13), campaign_id,"
        " count(*) FROM (SELECT source, campaign_id, max(created_at) AS latest FROM job_campaigns"
        " GROUP BY source, campaign_id, entity_id) GROUP BY 1, 2, 3"
    )

    def add(row: str) -> str:
        """The statement that files job ``row`` under its campaign, if it names one."""
        found = (
            f"SELECT p, CASE WHEN p IS NULL THEN (SELECT {DELIVERY_CAMPAIGN.format('d')} FROM deliveries d"
            f" WHERE d.id = {row}.delivery_id) END AS d FROM (SELECT {JOB_CAMPAIGN.format(row)} AS p)"
        )
        return (
            f"INSERT OR IGNORE INTO job_campaigns ({columns}) SELECT {row}.id, {row}.source, coalesce(p, d),"
            f" {row}.entity_id, {row}.created_at, CASE WHEN p IS NULL THEN {row}.delivery_id END FROM ({found})"
            f" WHERE coalesce(p, d) IS NOT NULL AND {gift.format(row)};"
        )

    conn.execute(f"CREATE TRIGGER job_campaigns_insert AFTER INSERT ON jobs WHEN {gift.format('new')} BEGIN {add('new')} END")
    watched = ("id", "source", "target", "entity_type", "entity_id", "delivery_id", "payload", "created_at")
    moved = " OR ".join(f"old.{c} IS NOT new.{c}" for c in watched)
    conn.execute(
        f"CREATE TRIGGER job_campaigns_update AFTER UPDATE OF {', '.join(watched)} ON jobs WHEN {moved}"
        f" BEGIN DELETE FROM job_campaigns WHERE job = old.id; {add('new')} END"
    )
    conn.execute(
        f"CREATE TRIGGER job_campaigns_delete AFTER DELETE ON jobs WHEN {gift.format('old')}"
        " BEGIN DELETE FROM job_campaigns WHERE job = old.id; END"
    )
    body = DELIVERY_CAMPAIGN.format("new")
    conn.execute(
        "CREATE TRIGGER job_campaigns_delivery_body AFTER UPDATE OF body ON deliveries WHEN old.body IS NOT new.body BEGIN"
        f" DELETE FROM job_campaigns WHERE delivery_id = new.id AND ({body}) IS NULL;"
        f" UPDATE job_campaigns SET campaign_id = ({body}) WHERE delivery_id = new.id AND ({body}) IS NOT NULL; END"
    )
    conn.execute(
        "CREATE TRIGGER job_campaigns_delivery_delete AFTER DELETE ON deliveries BEGIN"
        " DELETE FROM job_campaigns WHERE delivery_id = old.id; END"
    )

    # a gift counts in the hour of its latest job of the campaign: a row that becomes the latest moves it there, and
    # when the latest goes the gift moves back to the latest left (or is no longer counted)
    count = (
        "INSERT INTO campaign_hours (source, hour, campaign_id, gifts) SELECT {0}.source, substr({1}, 1, 13),"
        " {0}.campaign_id, {2} WHERE {3} ON CONFLICT (source, hour, campaign_id) DO UPDATE SET gifts = gifts + excluded.gifts;"
    )
    others = (
        "(SELECT max(created_at) FROM job_campaigns WHERE source = {0}.source AND campaign_id = {0}.campaign_id"
        " AND entity_id = {0}.entity_id AND job IS NOT {0}.job)"
    )

    def filed(row: str) -> str:
        before = others.format(row)
        return count.format(row, before, -1, f"{row}.created_at > {before}") + count.format(
            row, f"{row}.created_at", 1, f"{before} IS NULL OR {row}.created_at > {before}"
        )

    def unfiled(row: str) -> str:
        left = others.format(row)
        return count.format(row, f"{row}.created_at", -1, f"{left} IS NULL OR {row}.created_at > {left}") + count.format(
            row, left, 1, f"{row}.created_at > {left}"
        )

    conn.execute(f"CREATE TRIGGER campaign_hours_insert AFTER INSERT ON job_campaigns BEGIN {filed('new')} END")
    conn.execute(f"CREATE TRIGGER campaign_hours_delete AFTER DELETE ON job_campaigns BEGIN {unfiled('old')} END")
    conn.execute(
        "CREATE TRIGGER campaign_hours_update AFTER UPDATE ON job_campaigns WHEN old.campaign_id IS NOT new.campaign_id"
        f" OR old.source IS NOT new.source OR old.entity_id IS NOT new.entity_id OR old.created_at IS NOT new.created_at"
        f" BEGIN {unfiled('old')} {filed('new')} END"
    )


def renew_locks(conn: sqlite3.Connection, owners: list[str], ttl_s: float) -> int:
    """Extend the locks of ``owners`` (a live drain's heartbeat); returns how many."""
    if not owners:
        return 0
    import time

    expires = time.time() + ttl_s
    with atomic(conn):
        return sum(conn.execute("UPDATE locks SET expires = ? WHERE owner LIKE ?", (expires, f"{o}#%")).rowcount for o in owners)


@contextmanager
def named_lock(conn: sqlite3.Connection, names: list[str], *, ttl_s: float | None = None, wait_s: float = 120) -> Iterator[None]:
    """Hold every lock in ``names`` (taken together, so two holders never deadlock) for the block.

    Taken through a job's connection (``held_by``) the lock belongs to the running job's lease owner and is renewed with its lease; a lock
    left by a process that died lapses after ``ttl_s`` without renewal. Waiting longer than ``wait_s``
    raises StoreUnavailable."""
    import time

    holder: LockHolder | None = getattr(conn, "lock_holder", None)
    # inside a job a lock lasts one lease past its last heartbeat; elsewhere a minute
    ttl_s = ttl_s or (holder.ttl_s if holder else None) or 60.0
    owner = f"{holder.owner}#{uuid.uuid4()}" if holder else str(uuid.uuid4())
    names = sorted(set(names))
    deadline = time.monotonic() + wait_s
    while True:
        now = time.time()
        with atomic(conn):
            marks = ",".join("?" * len(names))
            held = conn.execute(f"SELECT count(*) FROM locks WHERE name IN ({marks}) AND expires >= ?", (*names, now)).fetchone()[
                0
            ]
            if not held:
                conn.executemany(
                    "INSERT INTO locks (name, owner, expires) VALUES (?, ?, ?) ON CONFLICT (name)"
                    " DO UPDATE SET owner = excluded.owner, expires = excluded.expires",
                    [(name, owner, now + ttl_s) for name in names],
                )
                break
        if time.monotonic() > deadline:
            raise StoreUnavailable(f"waited {wait_s:.0f} s for {', '.join(names)}")
        time.sleep(0.05)
    try:
        yield
    finally:
        with atomic(conn):
            conn.execute("DELETE FROM locks WHERE owner = ?", (owner,))
