"""synctool's schema on PostgreSQL: the current schema written once as PostgreSQL DDL (``schema_postgres.sql``).

On SQLite the schema is the sum of the migrations (``schema/``, the platforms' sets) applied by sqlite-utils; on
PostgreSQL it is written whole, as of the migrations ``MIGRATIONS`` names, and applied to an empty database in one
transaction. ``schema_migrations`` records those names as SQLite's ``_sqlite_migrations`` does, and ``store_meta``
the fingerprint (``fingerprint()``, what SQLite's ``user_version`` holds) and who applied it, so the refusal of a
database a newer synctool made reads the same on both engines (``refuse_newer``). Migrations of a PostgreSQL
database come with the issue's later parts; a SQLite migration added since this file was written fails
tests/test_postgres_schema.py until the file has its tables and columns.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from synctool import __version__
from synctool.errors import DatabaseTooNew
from synctool.store.migrations import RETIRED, migration_names
from synctool.store.times import iso

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


def schema_version() -> str:
    """The fingerprint of what ``MIGRATIONS`` names, as ``store.fingerprint`` makes it for SQLite's user_version."""
    import zlib

    names = "\n".join(f"{name}:{m}" for name, found in MIGRATIONS.items() for m in found)
    return str(zlib.crc32(names.encode()) & 0x7FFFFFFF or 1)


def applied(conn: Any) -> list[tuple[str, str]]:
    """The migrations this database records (set, name), in order; empty for a database without the schema."""
    if conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None:
        return []
    return [tuple(row) for row in conn.execute("SELECT migration_set, name FROM schema_migrations ORDER BY applied_at, name")]


def newer_migration(recorded: list[tuple[str, str]]) -> str | None:
    """The first recorded migration of a set this synctool knows that it does not know (a newer synctool's)."""
    known = {name: set(found) | RETIRED.get(name, frozenset()) for name, found in migration_names().items()}
    for migration_set, name in recorded:
        if migration_set in known and name not in known[migration_set]:
            return name
    return None


def refuse_newer(conn: Any, where: str) -> None:
    """DatabaseTooNew, nothing written, when a newer synctool made this database's schema."""
    found = newer_migration(applied(conn))
    if found is None:
        return
    row = conn.execute("SELECT value FROM store_meta WHERE key = 'migrated_by'").fetchone()
    raise DatabaseTooNew(
        f"{where} was migrated by a newer synctool ({row[0] if row else 'unknown version'}: {found}) than this one ({__version__});"
        " nothing was changed: upgrade synctool (pip install -U synctool), or restore a backup made before the upgrade"
    )
