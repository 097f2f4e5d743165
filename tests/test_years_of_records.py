"""Years of records: the window counts (kept as jobs change), the search index (kept where rows are written),
reads that never wait for the write lock, a database that records which synctool migrated it and refuses an
older one, and prune keeping the file compact. The timings at 1,000,000 records are in bench/."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from synctool import store
from synctool.queue import log
from tests.test_staff_page import page, team  # noqa: F401  (fixtures)

SOURCES = ("donations", "pos", "mailing")
STATUSES = ("queued", "running", "succeeded", "skipped", "failed", "review")


def insert(conn, n: int, created: str, *, status: str = "succeeded", source: str = "donations", **columns) -> str:
    """A job row as the queue writes one (the receiver's and poll's inserts are plain INSERTs too)."""
    row = {
        "id": f"job-{n:05d}",
        "source": source,
        "entity_type": "transaction",
        "entity_id": str(n),
        "external_id": f"{source}_{n}",
        "status": status,
        "run_after": created,
        "created_at": created,
        "updated_at": created,
        **columns,
    }
    with store.atomic(conn):
        conn.execute(f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
    return row["id"]


def stats(cli, window: str) -> dict:
    result = cli("stats", "--window", window, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def counted(conn, since: str) -> tuple[Counter, dict[str, Counter], dict[str, int]]:
    """The window's counts the slow way: every row read."""
    overall, per_source, polled = Counter(), {}, Counter()
    for row in conn.execute("SELECT source, status, payload FROM jobs WHERE created_at >= ?", (since,)):
        overall[row["status"]] += 1
        per_source.setdefault(row["source"], Counter())[row["status"]] += 1
        if (
            row["status"] == "succeeded"
            and (row["payload"] or "").startswith("{")
            and json.loads(row["payload"])["origin"] == "poll"
        ):
            polled[row["source"]] += 1
    return overall, per_source, polled


def test_window_counts_follow_every_insert_change_and_delete(db, cli):
    """The overview's and stats' counts come from hourly counters kept by triggers; after inserts, status and
    payload changes, a moved creation time and deletes, they equal a count of the rows themselves."""
    rng = random.Random(47)
    now = store.utcnow()
    ages = [timedelta(minutes=m) for m in (0, 1, 59, 61)] + [timedelta(hours=23, minutes=59), timedelta(hours=24, minutes=1)]
    ages += [timedelta(days=6, hours=23), timedelta(days=7, minutes=1), timedelta(days=29), timedelta(days=31)]
    ids = []
    for n in range(240):
        age = rng.choice(ages) + timedelta(seconds=rng.randint(0, 50))
        payload = json.dumps({"origin": rng.choice(["poll", "webhook"])}) if n % 3 else (None if n % 2 else "not json")
        ids.append(insert(db, n, store.iso(now - age), status=rng.choice(STATUSES), source=rng.choice(SOURCES), payload=payload))
    with store.atomic(db):
        for job_id in rng.sample(ids, 80):
            db.execute("UPDATE jobs SET status = ? WHERE id = ?", (rng.choice(STATUSES), job_id))
        for job_id in rng.sample(ids, 20):
            db.execute("UPDATE jobs SET payload = ? WHERE id = ?", (json.dumps({"origin": "poll"}), job_id))
        for job_id in rng.sample(ids, 10):
            db.execute("UPDATE jobs SET created_at = ? WHERE id = ?", (store.iso(now - timedelta(days=40)), job_id))
        for job_id in rng.sample(ids, 30):
            db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
    for window in ("24h", "7d", "30d"):
        found = stats(cli, window)
        overall, per_source, _ = counted(db, found["since"])
        assert found["total"] == sum(overall.values()) and found["total"] > 0
        assert {s: found[s] for s in STATUSES} == {s: overall[s] for s in STATUSES}, window
        assert {src: {s: c[s] for s in STATUSES} for src, c in found["per_source"].items()} == {
            src: {s: c[s] for s in STATUSES} for src, c in per_source.items()
        }
    since = store.iso(now - timedelta(days=7))
    _, per_source, polled = counted(db, since)
    summary = log.summary_per_source(db, since)
    assert {src: row["recovered_by_poll"] for src, row in summary.items()} == {src: polled[src] for src in per_source}
    assert {src: row["failed"] for src, row in summary.items()} == {src: c["failed"] for src, c in per_source.items()}
    with store.atomic(db):
        db.execute("DELETE FROM jobs")
    assert stats(cli, "30d")["total"] == 0


def test_a_search_finds_a_job_as_it_is_now_without_a_drain(db, cli):
    """The index is kept where rows are written: a new job is found at once, by the error it failed with after it
    was first indexed, no longer by the one it lost, and not at all once deleted."""

    def found(q: str) -> list[str]:
        result = cli("syncs", "list", "--q", q, "--json")
        assert result.exit_code == 0, result.output
        return [r["id"] for r in json.loads(result.stdout)["items"]]

    job = insert(db, 1, store.iso(), email="ada@example.org", name="Ada Lovelace", status="queued")
    assert found("ada@example") == [job] and found("Lovelace") == [job]
    with store.atomic(db):
        db.execute("UPDATE jobs SET status = 'failed', last_error = 'CRM answered 503 Service Unavailable' WHERE id = ?", (job,))
    assert found("503 Service") == [job]
    with store.atomic(db):
        db.execute("UPDATE jobs SET last_error = 'fund 77 is unknown to the CRM' WHERE id = ?", (job,))
    assert found("fund 77") == [job] and found("503 Service") == []
    with store.atomic(db):
        db.execute("DELETE FROM jobs WHERE id = ?", (job,))
    assert found("Lovelace") == []


@pytest.mark.sqlite_only(reason="SQLite's one write lock (WAL readers beside BEGIN IMMEDIATE)")
def test_what_people_read_never_waits_for_the_write_lock(db, cli, page):  # noqa: F811
    """Another process holds SQLite's write lock (a drain's long transaction): the sync log with a text search,
    stats, the overview and the staff pages all answer; none of them writes."""
    for n in range(30):
        insert(db, n, store.iso(store.utcnow() - timedelta(hours=n)), status="failed", last_error=f"error number {n}")
    browser = page("viewer")
    holder = store.connect(db.execute("PRAGMA database_list").fetchone()[2], migrate=False)
    holder.execute("BEGIN IMMEDIATE")
    try:
        for args in (("syncs", "list", "--q", "error number 7", "--json"), ("stats", "--json"), ("overview", "--json")):
            result = cli(*args)
            assert result.exit_code == 0, result.output
        for path in ("/admin/", "/admin/syncs?q=error+number+12", "/admin/syncs?status=failed", "/admin/failed"):
            assert browser.get(path).status_code == 200, path
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def database_check(cli) -> dict:
    [found] = [c for c in json.loads(cli("doctor", "--json").stdout) if c["check"] == "database"]
    return found


def newer(path: Path) -> None:
    """Make the database look migrated by a later synctool: a migration this one does not know."""
    conn = store.connect(path)
    with store.atomic(conn):
        conn.execute(
            "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('synctool', 'm099_from_the_future', ?)",
            (store.iso(),),
        )
        conn.execute("UPDATE store_meta SET value = '9.1.0' WHERE key = 'migrated_by'")
    conn.execute("PRAGMA user_version = 4242")
    conn.close()


def digest(path: Path) -> str:
    """The database's bytes, and its write-ahead log's (an open connection's ``-wal`` is empty or gone)."""
    wal = path.with_name(path.name + "-wal")
    return hashlib.sha256(path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")).hexdigest()


@pytest.mark.no_database
def test_an_older_synctool_refuses_a_newer_database_and_changes_nothing(env, cli):
    path = Path(env["SYNCTOOL_DB"])
    store.connect(path).close()
    newer(path)
    before = digest(path)
    for args in (("syncs", "list"), ("doctor",), ("drain",), ("serve", "--port", "9")):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        [line] = result.stderr.splitlines()
        assert "migrated by a newer synctool (9.1.0: m099_from_the_future)" in line and "nothing was changed" in line
    assert digest(path) == before
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 4242
    conn.close()


def test_the_database_records_what_migrated_it_and_doctor_counts_the_sets_in_use(env, cli, tmp_path):
    from synctool import __version__

    (tmp_path / "config.yaml").write_text("platforms: [givebutter]\n")
    database = database_check(cli)
    in_use = len(store.MIGRATIONS)  # the core's (Givebutter's recurring plans are the core's since issue 60)
    assert f", {in_use}/{in_use} migrations (by synctool {__version__})" in database["detail"]
    assert "growth not known yet" in database["detail"]


@pytest.mark.sqlite_only(reason="SQLite's free pages, PRAGMA optimize and the file's size")
def test_prune_gives_free_pages_back_optimizes_and_records_the_size(db, cli, env):
    old = store.iso(store.utcnow() - timedelta(days=500))
    with store.atomic(db):
        for n in range(40):
            db.execute(
                "INSERT INTO deliveries (source, event_id, received_at, body) VALUES ('pos', ?, ?, ?)",
                (f"evt-{n}", old, b"x" * 60_000),
            )
        db.execute(
            "INSERT INTO store_sizes (day, bytes, free_bytes) VALUES (?, 1000000, 0)",
            ((store.utcnow() - timedelta(days=30)).date().isoformat(),),
        )
    result = cli("prune", "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["counts"]["raw_bodies"] == 40
    size = found["database"]
    assert size["auto_vacuum"] == 2 and size["free_bytes"] == 0 and size["bytes"] < size["bytes_before"] - 2_000_000
    database = database_check(cli)
    assert "MB a month" in database["detail"] and database["status"] == "ok"


@pytest.mark.no_database
def test_prune_vacuum_switches_a_database_made_before_0_3_0_to_give_pages_back(env, cli):
    path = Path(env["SYNCTOOL_DB"])
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA auto_vacuum = NONE")
    conn.execute("CREATE TABLE filler (x BLOB)")
    conn.close()
    conn = store.connect(path)
    assert store.size(conn)["auto_vacuum"] == 0
    with store.atomic(conn):
        conn.executemany("INSERT INTO filler VALUES (?)", [(b"y" * 50_000,)] * 80)
    with store.atomic(conn):
        conn.execute("DELETE FROM filler")
    conn.close()
    database = database_check(cli)
    assert database["status"] == "warn" and "prune --vacuum" in database["fix"]
    plain = cli("prune")
    assert plain.exit_code == 0 and "prune --vacuum` gives it back" in plain.output
    found = json.loads(cli("prune", "--vacuum", "--json").stdout)["database"]
    assert found["auto_vacuum"] == 2 and found["free_bytes"] == 0 and found["bytes"] < found["bytes_before"] - 3_000_000
