"""The PostgreSQL schema (synctool/store/schema_postgres.sql) against the SQLite one its migrations make: every table,
every column, and the refusal of a database a newer synctool made."""

from __future__ import annotations

from pathlib import Path

import pytest

from synctool import store
from synctool.errors import DatabaseTooNew
from synctool.store import migrations, schema_postgres


def built_in_sets() -> dict[str, list[str]]:
    """The migration names of synctool's own sets (an outside platform package's are not in the PostgreSQL schema yet)."""
    return {
        name: [fn.__name__ for fn in functions]
        for name, functions in store.migration_sets().items()
        if all(fn.__module__.startswith("synctool.") for fn in functions)
    }


def sqlite_columns(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Each table of a new SQLite database migrated by synctool's own sets, with its columns."""
    own = {name: load for name, load in migrations.PLATFORM_MIGRATIONS.items() if name in built_in_sets()}
    monkeypatch.setattr(migrations, "PLATFORM_MIGRATIONS", own)
    conn = store.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return {
            table: [c[1] for c in conn.execute(f"PRAGMA table_info('{table}')")]
            for table in tables
            if table not in schema_postgres.SQLITE_ONLY
        }
    finally:
        conn.close()


def test_every_migration_synctool_has_reaches_postgresql(monkeypatch: pytest.MonkeyPatch) -> None:
    # the baseline (schema_postgres.sql) holds the first migrations of each set; every one after it takes a
    # store.Connection, so the same function migrates PostgreSQL (schema_postgres.migrate)
    sets = built_in_sets()
    for name, baseline in schema_postgres.MIGRATIONS.items():
        assert sets[name][: len(baseline)] == baseline, name
    later = [(name, fn) for name, fns in store.migration_sets().items() if name in sets for fn in fns]
    later = [(name, fn) for name, fn in later if fn.__name__ not in schema_postgres.MIGRATIONS.get(name, ())]
    assert [f"{name}:{fn.__name__}" for name, fn in later if not migrations.portable(fn)] == []
    own = {name: load for name, load in migrations.PLATFORM_MIGRATIONS.items() if name in sets}
    monkeypatch.setattr(migrations, "PLATFORM_MIGRATIONS", own)
    every = [(name, m) for name, found in sets.items() for m in found]
    assert schema_postgres.schema_version(every) == str(store.fingerprint())  # SQLite's user_version for the same sets


def test_every_sqlite_table_has_its_columns_on_postgresql(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = sqlite_columns(tmp_path / "new.db", monkeypatch)
    conn = store.connect(pg_url)
    try:
        found: dict[str, list[str]] = {}
        for table, column in conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"
        ):
            if column == "shard" and table in store.copy.SHARDED:  # PostgreSQL's counters spread over rows (m021)
                continue
            if not (column == "seq" and table in schema_postgres.ARRIVAL):  # SQLite's rowid (store.dialect.arrival)
                found.setdefault(table, []).append(column)
    finally:
        conn.close()
    assert {t: found.get(t) for t in expected} == expected
    assert set(found) - set(expected) == {"schema_migrations", "jobs_search"}


def test_an_empty_database_gets_the_schema_on_first_connect(pg_url: str) -> None:
    from tests import pg

    server = pg.server()
    empty = pg_url.rsplit("/", 1)[0] + "/empty_" + pg_url.rsplit("_", 1)[1]
    with server.admin() as admin:
        admin.execute(f'CREATE DATABASE "{empty.rsplit("/", 1)[1]}"')
    conn = store.connect(empty)
    try:
        recorded = schema_postgres.applied(conn)  # the baseline written whole, then every later migration applied
        assert {(name, m) for name, found in schema_postgres.MIGRATIONS.items() for m in found} <= set(recorded)
        assert schema_postgres.pending(recorded) == []
        version = conn.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchone()[0]
        assert version == schema_postgres.schema_version(recorded)
    finally:
        conn.close()
    store.connect(empty).close()  # a second connect finds it written and writes nothing


def test_a_schema_a_newer_synctool_wrote_is_refused_nothing_written(pg_url: str) -> None:
    conn = store.connect(pg_url)
    conn.execute("INSERT INTO schema_migrations VALUES ('synctool', 'm999_from_the_future', '2030-01-01T00:00:00Z')")
    conn.execute("UPDATE store_meta SET value = '9.9.9' WHERE key = 'migrated_by'")
    before = conn.execute("SELECT key, value FROM store_meta ORDER BY key").fetchall()
    conn.close()
    with pytest.raises(DatabaseTooNew, match=r"newer synctool \(9\.9\.9: m999_from_the_future\)"):
        store.connect(pg_url)
    with pytest.raises(DatabaseTooNew):
        store.connect(pg_url, migrate=False)  # refused whether or not it would migrate
    import psycopg

    with psycopg.connect(pg_url) as raw:  # not through store: it refuses the database
        assert [tuple(r) for r in raw.execute("SELECT key, value FROM store_meta ORDER BY key")] == [tuple(r) for r in before]


def writes(conn) -> dict[str, list[tuple]]:
    """The same writes on either engine, through store's connection; the tables the triggers keep, as they end."""
    job = (
        "INSERT INTO jobs (id, source, target, entity_type, entity_id, delivery_id, payload, run_after, created_at, updated_at)"
        " VALUES (?, ?, 'crm', ?, ?, ?, ?, ?, ?, ?)"
    )

    def add(id: str, source: str, kind: str, entity: str, at: str, payload: str | None, delivery: int | None = None) -> None:
        conn.execute(job, (id, source, kind, entity, delivery, payload, at, at, at))

    with store.atomic(conn):
        conn.execute(
            "INSERT INTO deliveries (id, source, event_id, received_at, body) VALUES (?, ?, ?, ?, ?)",
            (1, "donations", "ev1", "2026-03-01T09:00:00Z", b'{"data": {"campaign_id": "spring"}}'),
        )
        add("a", "donations", "transaction", "t1", "2026-03-01T09:10:00Z", '{"transaction": {"campaign_id": 77}}')
        add(
            "b",
            "donations",
            "transaction",
            "t1",
            "2026-03-01T11:10:00Z",
            '{"origin": "poll", "transaction": {"campaign_id": 77}}',
        )
        add("c", "donations", "transaction", "t2", "2026-03-01T09:30:00Z", '{"transaction": {}}', 1)
        add("d", "pos", "transaction", "t3", "2026-03-02T10:00:00Z", "not json")
        add("e", "donations", "contact", "c1", "2026-03-01T09:10:00Z", '{"origin": "poll"}')
    with store.atomic(conn):
        conn.execute("UPDATE jobs SET status = 'succeeded' WHERE id IN ('a', 'c', 'e')")
        conn.execute("UPDATE jobs SET created_at = '2026-03-01T08:00:00Z' WHERE id = 'b'")  # now older than a
        conn.execute("UPDATE jobs SET payload = ? WHERE id = 'a'", ('{"transaction": {"campaign_id": 78}}',))
        conn.execute("UPDATE deliveries SET body = ? WHERE id = 1", (b'{"data": {"campaign_id": "summer"}}',))
        conn.execute("UPDATE jobs SET last_error = 'boom' WHERE id = 'd'")  # no count moves
    with store.atomic(conn):
        conn.execute("DELETE FROM jobs WHERE id IN ('b', 'e')")
    return {
        table: sorted(tuple(str(v) for v in row) for row in conn.execute(f"SELECT {columns} FROM {table}"))
        for table, columns in {
            "job_counts": "hour, source, status, polled, n",
            "job_campaigns": "job, source, campaign_id, entity_id, created_at, delivery_id",
            "campaign_hours": "source, hour, campaign_id, gifts",
        }.items()
    }


@pytest.mark.sqlite_only(reason="compares a SQLite file with PostgreSQL: the SQLite leg runs it")
def test_the_triggers_keep_the_same_counts_as_sqlite_s(pg_url: str, db) -> None:
    conn = store.connect(pg_url)
    try:
        on_postgresql = writes(conn)
    finally:
        conn.close()
    assert on_postgresql == writes(db)
    assert on_postgresql["campaign_hours"]  # the writes reached every table the triggers keep
