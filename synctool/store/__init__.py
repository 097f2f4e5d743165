"""The one SQLite file, one idea a module:

- ``engine``: what callers hold of the database, whatever the engine: ``Connection`` (the protocol every function
  taking a connection annotates), ``Cursor``, ``Row``, and the errors they catch (``Error``, ``Busy``); no module
  outside ``store/`` names ``sqlite3``;
- ``connection``: ``connect`` (WAL, ``synchronous=FULL``, a busy timeout; migrated when asked), ``snapshot``,
  ``open_read_only`` (another organisation's file, as it is), ``backup_to`` (a consistent copy to a file), and
  the modes of the files synctool makes (``private_file``: its own user's alone);
- ``transactions``: ``atomic`` (a transaction outside one, a savepoint inside one), ``exclusive`` (the transaction
  alone with a name: SQLite's one writer already is, PostgreSQL takes an advisory lock), ``run_script``, and the
  named locks every process sees (``named_lock``, ``held_by``, ``renew_locks``);
- ``migrations``: each set's migrations in order, applied by sqlite-utils' ``Migrations`` (a ``portable`` one, taking a
  ``store.Connection``, runs on PostgreSQL too), ``fingerprint`` (what
  ``PRAGMA user_version`` holds), and refusing a database a newer synctool migrated; the core's migrations
  themselves are in ``schema/``;
- ``outgoing``: ``Outgoing``, a table of rows drain sends (the outbox's mail, the chat notices): what is due, each
  row claimed once, retried, then given up with its error kept;
- ``sizes``: the file's size, recorded each day ``prune`` runs, and its growth per month;
- ``tables``: sqlite-utils' view of a connection (``database``), ``put_row``, ``Where``, ``new_id``;
- ``times``: times as stored (``iso``, ``utcnow``, ``TIME_FORMAT``);
- ``copy``: a whole database copied to another engine's and compared row by row (``synctool store copy``);
- ``dialect``: the few SQL spellings that differ between engines (``store.dialect.arrival()``);
- ``postgres``: PostgreSQL behind the same surface (``connect`` hands it a ``postgresql://`` URL; psycopg 3 and its
  pool; ``schema=``: an organisation's schema as the connection's ``search_path``), ``describe`` saying the engine for
  doctor; ``schema_postgres``: the baseline schema as PostgreSQL DDL, the migrations applied after it (one
  transaction each, under the schema's lock), and the refusal of a newer one.

Callers use the names below (``from synctool import store; store.atomic(conn)``), never the modules.
"""

from __future__ import annotations

from synctool.store import copy as copy  # a whole database to another engine's: ``store.copy.copy_rows()``
from synctool.store import dialect as dialect  # the engines' spellings: ``store.dialect.arrival()``
from synctool.store.connection import (
    BUSY_TIMEOUT_MS,
    PRIVATE_FILE,
    PRIVATE_FOLDER,
    backup_to,
    connect,
    describe,
    file_modes,
    open_read_only,
    private_file,
    private_folder,
    private_to_write,
    release_snapshot,
    snapshot,
)
from synctool.store.engine import Busy, Connection, Cursor, Error, Params, Row
from synctool.store.migrations import (
    MIGRATION_SET,
    MIGRATIONS,
    PLATFORM_MIGRATIONS,
    RETIRED,
    add_migrations,
    applied_migrations,
    apply_migrations,
    fingerprint,
    migrated_by,
    migration_names,
    migration_sets,
)
from synctool.store.outgoing import Outgoing
from synctool.store.schema.scale import DELIVERY_CAMPAIGN, JOB_CAMPAIGN, JOB_POLLED
from synctool.store.sizes import growth_per_month, record_size, size
from synctool.store.tables import Where, database, new_id, put_row
from synctool.store.times import TIME_FORMAT, iso, utcnow
from synctool.store.transactions import (
    LockHolder,
    SqliteConnection,
    atomic,
    exclusive,
    held_by,
    named_lock,
    renew_locks,
    run_script,
    writers_beside,
)

__all__ = [
    "BUSY_TIMEOUT_MS",
    "DELIVERY_CAMPAIGN",
    "JOB_CAMPAIGN",
    "JOB_POLLED",
    "MIGRATIONS",
    "MIGRATION_SET",
    "PLATFORM_MIGRATIONS",
    "PRIVATE_FILE",
    "PRIVATE_FOLDER",
    "RETIRED",
    "TIME_FORMAT",
    "Busy",
    "Connection",
    "Cursor",
    "Error",
    "LockHolder",
    "Outgoing",
    "Params",
    "Row",
    "SqliteConnection",
    "Where",
    "add_migrations",
    "applied_migrations",
    "apply_migrations",
    "atomic",
    "backup_to",
    "connect",
    "copy",
    "file_modes",
    "database",
    "describe",
    "dialect",
    "exclusive",
    "fingerprint",
    "growth_per_month",
    "held_by",
    "iso",
    "migrated_by",
    "migration_names",
    "migration_sets",
    "named_lock",
    "new_id",
    "open_read_only",
    "private_file",
    "private_folder",
    "private_to_write",
    "put_row",
    "record_size",
    "release_snapshot",
    "renew_locks",
    "run_script",
    "size",
    "snapshot",
    "utcnow",
    "writers_beside",
]
