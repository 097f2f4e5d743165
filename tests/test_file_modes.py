"""Invariant 10: the files synctool creates (the database and its -wal and -shm, backups, the config `init` writes,
log files) are its user's alone (0600), and the folders it makes for them 0700, under the usual umask 022 too;
doctor fails on a database others may read."""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from synctool import store


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


def test_connect_leaves_an_existing_databases_mode_as_it_is(tmp_path):
    path = tmp_path / "synctool.db"
    store.connect(path).close()
    path.chmod(0o640)
    store.connect(path).close()
    assert mode(path) == 0o640  # told by doctor, never changed behind the operator's back


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


def test_doctor_fails_on_a_database_others_can_read(cli, env):
    db = Path(env["SYNCTOOL_DB"])
    db.chmod(0o600)
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert checks["database file modes"]["status"] == "ok"

    db.chmod(0o644)
    result = cli("doctor", "--json")
    assert result.exit_code == 1
    found = {c["check"]: c for c in json.loads(result.stdout)}["database file modes"]
    assert found["status"] == "fail"
    assert "synctool.db is 0644" in found["detail"] and "others may read it" in found["detail"]
    assert found["fix"].startswith(f"chmod 600 {db}")  # and its -wal and -shm, when they were made 0644 too
