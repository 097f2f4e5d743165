"""Configuration errors name the key and where it was read (exit 2); the store's settings and migrations."""

from __future__ import annotations

import os

import pytest

from synctool import store
from synctool.config import load_config
from synctool.errors import ConfigError


def test_defaults_when_no_file(tmp_path, monkeypatch):
    monkeypatch.delenv("SYNCTOOL_CONFIG")
    monkeypatch.setenv("HOME", str(tmp_path))
    import synctool.config as cfg

    monkeypatch.setattr(cfg, "DEFAULT_CONFIG", tmp_path / "missing.yaml")
    config = load_config()
    assert config.crm.rate_limit_requests == 300 and config.source == "defaults"


@pytest.mark.parametrize("text,key,problem", [
    ("crm:\n  rate_limit_requests: lots\n", "crm.rate_limit_requests", "expected an integer"),
    ("crm:\n  environment: staging\n", "crm.environment", "must be one of production, sandbox"),
    ("recever: {}\n", "recever", "unknown key"),
    ("crm: [\n", "line", "not valid YAML"),
    ("- a\n- b\n", "(top level)", "mapping"),
])
def test_bad_config_names_key_and_file(tmp_path, cli, text, key, problem):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config()
    assert info.value.key.startswith(key) and problem in str(info.value) and str(path) in str(info.value)
    result = cli("deliveries", "list")
    assert result.exit_code == 2
    assert key in result.output and str(path) in result.output and "Traceback" not in result.output


def test_missing_named_config(cli, tmp_path):
    result = cli("--config", str(tmp_path / "nope.yaml"), "deliveries", "list")
    assert result.exit_code == 2 and "file not found" in result.output


def test_bad_environment_override(monkeypatch, cli):
    monkeypatch.setenv("CRM_RATE_LIMIT_REQUESTS", "many")
    result = cli("deliveries", "list")
    assert result.exit_code == 2 and "CRM_RATE_LIMIT_REQUESTS (environment)" in result.output
    monkeypatch.setenv("CRM_RATE_LIMIT_REQUESTS", "0")
    assert "CRM_RATE_LIMIT_REQUESTS" in cli("deliveries", "list").output


def test_env_overrides_base_urls(monkeypatch):
    monkeypatch.setenv("CRM_API_BASE_URL", "http://127.0.0.1:9/api/v1")
    monkeypatch.setenv("POS_API_BASE_URL", "http://127.0.0.1:9")
    config = load_config()
    assert config.crm.base_url == "http://127.0.0.1:9/api/v1" and config.pos.base_url == "http://127.0.0.1:9"


def test_store_settings_and_migrations(db):
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    names = store.applied_migrations(db)
    assert names == [name for name, _ in store.MIGRATIONS]
    assert store.apply_migrations(db) == []  # re-running is harmless


def test_init_is_repeatable(cli, tmp_path):
    (tmp_path / "config.yaml").unlink()
    first = cli("init")
    assert first.exit_code == 0 and "config_written  True" in first.output
    (tmp_path / "config.yaml").write_text((tmp_path / "config.yaml").read_text() + "\n# my edit\n")
    second = cli("init")
    assert second.exit_code == 0 and "config_written  False" in second.output
    assert "# my edit" in (tmp_path / "config.yaml").read_text()
    assert os.path.exists(os.environ["SYNCTOOL_DB"])


def test_money_is_exact():
    from decimal import Decimal

    from synctool.money import cents_to_dollars, dollars

    assert cents_to_dollars(1999) == Decimal("19.99") and str(cents_to_dollars(5)) == "0.05"
    assert dollars(0.1 + 0.2) == Decimal("0.30") and dollars("10") == Decimal("10.00") and dollars(10.61) == Decimal("10.61")


def test_times_are_utc_iso():
    from synctool import store

    stamp = store.iso()
    assert stamp.endswith("Z") and "T" in stamp and len(stamp) == 27
