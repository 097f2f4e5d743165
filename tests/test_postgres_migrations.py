"""Migrations reach an existing PostgreSQL database: a database made by the previous schema (the baseline, as
``pg_url`` holds it) gets a later core or platform migration when it is next opened, one transaction each under the
schema's lock, so two processes starting at once migrate once; one migration function serves both engines."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from synctool import store
from synctool.errors import ConfigError
from synctool.store import migrations, postgres, schema_postgres


def m020_job_notes(conn: store.Connection) -> None:
    """A later core migration as one is written now: a store.Connection and portable DDL."""
    store.run_script(
        conn,
        """
        ALTER TABLE jobs ADD COLUMN note_from_m020 TEXT;
        CREATE TABLE m020_notes (id TEXT PRIMARY KEY, note TEXT NOT NULL);
        """,
    )


def later_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, m020_job_notes])


def recorded(url: str) -> list[tuple[str, str]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as raw:
        return [tuple(r) for r in raw.execute("SELECT migration_set, name FROM schema_migrations ORDER BY name").fetchall()]


def test_a_database_of_the_previous_schema_is_migrated_forward(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    before = store.connect(pg_url)  # the baseline, as the previous synctool left it
    assert ("synctool", "m020_job_notes") not in schema_postgres.applied(before)
    before.close()
    later_core(monkeypatch)
    conn = store.connect(pg_url)
    try:
        assert conn.execute("SELECT note_from_m020 FROM jobs").fetchall() == []
        conn.execute("INSERT INTO m020_notes (id, note) VALUES ('a', 'b')")
        applied = schema_postgres.applied(conn)
        assert ("synctool", "m020_job_notes") in applied
        assert "m020_job_notes" in store.applied_migrations(conn)
        meta = dict(conn.execute("SELECT key, value FROM store_meta").fetchall())
        assert meta["schema_version"] == schema_postgres.schema_version(applied) != schema_postgres.schema_version()
    finally:
        conn.close()
    # opened again: nothing left to apply, nothing applied twice
    store.connect(pg_url).close()
    assert recorded(pg_url).count(("synctool", "m020_job_notes")) == 1


@pytest.mark.sqlite_only(reason="the same migration function on SQLite's file, through sqlite-utils")
def test_the_same_migration_migrates_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store.connect(tmp_path / "old.db").close()
    later_core(monkeypatch)
    conn = store.connect(tmp_path / "old.db")
    try:
        assert conn.execute("SELECT note_from_m020 FROM jobs").fetchall() == []
        assert "m020_job_notes" in store.applied_migrations(conn)
    finally:
        conn.close()


def kit_001_portable(conn: store.Connection) -> None:
    store.run_script(conn, "CREATE TABLE kit_items (id TEXT PRIMARY KEY, name TEXT)")


def kit_002_older_form(db) -> None:  # noqa: ANN001 (a sqlite_utils.Database, as docs/platforms.md once said)
    store.run_script(db.conn, "CREATE INDEX kit_items_name ON kit_items (name)")


def kit_003_needs_sqlite_utils(db) -> None:  # noqa: ANN001
    db.execute("CREATE TABLE kit_half (id TEXT)")
    db["kit_more"].create({"id": str}, pk="id")


def test_a_platforms_migrations_run_on_postgresql_and_one_needing_sqlite_utils_is_refused(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(store.PLATFORM_MIGRATIONS, "synctool.kit", lambda: [kit_001_portable, kit_002_older_form])
    store.connect(pg_url).close()
    assert {("synctool.kit", "kit_001_portable"), ("synctool.kit", "kit_002_older_form")} <= set(recorded(pg_url))
    monkeypatch.setitem(
        store.PLATFORM_MIGRATIONS, "synctool.kit", lambda: [kit_001_portable, kit_002_older_form, kit_003_needs_sqlite_utils]
    )
    with pytest.raises(ConfigError, match="kit_003_needs_sqlite_utils takes a sqlite-utils Database") as refused:
        store.connect(pg_url)
    assert "\n" not in str(refused.value)
    assert ("synctool.kit", "kit_003_needs_sqlite_utils") not in recorded(pg_url)
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as raw:  # nothing of it written: its transaction rolled back
        assert raw.execute("SELECT to_regclass('kit_half')").fetchone() == (None,)


OTHER_MACHINE = """
import sys
from synctool import store

def m001_slow(conn: store.Connection) -> None:
    store.run_script(conn, "CREATE TABLE raced (id INTEGER); INSERT INTO raced VALUES (1)")
    print("migrating", flush=True)
    sys.stdin.readline()  # until the test has seen the other machine wait for the lock

store.add_migrations("race", lambda: [m001_slow])
store.connect(sys.argv[1]).close()
print("done", flush=True)
"""


def m001_slow(conn: store.Connection) -> None:
    store.run_script(conn, "CREATE TABLE raced (id INTEGER); INSERT INTO raced VALUES (1)")


def test_two_processes_migrating_at_once_end_with_one_schema(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process (machine) is applying a migration when this one opens the database: this one waits for
    the schema's lock, looks again, and finds it applied: once, and both end on the migrated schema."""
    import psycopg

    script = tmp_path / "other_machine.py"
    script.write_text(OTHER_MACHINE)
    other = subprocess.Popen([sys.executable, str(script), pg_url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None and other.stdin is not None
        assert other.stdout.readline().strip() == "migrating"  # inside its transaction, holding the lock
        monkeypatch.setitem(store.PLATFORM_MIGRATIONS, "synctool.race", lambda: [m001_slow])
        ours: list[object] = []
        opening = threading.Thread(target=lambda: ours.append(store.connect(pg_url)))
        opening.start()
        with psycopg.connect(pg_url, autocommit=True) as raw:
            waits = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            deadline = time.monotonic() + 10
            while raw.execute(waits).fetchone() != (1,) and opening.is_alive() and time.monotonic() < deadline:
                time.sleep(0.01)
        assert opening.is_alive(), "this process did not wait for the other's migration"
        other.stdin.write("go\n")
        other.stdin.flush()
        out, _ = other.communicate(timeout=30)
        assert other.returncode == 0 and "done" in out
        opening.join(timeout=30)
    finally:
        if other.poll() is None:
            other.kill()
    conn = ours[0]
    assert isinstance(conn, postgres.PostgresConnection)
    try:
        assert conn.execute("SELECT count(*) FROM raced").fetchone()[0] == 1
    finally:
        conn.close()
    assert recorded(pg_url).count(("synctool.race", "m001_slow")) == 1
