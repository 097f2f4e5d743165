"""`synctool store copy`: a whole database to PostgreSQL and back, nothing lost, checked row by row."""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

#: what the copy rebuilds on the target rather than copies (store/copy.py): the schema's own records and the FTS5
#: search's shadow tables, which follow the rowids the jobs get on the target
REBUILT = ("_sqlite_migrations", "jobs_search_data", "jobs_search_idx", "jobs_search_docsize", "jobs_search_config")


def fill_every_table(path: Path) -> None:
    """A row in each table the old release's database leaves empty: a value of its column's type (text that is not
    ASCII, bytes that are not UTF-8), a foreign key naming a row that is there."""
    conn = sqlite3.connect(path)
    try:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall():
            if table in REBUILT or table.startswith(("sqlite_", "jobs_search", "job_c", "campaign_hours")):
                continue  # the overview's tables follow the jobs (triggers)
            if conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]:
                continue
            parents = {r[3]: (r[2], r[4]) for r in conn.execute(f'PRAGMA foreign_key_list("{table}")')}
            values: dict[str, object] = {}
            for _, name, declared, *_ in conn.execute(f'PRAGMA table_info("{table}")'):
                if name in parents:
                    parent, column = parents[name]
                    values[name] = conn.execute(f'SELECT "{column or "rowid"}" FROM "{parent}" LIMIT 1').fetchone()[0]
                elif "INT" in declared.upper():
                    values[name] = 7
                elif "REAL" in declared.upper():
                    values[name] = 2.5
                elif "BLOB" in declared.upper():
                    values[name] = b"\x00\xff"
                else:
                    values[name] = f"{table}.{name} é"
            listed = ", ".join(f'"{c}"' for c in values)
            conn.execute(f'INSERT INTO "{table}" ({listed}) VALUES ({", ".join("?" for _ in values)})', list(values.values()))
        conn.execute("INSERT INTO store_meta (key, value) VALUES ('renamed_keys_said', 'a note of its own')")
        conn.commit()
    finally:
        conn.close()


def rows_of(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows as SQLite holds them (types included), in key order, keyed by table; ``store_meta`` without
    the schema's own keys (the target's schema writes its own)."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        found = {}
        for table in tables:
            if table in REBUILT or table == "jobs_search":
                continue
            rows = [tuple((type(v).__name__, v) for v in row) for row in conn.execute(f'SELECT * FROM "{table}"')]
            if table == "store_meta":
                rows = [r for r in rows if r[0][1] not in ("migrated_by", "migrated_at", "schema_version")]
            found[table] = sorted(rows, key=repr)
        return found
    finally:
        conn.close()


def arrival_of(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT id FROM jobs ORDER BY rowid")]
    finally:
        conn.close()


@pytest.fixture
def filled(env: dict[str, str], tmp_path: Path) -> Path:
    """The release 0.3.0 database this synctool migrated, a row in every table: the test's database."""
    from synctool import platforms, store

    platforms.registered()
    path = tmp_path / "old.db"
    path.write_bytes(gzip.decompress((DATA / "release-0.3.0-dev.db.gz").read_bytes()))
    path.chmod(0o600)
    store.connect(path).close()
    fill_every_table(path)
    env["SYNCTOOL_DB"] = str(path)
    return path


def test_a_whole_database_to_postgresql_and_back_is_the_same_row_by_row(cli, env, filled, pg_url, tmp_path):
    before = rows_of(filled)
    assert all(before.values()), [t for t, rows in before.items() if not rows]  # every table holds rows

    there = cli("store", "copy", "--to", pg_url, "--json")
    assert there.exit_code == 0, there.output
    import json

    report = json.loads(there.stdout)
    assert report["differences"] == {}
    assert {t["table"]: t["rows"] for t in report["tables"]}["jobs"] == len(before["jobs"])
    assert any("tsvector" in note for note in report["rebuilt"])

    from synctool import store

    conn = store.connect(pg_url)  # the ids to come follow the largest copied
    try:
        largest = conn.execute("SELECT max(id) FROM deliveries").fetchone()[0]
        assert conn.execute("SELECT nextval(pg_get_serial_sequence('deliveries', 'id'))").fetchone()[0] == largest + 1
    finally:
        conn.close()

    env["SYNCTOOL_DB"] = pg_url
    back = cli("store", "copy", "--to", str(tmp_path / "back.db"))
    assert back.exit_code == 0, back.output
    assert "same" in back.stdout and "rebuilt on the target, not copied" in back.stdout
    digests = {t["table"]: t["digest"] for t in report["tables"]}
    for line in back.stdout.splitlines():  # the same digests both ways
        words = line.split()
        if words and words[0] in digests:
            assert digests[words[0]] in words, line

    assert rows_of(tmp_path / "back.db") == before
    conn = store.connect(pg_url)
    try:  # the jobs in the order they arrived, where PostgreSQL keeps it (seq, store.dialect.arrival: issue 59's locks)
        kept = store.copy.tables(conn)["jobs"].arrival is not None
    finally:
        conn.close()
    if kept:
        assert arrival_of(tmp_path / "back.db") == arrival_of(filled)
    conn = sqlite3.connect(tmp_path / "back.db")  # the search rebuilt: every job found by its external id
    try:
        for (external_id,) in conn.execute("SELECT external_id FROM jobs WHERE length(external_id) >= 3"):
            phrase = '"' + external_id.replace('"', '""') + '"'
            assert conn.execute("SELECT count(*) FROM jobs_search WHERE jobs_search MATCH ?", (phrase,)).fetchone()[0]
    finally:
        conn.close()


def test_a_target_that_holds_data_is_refused_with_nothing_written(cli, env, filled, pg_url, tmp_path):
    from synctool import store

    assert cli("store", "copy", "--to", pg_url).exit_code == 0
    conn = store.connect(pg_url)
    conn.execute("DELETE FROM settings WHERE key = (SELECT min(key) FROM settings)")
    settings = conn.execute("SELECT count(*) FROM settings").fetchone()[0]
    conn.close()

    again = cli("store", "copy", "--to", pg_url)
    assert again.exit_code == 2
    assert "already holds synctool data" in again.stderr and "nothing was written" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    conn = store.connect(pg_url)
    assert conn.execute("SELECT count(*) FROM settings").fetchone()[0] == settings
    conn.close()

    existing = tmp_path / "there.db"
    existing.write_bytes(b"mine")
    refused = cli("store", "copy", "--to", str(existing))
    assert refused.exit_code == 2 and "already exists" in refused.stderr and "--overwrite" in refused.stderr
    assert existing.read_bytes() == b"mine"
    replaced = cli("store", "copy", "--to", str(existing), "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert rows_of(existing) == rows_of(filled)
    assert arrival_of(existing) == arrival_of(filled)  # the jobs in the order they arrived (rowid)


def test_an_unreachable_url_is_one_line_and_exit_2(cli, tmp_path):
    result = cli("store", "copy", "--to", "postgresql://synctool@127.0.0.1:1/nowhere")
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "postgresql://synctool@127.0.0.1:1/nowhere" in result.stderr


def test_the_database_itself_is_not_a_target(cli, env):
    result = cli("store", "copy", "--to", env["SYNCTOOL_DB"], "--overwrite")
    assert result.exit_code == 2 and "the database this command runs on" in result.stderr


def test_a_difference_the_check_finds_exits_1_and_leaves_the_target(cli, filled, tmp_path, monkeypatch):
    from synctool.store import copy as copying

    # a table the copy leaves out, as a writer the copy did not see would: the check finds it
    monkeypatch.setattr(copying, "DERIVED", (*copying.DERIVED, "settings"))
    result = cli("store", "copy", "--to", str(tmp_path / "copy.db"))
    assert result.exit_code == 1
    assert "the copy differs from the source (settings: the target lacks the row key=" in result.stderr
    assert str(tmp_path / "copy.db") in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert (tmp_path / "copy.db").exists()


def test_a_host_goes_to_a_schema_an_organisation_and_back_to_its_folders(cli, env, filled, pg_url, tmp_path):
    from synctool import store

    env["SYNCTOOL_HOME"] = str(tmp_path / "host")
    config = tmp_path / "old-config.yaml"
    config.write_text("{}\n")
    assert cli("orgs", "import", "old-site", "--config", str(config), "--database", str(filled)).exit_code == 0
    env.pop("SYNCTOOL_CONFIG"), env.pop("SYNCTOOL_DB")
    assert cli("orgs", "add", "river-bank", "--platforms", "givebutter").exit_code == 0
    assert cli("users", "add", "operator@example.org", "--host-admin").exit_code == 0
    home = tmp_path / "host"
    databases = {
        "org_old_site": home / "orgs" / "old-site" / "synctool.db",
        "org_river_bank": home / "orgs" / "river-bank" / "synctool.db",
        "host": home / "host" / "synctool.db",
    }

    result = cli("store", "copy", "--to", pg_url)
    assert result.exit_code == 0, result.output
    assert "== old-site ==" in result.stdout and "== (host) ==" in result.stdout
    for schema, path in databases.items():  # each its own schema, seeing its own rows alone
        conn = store.connect(pg_url, schema=schema)
        try:
            users = sorted(r[0] for r in conn.execute("SELECT email FROM users"))
            assert users == sorted(row[1][1] for row in rows_of(path)["users"])  # (id, email, ...)
            jobs = conn.execute("SELECT count(*) FROM jobs").fetchone()[0]
            assert jobs == (len(rows_of(filled)["jobs"]) if schema == "org_old_site" else 0)
        finally:
            conn.close()

    again = cli("store", "copy", "--to", pg_url)
    assert again.exit_code == 2 and "(schema org_old_site) already holds synctool data" in again.stderr
    one = cli("--org", "river-bank", "store", "copy", "--to", pg_url)  # an organisation's own: its schema
    assert one.exit_code == 2 and "(schema org_river_bank) already holds synctool data" in one.stderr

    folder = tmp_path / "copied"
    back = cli("store", "copy", "--to", str(folder))
    assert back.exit_code == 0, back.output
    for path in databases.values():
        assert rows_of(folder / path.relative_to(home)) == rows_of(path)


def test_a_job_that_changed_status_copies_with_its_counters_the_same(cli, env, filled, tmp_path):
    """The source's counter of a status its jobs left stays at 0; the target counts from the jobs' statuses as they
    are now and holds no such row: a count of 0 is no difference."""
    conn = sqlite3.connect(filled)
    try:
        job = conn.execute("SELECT id, status FROM jobs LIMIT 1").fetchone()
        conn.execute("UPDATE jobs SET status = ? WHERE id = ?", ("failed" if job[1] != "failed" else "queued", job[0]))
        conn.commit()
        assert conn.execute("SELECT count(*) FROM job_counts WHERE n = 0").fetchone()[0] >= 1
    finally:
        conn.close()
    copied = cli("store", "copy", "--to", str(tmp_path / "copy.db"))
    assert copied.exit_code == 0, copied.output
    assert "differ" not in copied.stdout
