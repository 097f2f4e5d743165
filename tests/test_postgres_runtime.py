"""The commands that made or copied SQLite's file, on PostgreSQL: ``init`` writes a config naming the URL and the
schema into an empty database; ``backup PATH`` writes a SQLite file of one moment of the database (0600), which
``store copy --to postgresql://...`` restores into an empty one, row for row."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def empty_url() -> Iterator[str]:
    """A PostgreSQL database with nothing in it, dropped after the test."""
    from tests import pg

    server = pg.server()
    url = server.url(f"empty_{__import__('uuid').uuid4().hex[:12]}")
    with server.admin() as conn:
        conn.execute(f"CREATE DATABASE \"{url.rsplit('/', 1)[1]}\" TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'")
    yield url
    server.drop_database(url)


@pytest.mark.no_database
def test_init_names_the_url_and_writes_the_schema(cli, env, isolated: Path, empty_url: str, pg_url: str) -> None:
    (isolated / "config.yaml").unlink()
    env["SYNCTOOL_DB"] = empty_url
    result = cli("init")
    assert result.exit_code == 0, result.output
    said = dict(line.split(None, 1) for line in result.stdout.splitlines() if len(line.split(None, 1)) == 2)
    assert said["database"] == empty_url and int(said["migrations"]) > 0 and said["sync_mode"] == "preview", said
    assert f"database: {empty_url}" in (isolated / "config.yaml").read_text()
    del env["SYNCTOOL_DB"]  # the config alone says where the database is now
    again = cli("init")
    assert again.exit_code == 0 and "preview" in again.stdout, again.output
    assert not list(isolated.glob("*.db"))


@pytest.mark.no_database
def test_backup_on_postgresql_is_a_sqlite_file_restored_by_store_copy(
    cli, env, tmp_path: Path, pg_url: str, empty_url: str
) -> None:
    env["SYNCTOOL_DB"] = pg_url
    assert cli("sync-mode", "live").exit_code == 0
    assert cli("users", "add", "staff@example.org", "--role", "admin").exit_code == 0
    backup = tmp_path / "backups" / "synctool.db"
    result = cli("backup", str(backup), "--json")
    assert result.exit_code == 0, result.output
    said = json.loads(result.stdout)
    assert said["integrity"] == "ok" and said["rows"]["users"] == 1
    assert backup.stat().st_mode & 0o777 == 0o600 and not list(backup.parent.glob("*.partial*"))
    with sqlite3.connect(backup) as conn:
        assert conn.execute("SELECT email FROM users").fetchall() == [("staff@example.org",)]
    assert cli("backup", str(backup)).exit_code == 2  # there already: refused, as on SQLite
    env["SYNCTOOL_DB"] = str(backup)
    restored = cli("store", "copy", "--to", empty_url, "--json")
    assert restored.exit_code == 0, restored.output
    env["SYNCTOOL_DB"] = empty_url
    users = cli("users", "list", "--json")
    assert users.exit_code == 0 and [u["email"] for u in json.loads(users.stdout)] == ["staff@example.org"]
