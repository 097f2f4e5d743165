"""synctool's schema on PostgreSQL: a baseline written whole (``schema_postgres.sql``), then each later migration.

On SQLite the schema is the sum of the migrations (``schema/``, the platforms' sets) applied by sqlite-utils. On
PostgreSQL the schema as of the migrations ``MIGRATIONS`` names (the baseline) is written whole into an empty
database (or schema) in one transaction; every migration made since, the core's or a platform's, takes a
``store.Connection`` and runs portable DDL (``store.run_script``; ``store.dialect`` where the engines differ), so the
one function migrates both engines: ``migrate`` applies each one this database has not, in order, one transaction
each, under an advisory lock on the schema (``store.exclusive``), looking again once it holds the lock, so two
processes or machines starting at once migrate once. ``schema_migrations`` records the names as SQLite's
``_sqlite_migrations`` does, and ``store_meta`` the fingerprint of what is applied and who applied it, so the
refusal of a database a newer synctool made reads the same on both engines (``refuse_newer``). A migration in the
older form (a sqlite-utils ``Database``) is handed an object with the connection as ``.conn`` (what
``store.run_script(db.conn, ...)`` needs); one that needs more of sqlite-utils refuses the database in one line,
nothing of it written. The baseline is not edited for a later migration: tests/test_postgres_schema.py checks that
each migration after it is portable and that the migrated schema has every SQLite table and column.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

from synctool import __version__
from synctool.errors import DatabaseTooNew
from synctool.store.engine import Connection
from synctool.store.migrations import RETIRED, migration_names, migration_sets, portable
from synctool.store.times import iso
from synctool.store.transactions import atomic, exclusive

#: the migrations ``schema_postgres.sql`` holds the result of, set by set
MIGRATIONS: dict[str, list[str]] = {
    "synctool": [
        "m001_core",
        "m003_locks",
        "m004_crm_mirror",
        "m005_unconfirmed_writes",
        "m006_refunds",
        "m007_preview",
        "m008_write_errors",
        "m009_reconcile_accepted",
        "m010_donor_changes",
        "m011_staff_page",
        "m012_donor_matches",
        "m013_safe_on_the_internet",
        "m014_currency_holds",
        "m015_years_of_records",
        "m016_event_invitations",
        "m017_overview_at_a_million",
        "m018_chat_notices",
        "m019_plan_crm_ledgers",
        "m020_plans_for_every_platform",
    ],
    "synctool.portal": ["m001_portal", "m002_payment_currency"],
}

#: the tables read in arrival order (``store.dialect.arrival``: SQLite's rowid), with a ``seq`` identity here
ARRIVAL = ("jobs", "plan_events", "portal_payment_items")

#: tables of SQLite that PostgreSQL has in another shape: sqlite-utils' migrations table (``schema_migrations``
#: here) and the FTS5 search table with its shadow tables (``jobs_search``, a tsvector, here)
SQLITE_ONLY = (
    "_sqlite_migrations",
    "jobs_search",
    "jobs_search_data",
    "jobs_search_idx",
    "jobs_search_docsize",
    "jobs_search_config",
)


def ddl() -> str:
    return resources.files("synctool.store").joinpath("schema_postgres.sql").read_text()


def apply(conn: Any) -> None:
    """Write the schema into an empty database (a psycopg connection in autocommit mode), in one transaction."""
    with conn.transaction(), conn.cursor() as cursor:
        cursor.execute(ddl())
        record(cursor)


def record(cursor: Any) -> None:
    """Record what the schema just written holds: ``MIGRATIONS``, the schema's version, and who wrote it."""
    rows = [(name, migration, iso()) for name, found in MIGRATIONS.items() for migration in found]
    cursor.executemany("INSERT INTO schema_migrations (migration_set, name, applied_at) VALUES (%s, %s, %s)", rows)
    cursor.executemany(
        "INSERT INTO store_meta (key, value) VALUES (%s, %s)",
        [("migrated_by", __version__), ("migrated_at", iso()), ("schema_version", schema_version())],
    )


def schema_version(recorded: list[tuple[str, str]] | None = None) -> str:
    """The fingerprint of the migrations ``recorded`` (set, name; the baseline's, ``MIGRATIONS``, by default), as
    ``store.fingerprint`` makes it for SQLite's user_version."""
    import zlib

    found = recorded if recorded is not None else [(name, m) for name, names in MIGRATIONS.items() for m in names]
    names = "\n".join(f"{name}:{m}" for name, m in found)
    return str(zlib.crc32(names.encode()) & 0x7FFFFFFF or 1)


def pending(recorded: list[tuple[str, str]]) -> list[tuple[str, Callable[..., None]]]:
    """The migrations this process knows (every set's, in order) that the database has not applied: (set, function)."""
    done = set(recorded)
    return [(name, fn) for name, functions in migration_sets().items() for fn in functions if (name, fn.__name__) not in done]


class OlderForm:
    """What a migration in the older form (``fn(db)``, a sqlite-utils ``Database``) is handed on PostgreSQL: the
    connection as ``db.conn`` and ``db.execute``, no more."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self.conn.execute(sql, params)


class NotPortable(Exception):
    """A migration that cannot run on PostgreSQL (it needs sqlite-utils' own methods)."""


def run(conn: Connection, migration_set: str, fn: Callable[..., None]) -> None:
    """One migration on PostgreSQL, inside the caller's transaction."""
    if portable(fn):
        fn(conn)
        return
    try:
        fn(OlderForm(conn))
    except (AttributeError, TypeError) as exc:
        raise NotPortable(
            f"migration {migration_set}:{fn.__name__} takes a sqlite-utils Database and runs on SQLite alone ({exc}):"
            " its package must take a store.Connection (docs/platforms.md, migrations)"
        ) from None


def migrate(conn: Connection) -> list[str]:
    """Apply each migration the database has not (``pending``), in order, each in a transaction of its own under
    the schema's migration lock, looked for again once the lock is held (another process may have applied it);
    ``store_meta`` says who did and the schema's version. The names applied here. ``NotPortable`` or
    ``store.Error``: that migration rolled back, those before it kept."""
    done: list[str] = []
    for migration_set, fn in pending(applied(conn)):
        with atomic(conn):
            exclusive(conn, "migrations")
            recorded = applied(conn)
            if (migration_set, fn.__name__) in recorded:
                continue
            run(conn, migration_set, fn)
            conn.execute(
                "INSERT INTO schema_migrations (migration_set, name, applied_at) VALUES (?, ?, ?)",
                (migration_set, fn.__name__, iso()),
            )
            conn.executemany(
                "INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [
                    ("migrated_by", __version__),
                    ("migrated_at", iso()),
                    ("schema_version", schema_version([*recorded, (migration_set, fn.__name__)])),
                ],
            )
            done.append(fn.__name__)
    return done


def applied(conn: Any) -> list[tuple[str, str]]:
    """The migrations this database records (set, name), in order; empty for a database without the schema."""
    if conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None:
        return []
    return [
        (row[0], row[1]) for row in conn.execute("SELECT migration_set, name FROM schema_migrations ORDER BY applied_at, name")
    ]


def newer_migration(recorded: list[tuple[str, str]]) -> str | None:
    """The first recorded migration of a set this synctool knows that it does not know (a newer synctool's)."""
    known = {name: set(found) | RETIRED.get(name, frozenset()) for name, found in migration_names().items()}
    for migration_set, name in recorded:
        if migration_set in known and name not in known[migration_set]:
            return name
    return None


def refuse_newer(conn: Any, where: str, recorded: list[tuple[str, str]] | None = None) -> None:
    """DatabaseTooNew, nothing written, when a newer synctool made this database's schema (``recorded``: what
    ``applied`` read, when the caller has it)."""
    found = newer_migration(applied(conn) if recorded is None else recorded)
    if found is None:
        return
    row = conn.execute("SELECT value FROM store_meta WHERE key = 'migrated_by'").fetchone()
    raise DatabaseTooNew(
        f"{where} was migrated by a newer synctool ({row[0] if row else 'unknown version'}: {found}) than this one ({__version__});"
        " nothing was changed: upgrade synctool (pip install -U synctool), or restore a backup made before the upgrade"
    )
