"""Configuration errors name the key and where it was read (exit 2); the store's settings and migrations."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from synctool import mappings, settings, store
from synctool.errors import ConfigError
from tests.conftest import ON_POSTGRES
from tests.helpers import runtime


def test_defaults_when_no_file(tmp_path, monkeypatch, env):
    env.pop("SYNCTOOL_CONFIG", None)
    env["HOME"] = str(tmp_path)
    import synctool.config as cfg

    monkeypatch.setattr(cfg, "DEFAULT_CONFIG", tmp_path / "missing.yaml")
    config = runtime().config
    assert config.crm.rate_limit_requests == 300 and config.source == "defaults"


@pytest.mark.parametrize(
    "text,key,problem",
    [
        ("crm:\n  rate_limit_requests: lots\n", "crm.rate_limit_requests", "expected an integer"),
        ("crm:\n  environment: staging\n", "crm.environment", "must be one of production, sandbox"),
        ("recever: {}\n", "recever", "unknown key"),
        ("crm: [\n", "line", "not valid YAML"),
        ("- a\n- b\n", "(top level)", "mapping"),
    ],
)
def test_bad_config_names_key_and_file(tmp_path, cli, text, key, problem):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        runtime()
    assert info.value.key.startswith(key) and problem in str(info.value) and str(path) in str(info.value)
    result = cli("deliveries", "list")
    assert result.exit_code == 2
    assert key in result.output and str(path) in result.output and "Traceback" not in result.output


def test_missing_named_config(cli, tmp_path):
    result = cli("--config", str(tmp_path / "nope.yaml"), "deliveries", "list")
    assert result.exit_code == 2 and "file not found" in result.output


def test_bad_environment_override(env, cli):
    env["CRM_RATE_LIMIT_REQUESTS"] = "many"
    result = cli("deliveries", "list")
    assert result.exit_code == 2 and "CRM_RATE_LIMIT_REQUESTS (environment)" in result.output
    env["CRM_RATE_LIMIT_REQUESTS"] = "0"
    assert "CRM_RATE_LIMIT_REQUESTS" in cli("deliveries", "list").output


def test_env_overrides_base_urls(env):
    env["CRM_API_BASE_URL"] = "http://127.0.0.1:9/api/v1"
    env["POS_API_BASE_URL"] = "http://127.0.0.1:9"
    config = runtime().config
    assert config.crm.base_url == "http://127.0.0.1:9/api/v1" and config.section("pos").base_url == "http://127.0.0.1:9"


@pytest.mark.sqlite_only(reason="SQLite's PRAGMAs (WAL, synchronous, busy timeout, user_version) and sqlite-utils' migrations")
def test_store_settings_and_migrations(db):
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    names = store.applied_migrations(db)
    assert names == [fn.__name__ for functions in store.migration_sets().values() for fn in functions]
    assert "m001_portal" in names  # a platform's own set (Platform.migrations), after the core's
    assert store.apply_migrations(db) == []  # re-running is harmless
    assert db.execute("PRAGMA user_version").fetchone()[0] == store.fingerprint()


def test_a_database_from_the_previous_release_upgrades_in_place(tmp_path, cli, env):
    """tests/data/release-0.1.0.db.gz was written by the release before sqlite-utils (its _migrations
    table, three migrations applied, a delivery, a job, settings, a link, a mapping, a portal user)."""
    import gzip
    import shutil

    path = tmp_path / "old.db"
    with gzip.open(Path(__file__).parent / "data" / "release-0.1.0.db.gz") as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    conn = store.connect(path)
    # its core set names the portal's tables as m002_portal; the portal's own set finds them made
    expected = [fn.__name__ for functions in store.migration_sets().values() for fn in functions]
    assert store.applied_migrations(conn) == expected  # not its retired m002_portal
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_migrations'").fetchone()
    assert conn.execute("SELECT count(*) FROM crm_constituents").fetchone()[0] == 0  # a later table, now there
    [job] = conn.execute("SELECT * FROM jobs").fetchall()
    assert job["external_id"] == "donations_T1" and job["delivery_id"] == 1
    assert conn.execute("SELECT event_id FROM deliveries").fetchone()[0] == "evt-1"
    assert settings.get(conn, "crm_environment") == "sandbox"
    assert settings.cache_get(conn, "email_link", "ada@example.org") == {"constituent_id": "959480"}
    assert mappings.get(conn, "type_default", "donations:default") == {"fund_id": 2398}
    assert conn.execute("SELECT email FROM portal_users WHERE id = 'u1'").fetchone()[0] == "u1@example.org"
    conn.close()
    # and the upgraded file is an ordinary synctool database for every command
    env["SYNCTOOL_DB"] = str(path)
    listed = json.loads(cli("syncs", "list", "--json").stdout)
    assert [r["external_id"] for r in listed["items"]] == ["donations_T1"]


def test_two_processes_migrating_at_once_take_turns(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "race.db"
    code = "import sys; from synctool import store; store.connect(sys.argv[1]).close()"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)]) for _ in range(3)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    conn = store.connect(path, migrate=False)
    assert store.applied_migrations(conn) == [fn.__name__ for fn in store.MIGRATIONS]  # no registry: the core's set


def test_init_is_repeatable(cli, tmp_path, env):
    (tmp_path / "config.yaml").unlink()
    first = cli("init")
    assert first.exit_code == 0 and "config_written  True" in first.output
    (tmp_path / "config.yaml").write_text((tmp_path / "config.yaml").read_text() + "\n# my edit\n")
    second = cli("init")
    assert second.exit_code == 0 and "config_written  False" in second.output
    assert "# my edit" in (tmp_path / "config.yaml").read_text()
    assert ON_POSTGRES or os.path.exists(env["SYNCTOOL_DB"])  # SQLite's file (PostgreSQL's database is the test's)
    conn = store.connect(env["SYNCTOOL_DB"], migrate=False)
    try:
        assert store.applied_migrations(conn)  # the database holds the schema init wrote
    finally:
        conn.close()


def test_money_is_exact():
    from decimal import Decimal

    from synctool.money import cents_to_dollars, dollars

    assert cents_to_dollars(1999) == Decimal("19.99") and str(cents_to_dollars(5)) == "0.05"
    assert dollars(0.1 + 0.2) == Decimal("0.30") and dollars("10") == Decimal("10.00") and dollars(10.61) == Decimal("10.61")


def test_times_are_utc_iso():
    from synctool import store

    stamp = store.iso()
    assert stamp.endswith("Z") and "T" in stamp and len(stamp) == 27
