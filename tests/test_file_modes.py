"""Invariant 10: the files synctool creates (the database and its -wal and -shm, backups, the config `init` writes,
log files) are its user's alone (0600), and the folders it makes for them 0700, under the usual umask 022 too;
a database an older release left 0644 is made 0600 by the first command that opens it; doctor fails on one
others may read that synctool cannot change."""

from __future__ import annotations

import gzip
import json
import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from synctool import store

#: the modes of SQLite's files (PostgreSQL's data is the server's: its roles, not file modes)
pytestmark = pytest.mark.sqlite_only(reason="the modes of SQLite's files")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.fixture
def log_handlers() -> Iterator[None]:
    """The root logger's file handlers a test's --log-file added are closed after it."""
    yield
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, logging.FileHandler)]:
        root.removeHandler(handler)
        handler.close()


@pytest.mark.no_database
def test_init_writes_the_config_and_the_database_for_its_user_alone(cli, env, tmp_path):
    config, db = tmp_path / "etc" / "synctool" / "config.yaml", tmp_path / "data" / "synctool" / "synctool.db"
    env.update(SYNCTOOL_CONFIG=str(config), SYNCTOOL_DB=str(db))
    result = cli("init")
    assert result.exit_code == 0, result.output
    assert mode(config) == 0o600 and mode(db) == 0o600
    for folder in (config.parent, config.parent.parent, db.parent, db.parent.parent):
        assert mode(folder) == 0o700, folder

    config.chmod(0o644)  # `init --force` rewrites the file: it is made 0600 again before it is written
    assert cli("init", "--force").exit_code == 0 and mode(config) == 0o600


def test_a_new_database_and_its_wal_and_shm_are_0600(tmp_path):
    path = tmp_path / "new" / "synctool.db"
    conn = store.connect(path)
    try:
        with store.atomic(conn):  # SQLite makes -wal and -shm at the first write, with the main file's mode
            conn.execute("INSERT INTO settings (key, value, updated_at) VALUES ('x', '1', ?)", (store.iso(),))
        made = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert all(p.exists() for p in made)
        assert {p.name: mode(p) for p in made} == {p.name: 0o600 for p in made}
        assert mode(path.parent) == 0o700
    finally:
        conn.close()


def an_older_releases_database(path: Path) -> sqlite3.Connection:
    """tests/data/release-0.3.0-dev.db.gz written as an older synctool left it: 0644 (umask 022), with its -wal and
    -shm made 0644 beside it by a reader (SQLite gives them the main file's mode); that reader, kept open."""
    with gzip.open(Path(__file__).parent / "data" / "release-0.3.0-dev.db.gz") as src:
        path.write_bytes(src.read())
    path.chmod(0o644)
    reader = sqlite3.connect(path)
    reader.execute("PRAGMA journal_mode = WAL")
    reader.execute("SELECT count(*) FROM jobs").fetchone()
    return reader


def test_a_database_an_older_release_left_0644_is_made_0600_by_the_first_command_said_once(cli, env, tmp_path):
    path = tmp_path / "old.db"
    reader = an_older_releases_database(path)
    try:
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert {p.name: mode(p) for p in files} == {p.name: 0o644 for p in files}
        env["SYNCTOOL_DB"] = str(path)
        first = cli("deliveries", "list")
        assert first.exit_code == 0, first.output
        assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
        said = [line for line in first.stderr.splitlines() if "made 0600" in line]
        assert len(said) == 1 and "old.db-wal 0644" in said[0] and "old.db 0644" in said[0], first.stderr
        again = cli("deliveries", "list")
        assert again.exit_code == 0 and "made 0600" not in again.stderr  # said once: the file is private now
        doctor = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}["database file modes"]
        assert doctor["status"] == "ok" and "old.db 0600" in doctor["detail"]
    finally:
        reader.close()


@pytest.mark.parametrize("opened_by", ["drain", "serve"])
def test_drain_and_serve_make_it_0600_too(cli, env, opened_by):
    from synctool.web.receiver import build
    from tests.helpers import runtime

    path = Path(env["SYNCTOOL_DB"])
    path.chmod(0o644)
    if opened_by == "drain":
        assert cli("drain", "--max-seconds", "1").exit_code == 0
    else:
        build(runtime())  # what `synctool serve` runs, before it listens
    assert mode(path) == 0o600


def test_backup_is_0600_in_a_folder_made_0700(cli, tmp_path):
    target = tmp_path / "backups" / "nightly" / "synctool.db"
    result = cli("backup", str(target))
    assert result.exit_code == 0, result.output
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700 and mode(target.parent.parent) == 0o700

    target.chmod(0o644)  # a backup written over an older one: that file holds the new copy, so it is made 0600
    assert cli("backup", str(target), "--overwrite").exit_code == 0
    assert mode(target) == 0o600


def test_a_log_file_is_0600_and_so_is_the_one_reopened_after_rotation(cli, tmp_path, log_handlers):
    log = tmp_path / "log" / "synctool.log"
    result = cli("--log-file", str(log), "deliveries", "list")
    assert result.exit_code == 0, result.output
    assert mode(log) == 0o600 and mode(log.parent) == 0o700

    log.rename(tmp_path / "log" / "synctool.log.1")  # logrotate moves it away; the handler makes a new one
    logging.getLogger("synctool").warning("after rotation")
    assert "after rotation" in log.read_text() and mode(log) == 0o600


def test_doctor_fails_on_a_database_others_can_read_that_synctool_cannot_change(cli, env, monkeypatch):
    db = Path(env["SYNCTOOL_DB"])
    db.chmod(0o600)
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert checks["database file modes"]["status"] == "ok"

    def not_ours(path: object, mode: int) -> None:  # a file another user owns: chmod is refused
        raise PermissionError(1, "Operation not permitted")

    db.chmod(0o644)
    monkeypatch.setattr(os, "chmod", not_ours)
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    found = {c["check"]: c for c in json.loads(result.stdout)}["database file modes"]
    assert found["status"] == "fail"
    assert "synctool.db is 0644" in found["detail"] and "others may read it" in found["detail"]
    assert found["fix"].startswith(f"chmod 600 {db}")  # and its -wal and -shm, when they were made 0644 too
    assert "as the user that owns them" in found["fix"]
