"""``database: postgresql://USER@HOST[:PORT]/DB`` (or ``SYNCTOOL_DB``): what is refused, in one line and exit 2 with
nothing written, and what ``doctor`` says of the engine on both engines."""

from __future__ import annotations

from pathlib import Path

import pytest

from synctool.store import postgres


def one_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


@pytest.mark.no_database
@pytest.mark.parametrize(
    "url, said",
    [
        ("mysql://synctool@db.example.org/synctool", "mysql scheme"),
        ("postgresql://synctool@db.example.org/", "no database name"),
        ("postgresql://synctool@/synctool", "no host"),
        ("postgresql://synctool:hunter2@db.example.org/synctool", "a password does not belong in the URL"),
    ],
)
def test_a_wrong_url_is_refused_in_one_line(cli, env, isolated: Path, url: str, said: str) -> None:
    env["SYNCTOOL_DB"] = url
    result = cli("doctor")
    assert result.exit_code == 2
    line = one_line(result)
    assert said in line and line.startswith("Error: SYNCTOOL_DB (environment): ") and "hunter2" not in result.output
    assert not (isolated / "synctool.db").exists() and list(isolated.iterdir()) == [isolated / "config.yaml"]


@pytest.mark.no_database
def test_a_password_in_the_config_file_is_refused(cli, env, isolated: Path) -> None:
    (isolated / "config.yaml").write_text("database: postgresql://synctool:hunter2@db.example.org/synctool\n")
    del env["SYNCTOOL_DB"]
    result = cli("doctor")
    assert result.exit_code == 2 and "hunter2" not in result.output
    assert one_line(result).startswith(f"Error: database ({isolated / 'config.yaml'}): a password does not belong in the URL")


@pytest.mark.no_database
def test_postgresql_opens_without_any_other_setting(cli, env, pg_url: str) -> None:
    env["SYNCTOOL_DB"] = pg_url
    result = cli("overview", "--json")
    assert result.exit_code == 0, result.output


@pytest.mark.no_database
def test_an_unreachable_server_is_one_line(cli, env, isolated: Path) -> None:
    from tests import pg

    pg.required()
    env["SYNCTOOL_DB"] = f"postgresql://synctool@127.0.0.1:{pg.free_port()}/synctool"
    result = cli("doctor")
    assert result.exit_code == 2
    assert "cannot connect" in one_line(result)
    assert list(isolated.iterdir()) == [isolated / "config.yaml"]


@pytest.mark.no_database
def test_a_database_that_is_not_there_is_one_line(cli, env, pg_url: str) -> None:
    env["SYNCTOOL_DB"] = pg_url.rsplit("/", 1)[0] + "/no_such_database"
    result = cli("doctor")
    assert result.exit_code == 2
    assert 'database "no_such_database" does not exist' in one_line(result)


@pytest.mark.no_database
def test_a_newer_schema_is_refused_on_postgresql_nothing_written(cli, env, pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as raw:
        raw.execute("INSERT INTO schema_migrations VALUES ('synctool', 'm999_from_the_future', '2030-01-01T00:00:00Z')")
        before = raw.execute("SELECT count(*) FROM store_meta").fetchone()
    env["SYNCTOOL_DB"] = pg_url
    result = cli("doctor")
    assert result.exit_code == 2
    assert "was migrated by a newer synctool" in one_line(result) and "m999_from_the_future" in result.output
    with psycopg.connect(pg_url) as raw:
        assert raw.execute("SELECT count(*) FROM store_meta").fetchone() == before


@pytest.mark.no_database
def test_an_older_server_is_refused(cli, env, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # faked: the version the connection reports (no PostgreSQL 13 here to start)
    monkeypatch.setattr(postgres, "server_version", lambda raw: 130011)
    env["SYNCTOOL_DB"] = pg_url
    result = cli("doctor")
    assert result.exit_code == 2
    assert "PostgreSQL 13.11 is too old: synctool needs 14 or newer" in one_line(result)


@pytest.mark.no_database
def test_doctor_says_the_engine_its_version_pool_and_schema_on_postgresql(cli, env, pg_url: str) -> None:
    from synctool import store
    from synctool.store import schema_postgres

    env["SYNCTOOL_DB"] = pg_url
    env["DATABASE_PASSWORD"] = "unused"  # trust on the test server: a password given is sent and not needed
    result = cli("doctor")
    engine = next(line for line in result.output.splitlines() if "database engine" in line)
    assert "PostgreSQL 1" in engine and postgres.shown(pg_url) in engine and "pool" in engine
    conn = store.connect(pg_url, migrate=False)
    try:  # the baseline's, then every later migration's: what the database records
        recorded = schema_postgres.applied(conn)
    finally:
        conn.close()
    assert schema_postgres.pending(recorded) == [] and f"schema {schema_postgres.schema_version(recorded)}" in engine


@pytest.mark.sqlite_only(reason="doctor on SQLite's file")
def test_doctor_says_the_engine_on_sqlite(cli, env) -> None:
    import sqlite3

    from synctool import store

    result = cli("doctor")
    engine = next(line for line in result.output.splitlines() if "database engine" in line)
    assert f"SQLite {sqlite3.sqlite_version}" in engine and env["SYNCTOOL_DB"] in engine
    assert f"schema {store.fingerprint()}" in engine


@pytest.mark.no_database
def test_the_password_comes_from_the_keyring_or_environment_and_is_never_shown(
    cli, env, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    given: list[str] = []
    connect = psycopg.connect

    def spy(conninfo: str, **kwargs):
        given.append(conninfo)
        return connect(conninfo, **kwargs)

    monkeypatch.setattr(psycopg, "connect", spy)
    env["SYNCTOOL_DB"] = pg_url
    env["DATABASE_PASSWORD"] = "s3cret-pw"  # the keyring is off in the tests: its environment fallback
    result = cli("doctor")
    assert result.exit_code in (0, 1) and "database engine" in result.output
    assert given and all("password=s3cret-pw" in conninfo for conninfo in given)
    assert "s3cret-pw" not in result.output
