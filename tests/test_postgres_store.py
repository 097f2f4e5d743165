"""The psycopg connection behind store.connect("postgresql://..."): the surface synctool uses on a SQLite
connection, on a real PostgreSQL (tests/pg.py)."""

from __future__ import annotations

import pytest

from synctool import store
from synctool.store import postgres


@pytest.fixture
def pg(pg_url: str):
    conn = store.connect(pg_url)
    yield conn
    conn.close()


def test_placeholders_rows_and_rowcount(pg) -> None:
    pg.execute("INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)", ("a?", "50% 'off'", "2026-01-01T00:00:00Z"))
    pg.execute("INSERT INTO settings (key, value, updated_at) VALUES (:key, :value, :at)", {"key": "b", "value": "x", "at": "t"})
    row = pg.execute("SELECT key, value FROM settings WHERE key = ? AND value LIKE '%off%'", ("a?",)).fetchone()
    assert row["value"] == row[1] == "50% 'off'" and dict(row) == {"key": "a?", "value": "50% 'off'"}
    assert [r["key"] for r in pg.execute("SELECT key FROM settings WHERE key <> '?' ORDER BY key")] == ["a?", "b"]
    assert pg.execute("UPDATE settings SET value = ? WHERE key IN (?, ?)", ("y", "a?", "b")).rowcount == 2
    assert pg.execute("SELECT 1 WHERE false").fetchone() is None


def test_atomic_nests_savepoints_and_rolls_back(pg, pg_url: str) -> None:
    with store.atomic(pg):
        assert pg.in_transaction
        pg.execute("INSERT INTO settings (key, value, updated_at) VALUES ('kept', '1', 't')")
        with pytest.raises(RuntimeError), store.atomic(pg):
            pg.execute("INSERT INTO settings (key, value, updated_at) VALUES ('undone', '1', 't')")
            raise RuntimeError("inner")
    assert not pg.in_transaction
    with pytest.raises(RuntimeError), store.atomic(pg):
        pg.execute("INSERT INTO settings (key, value, updated_at) VALUES ('outer', '1', 't')")
        raise RuntimeError("outer")
    other = store.connect(pg_url)
    try:
        assert [r[0] for r in other.execute("SELECT key FROM settings ORDER BY key")] == ["kept"]
    finally:
        other.close()


def test_the_pool_hands_connections_back(pg_url: str) -> None:
    for _ in range(3 * postgres.POOL_SIZE):  # more than the pool holds: each close gives one back
        store.connect(pg_url).close()
    conn = store.connect(pg_url)
    try:
        assert 1 <= postgres.pool_stats(conn)["pool_size"] <= 2  # one in use, at most one idle
    finally:
        conn.close()


def test_the_search_and_the_counts_kept_by_triggers(pg) -> None:
    now = "2026-03-01T10:15:00Z"
    with store.atomic(pg):
        pg.execute(
            "INSERT INTO jobs (id, source, entity_type, entity_id, run_after, created_at, updated_at, email, payload)"
            " VALUES (?, 'donations', 'transaction', 'e1', ?, ?, ?, 'ada@example.org', ?)",
            ("j1", now, now, now, '{"origin": "poll", "transaction": {"campaign_id": 77}}'),
        )
    found = pg.execute("SELECT job_id FROM jobs_search WHERE document @@ plainto_tsquery('simple', 'ada@example.org')").fetchall()
    assert [r[0] for r in found] == ["j1"]
    assert [tuple(r) for r in pg.execute("SELECT hour, status, polled, n FROM job_counts")] == [("2026-03-01T10", "queued", 1, 1)]
    assert [tuple(r) for r in pg.execute("SELECT hour, campaign_id, gifts FROM campaign_hours")] == [("2026-03-01T10", "77", 1)]
    pg.execute("UPDATE jobs SET status = 'succeeded' WHERE id = 'j1'")
    assert [tuple(r) for r in pg.execute("SELECT status, n FROM job_counts ORDER BY status")] == [("queued", 0), ("succeeded", 1)]
    pg.execute("DELETE FROM jobs WHERE id = 'j1'")
    assert pg.execute("SELECT count(*) FROM jobs_search").fetchone()[0] == 0
    assert pg.execute("SELECT sum(gifts) FROM campaign_hours").fetchone()[0] == 0


def test_placeholders_leave_quoted_question_marks_alone() -> None:
    assert (
        postgres.translated("SELECT '?', \"a?\", ? FROM t WHERE x LIKE 'a%'", False)
        == "SELECT '?', \"a?\", %s FROM t WHERE x LIKE 'a%%'"
    )
    assert postgres.translated("SELECT x::text FROM t WHERE a = :a", True) == "SELECT x::text FROM t WHERE a = %(a)s"
    assert postgres.translated("BEGIN IMMEDIATE", False) == "BEGIN"


def test_without_a_server_the_tests_skip_and_ci_fails_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import pg

    monkeypatch.setattr(pg, "available", lambda: False)
    with pytest.raises(pytest.skip.Exception, match="PostgreSQL tests skipped"):
        pg.required({})
    with pytest.raises(pytest.fail.Exception, match="CI needs PostgreSQL"):
        pg.required({"CI": "true"})


def test_failures_are_the_error_classes_callers_catch_on_sqlite(pg) -> None:
    import sqlite3

    pg.execute("INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', 't')")
    with pytest.raises(sqlite3.IntegrityError, match="duplicate key"):
        pg.execute("INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', 't')")
    with pytest.raises(sqlite3.Error):
        pg.execute("SELECT no_such_column FROM settings")
    with store.atomic(pg):  # a failed statement inside a savepoint leaves the transaction usable
        with pytest.raises(sqlite3.IntegrityError), store.atomic(pg):
            pg.execute("INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', 't')")
        pg.execute("INSERT INTO settings (key, value, updated_at) VALUES ('k2', 'v', 't')")
    assert pg.execute("SELECT count(*) FROM settings").fetchone()[0] == 2


def test_preview_s_copy_commits_nothing_and_lets_go_of_its_locks_after_each_job(pg_url: str) -> None:
    conn = store.connect(pg_url)
    read = "SELECT value FROM settings WHERE key = 'k'"
    try:
        conn.execute("SET lock_timeout = '5s'")  # a lock the copy kept would fail the test, not hang it
        with store.atomic(conn):
            conn.execute("INSERT INTO settings (key, value, updated_at) VALUES ('k', '1', '2026-01-01T00:00:00Z')")
        copy = store.snapshot(conn)
        try:
            with store.atomic(copy):  # a savepoint inside the copy's own transaction
                copy.execute("UPDATE settings SET value = '2' WHERE key = 'k'")
            assert copy.execute(read).fetchone()[0] == "2" and conn.execute(read).fetchone()[0] == "1"
            with pytest.raises(store.Error, match="never commits"):
                copy.execute("COMMIT")
            store.release_snapshot(copy)  # the job is over: its row lock let go
            with store.atomic(conn):
                conn.execute("UPDATE settings SET value = '3' WHERE key = 'k'")
            assert copy.execute(read).fetchone()[0] == "3"  # a new snapshot, the job's write gone
        finally:
            copy.close()
        assert conn.execute(read).fetchone()[0] == "3"
    finally:
        conn.close()
