"""The migration machinery: each set's migrations in order, applied by sqlite-utils' ``Migrations``.

Migrations are small functions in order (the core's in ``schema/``), applied by sqlite-utils' ``Migrations`` and
recorded in its ``_sqlite_migrations`` table, so a fresh database and an old one reach the same schema. They run
under ``BEGIN IMMEDIATE``, so two processes starting at once take turns. ``PRAGMA user_version`` holds a digest
of the migrations applied (``fingerprint``): a command on an up-to-date database checks that one number and
does not import sqlite-utils at all. A database made before sqlite-utils (its ``_migrations`` table) is
carried over in place by ``_bridge``. A database a newer synctool migrated (a migration this one does not
know) is refused before anything is written (``DatabaseTooNew``): an older synctool never runs on it.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from synctool import __version__
from synctool.errors import DatabaseTooNew
from synctool.store import dialect
from synctool.store.engine import Connection
from synctool.store.schema import core, features, notices, plans, scale
from synctool.store.tables import database
from synctool.store.times import iso
from synctool.store.transactions import atomic

if TYPE_CHECKING:
    from sqlite_utils import Database
    from sqlite_utils.migrations import Migrations


MIGRATION_SET = "synctool"


#: the core's migrations, in the order they were made (``migrations()`` hands them to sqlite-utils): a new one goes
#: at the end, and none is renamed or taken out (``RETIRED``), since databases record them by name
MIGRATIONS: list[Callable[..., None]] = [  # a Database, or a store.Connection (portable)
    core.m001_core,
    core.m003_locks,
    core.m004_crm_mirror,
    core.m005_unconfirmed_writes,
    core.m006_refunds,
    features.m007_preview,
    features.m008_write_errors,
    features.m009_reconcile_accepted,
    features.m010_donor_changes,
    features.m011_staff_page,
    features.m012_donor_matches,
    features.m013_safe_on_the_internet,
    features.m014_currency_holds,
    scale.m015_years_of_records,
    features.m016_event_invitations,
    scale.m017_overview_at_a_million,
    notices.m018_chat_notices,
    plans.m019_plan_crm_ledgers,
    plans.m020_plans_for_every_platform,
    scale.m021_counters_without_a_hot_row,
]


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
#: (and Givebutter's ``givebutter_plans_001`` made ``plans`` and ``plan_events`` before they were every platform's, the
#: core's ``m020_plans_for_every_platform``)
RETIRED: dict[str, frozenset[str]] = {
    MIGRATION_SET: frozenset({"m002_portal"}),
    f"{MIGRATION_SET}.givebutter": frozenset({"givebutter_plans_001"}),
}


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


def portable(fn: Callable[..., None]) -> bool:
    """Whether a migration takes a ``store.Connection`` (its parameter annotated so: it runs on both engines, its DDL
    portable through ``store.run_script``) rather than a sqlite-utils ``Database`` (the older form: SQLite alone)."""
    import inspect

    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if not parameters:
        return False
    annotation = parameters[0].annotation
    said = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return said.rsplit(".", 1)[-1] == "Connection"


def _on_sqlite(fn: Callable[..., None]) -> Callable[[Database], None]:
    """A migration as sqlite-utils calls it: a portable one is handed the database's connection."""
    if not portable(fn):
        return fn
    import functools

    @functools.wraps(fn)
    def step(db: Database) -> None:
        fn(db.conn)

    return step


def migrations(name: str = MIGRATION_SET, functions: Sequence[Callable[[Database], None]] = ()) -> Migrations:
    """One migration set as sqlite-utils' ``Migrations`` (the core's by default)."""
    from sqlite_utils.migrations import Migrations

    found = Migrations(name)
    for fn in functions or (MIGRATIONS if name == MIGRATION_SET else ()):
        found()(_on_sqlite(fn))
    return found


def apply_migrations(conn: Connection) -> list[str]:
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


def _refuse_newer(conn: Connection) -> None:
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


def _bridge(conn: Connection) -> None:
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


def applied_migrations(conn: Connection, sets: Sequence[str] | None = None) -> list[str]:
    """The migrations this database has applied that this synctool knows: of every set, or of ``sets`` (the sets in
    use). A retired migration (``RETIRED``) is not counted."""
    known = migration_names(sets)
    if dialect.on_postgres(conn):  # PostgreSQL's record of them (store/schema_postgres.py)
        if not dialect.has_table(conn, "schema_migrations"):
            return []
        recorded = conn.execute("SELECT migration_set, name FROM schema_migrations ORDER BY applied_at, name")
        return [name for migration_set, name in recorded if name in known.get(migration_set, ())]
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_sqlite_migrations'").fetchone():
        return []
    return [
        name
        for migration_set, name in conn.execute("SELECT migration_set, name FROM _sqlite_migrations ORDER BY id")
        if name in known.get(migration_set, ())
    ]


def migrated_by(conn: Connection) -> str | None:
    """The synctool version that last migrated this database (None before 0.3.0)."""
    if not dialect.has_table(conn, "store_meta"):
        return None
    found = conn.execute("SELECT value FROM store_meta WHERE key = 'migrated_by'").fetchone()
    return found[0] if found else None
