"""A host whose config names a PostgreSQL database keeps each organisation in a schema of its own (``org_NAME``) and
its own operators in ``host``: the commands through the CLI runner, the schemas read with psycopg, and an attacker's
look from one organisation's connection at another's rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synctool import store
from synctool.errors import ConfigError


@pytest.fixture
def pg_host(env: dict[str, str], tmp_path: Path, pg_url: str) -> str:
    """A host data folder whose config (``host/config.yaml``) names the test's PostgreSQL database; the single
    install's SYNCTOOL_CONFIG/SYNCTOOL_DB are not set. The database's URL."""
    home = tmp_path / "pghost"
    (home / "host").mkdir(parents=True)
    (home / "host" / "config.yaml").write_text(f"database: {pg_url}\n")
    env["SYNCTOOL_HOME"] = str(home)
    env.pop("SYNCTOOL_CONFIG")
    env.pop("SYNCTOOL_DB")
    return pg_url


def ok(result) -> str:
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    return result.stdout


def rows(url: str, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as raw:
        cursor = raw.execute(sql)
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []


def test_each_organisation_is_a_schema_and_its_commands_use_it(cli, env, pg_host: str) -> None:
    ok(cli("orgs", "add", "riverside", "--platforms", "givebutter"))
    ok(cli("orgs", "add", "hill-side", "--platforms", "givebutter"))
    schemas = {r[0] for r in rows(pg_host, "SELECT schema_name FROM information_schema.schemata")}
    assert {"org_riverside", "org_hill_side"} <= schemas
    # an organisation's folder keeps its config; its data is in its schema, no SQLite file
    assert not (Path(env["SYNCTOOL_HOME"]) / "orgs" / "riverside" / "synctool.db").exists()
    ok(cli("--org", "riverside", "sync-mode", "live"))
    assert rows(pg_host, "SELECT value FROM org_riverside.settings WHERE key = 'sync_mode'") == [('"live"',)]
    assert rows(pg_host, "SELECT value FROM org_hill_side.settings WHERE key = 'sync_mode'") == [('"preview"',)]
    shown = json.loads(ok(cli("orgs", "show", "riverside", "--json")))
    assert shown["database"].endswith("(schema org_riverside)") and "error" not in shown
    listed = json.loads(ok(cli("orgs", "list", "--json")))
    assert [row["name"] for row in listed] == ["hill-side", "riverside"] and all("error" not in r for r in listed)


def test_the_host_cron_and_host_operators_use_their_schemas(cli, pg_host: str, tmp_path: Path) -> None:
    import sqlite3

    ok(cli("orgs", "add", "riverside", "--platforms", "givebutter"))
    ok(cli("orgs", "add", "hillside", "--platforms", "givebutter"))
    ok(cli("--org", "riverside", "sync-mode", "live"))
    drained = cli("drain", "--max-seconds", "1")
    assert drained.exit_code == 0, drained.output
    backed = ok(cli("backup", str(tmp_path / "backups" / "b.db")))
    assert "== hillside ==" in backed and "== riverside ==" in backed
    for name, mode in (("riverside", '"live"'), ("hillside", '"preview"')):
        copy = tmp_path / "backups" / f"b.{name}.db"
        assert copy.stat().st_mode & 0o777 == 0o600
        with sqlite3.connect(copy) as conn:
            assert conn.execute("SELECT value FROM settings WHERE key = 'sync_mode'").fetchall() == [(mode,)]
    ok(cli("users", "add", "ops@example.org", "--host-admin"))
    assert rows(pg_host, "SELECT email FROM host.users") == [("ops@example.org",)]
    assert rows(pg_host, "SELECT count(*) FROM org_riverside.users") == [(0,)]


def test_remove_erase_drops_the_schema(cli, pg_host: str) -> None:
    ok(cli("orgs", "add", "riverside", "--platforms", "givebutter"))
    ok(cli("orgs", "add", "hillside", "--platforms", "givebutter"))
    removed = ok(cli("orgs", "remove", "riverside", "--erase", "--yes"))
    assert "schema org_riverside (dropped, with every row in it)" in removed
    schemas = {r[0] for r in rows(pg_host, "SELECT schema_name FROM information_schema.schemata")}
    assert "org_riverside" not in schemas and "org_hillside" in schemas
    assert cli("--org", "riverside", "overview").exit_code == 2


def test_one_organisations_connection_cannot_read_anothers_rows(cli, pg_host: str) -> None:
    ok(cli("orgs", "add", "alpha", "--platforms", "givebutter"))
    ok(cli("orgs", "add", "beta", "--platforms", "givebutter"))
    ok(cli("--org", "beta", "users", "add", "secret@beta.example"))
    rows(pg_host, "INSERT INTO public.users (email, role, invited_at, updated_at) VALUES ('public@x.example', 'admin', 'x', 'x')")
    alpha = store.connect(pg_host, schema="org_alpha", migrate=False)
    try:
        assert alpha.execute("SELECT email FROM users").fetchall() == []
        assert alpha.execute("SELECT current_schemas(false)").fetchone()[0] == ["org_alpha"]
        # a table missing from alpha's schema is an error, never another schema's table of that name
        alpha.execute("DROP TABLE users CASCADE")
        with pytest.raises(store.Error, match="users"):
            alpha.execute("SELECT email FROM users")
    finally:
        alpha.close()


@pytest.mark.parametrize("name", ['org_a"; DROP SCHEMA org_b CASCADE; --', "Org_A", "..", "org-a", "", "a" * 64])
def test_a_schema_that_is_not_one_synctool_makes_is_refused_before_any_sql(
    pg_url: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    def no_sql(*args, **kwargs):
        raise AssertionError("connected")

    monkeypatch.setattr(psycopg, "connect", no_sql)
    with pytest.raises(ConfigError, match="is not a schema name synctool makes"):
        store.connect(pg_url, schema=name)


@pytest.mark.parametrize("name", ["..", "Acme", "a_b", "a'b"])
def test_an_organisation_name_that_is_no_schema_is_refused(cli, pg_host: str, name: str) -> None:
    result = cli("orgs", "add", "--", name)
    assert result.exit_code == 2 and "is not an organisation name" in result.stderr
    assert not [r for r in rows(pg_host, "SELECT schema_name FROM information_schema.schemata") if r[0].startswith("org_")]


def test_an_organisations_children_keep_the_hosts_url_and_another_is_refused(cli, env, pg_host: str) -> None:
    ok(cli("orgs", "add", "riverside", "--platforms", "givebutter"))
    env["SYNCTOOL_DB"] = pg_host  # as `drain --watch` hands its children the Runtime's environment
    ok(cli("--org", "riverside", "overview"))
    env["SYNCTOOL_DB"] = pg_host.rsplit("/", 1)[0] + "/elsewhere"
    result = cli("--org", "riverside", "overview")
    assert result.exit_code == 2 and "disagree" in result.stderr


def test_import_copies_a_single_install_into_its_schema(cli, env, pg_host: str, tmp_path: Path) -> None:
    from tests.conftest import migrated_database

    source = tmp_path / "single.db"
    source.write_bytes(migrated_database(tmp_path.parent))
    import sqlite3

    with sqlite3.connect(source) as live:
        live.execute("INSERT INTO settings (key, value, updated_at) VALUES ('imported', '\"yes\"', '2026-01-01T00:00:00Z')")
    config = tmp_path / "single.yaml"
    config.write_text("platforms: [givebutter]\n")
    result = cli("orgs", "import", "acme", "--config", str(config), "--database", str(source))
    assert result.exit_code == 0, result.output
    assert rows(pg_host, "SELECT value FROM org_acme.settings WHERE key = 'imported'") == [('"yes"',)]
    assert f"database: {pg_host}" in (Path(env["SYNCTOOL_HOME"]) / "orgs" / "acme" / "config.yaml").read_text()
    ok(cli("--org", "acme", "jobs", "list"))


def test_store_copy_takes_a_postgresql_host_back_to_folders(cli, pg_host: str, tmp_path: Path) -> None:
    import sqlite3

    ok(cli("orgs", "add", "riverside", "--platforms", "givebutter"))
    ok(cli("--org", "riverside", "sync-mode", "live"))
    ok(cli("users", "add", "ops@example.org", "--host-admin"))
    copied = cli("store", "copy", "--to", str(tmp_path / "back"), "--json")
    assert copied.exit_code == 0, copied.output
    with sqlite3.connect(tmp_path / "back" / "orgs" / "riverside" / "synctool.db") as conn:
        assert conn.execute("SELECT value FROM settings WHERE key = 'sync_mode'").fetchall() == [('"live"',)]
    with sqlite3.connect(tmp_path / "back" / "host" / "synctool.db") as conn:
        assert conn.execute("SELECT email FROM users").fetchall() == [("ops@example.org",)]


def test_the_host_receiver_stores_each_delivery_in_its_organisations_schema(cli, env, pg_host: str) -> None:
    from starlette.testclient import TestClient

    from synctool.fakes import samples
    from synctool.web import host as host_app

    for name in ("alpha", "beta"):
        ok(cli("orgs", "add", name, "--platforms", "givebutter"))
        secrets = Path(env["SYNCTOOL_HOME"]) / "orgs" / name / "secrets.env"
        secrets.write_text(f"DONATIONS_WEBHOOK_SECRET={name}-donations-secret-0123456789\n")
        secrets.chmod(0o600)
    body = samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION, event_id="ev-pg-1")
    with TestClient(host_app.Host(env)) as client:
        sent = client.post(
            "/o/alpha/webhooks/donations", content=body, headers={"Signature": "alpha-donations-secret-0123456789"}
        )
        assert sent.status_code == 200, sent.text
        forged = client.post(
            "/o/beta/webhooks/donations", content=body, headers={"Signature": "alpha-donations-secret-0123456789"}
        )
        assert forged.status_code == 401
    assert rows(pg_host, "SELECT count(*) FROM org_alpha.deliveries") == [(1,)]
    assert rows(pg_host, "SELECT count(*) FROM org_beta.deliveries") == [(0,)]
    assert rows(pg_host, "SELECT count(*) FROM public.deliveries") == [(0,)]


def test_an_organisations_pacer_keeps_its_ledger_in_its_schema(cli, env, pg_host: str) -> None:
    from synctool.crm.environment import pacer
    from synctool.runtime import Runtime

    ok(cli("orgs", "add", "riverside", "--platforms", "givebutter"))
    rt = Runtime.from_environ(environ=env, org="riverside")
    assert rt.schema == "org_riverside"
    conn = pacer(rt)._conn()  # the connection its reservations are made on
    try:
        assert conn.execute("SELECT current_schemas(false)").fetchone()[0] == ["org_riverside"]
    finally:
        conn.close()


def test_a_host_moves_to_postgresql_with_store_copy_and_one_line(cli, env, tmp_path: Path, pg_url: str) -> None:
    """A SQLite host copied into the database's schemas, then its config names the database: each organisation runs
    from its schema (its config's database key, its old file, is left as it was)."""
    home = tmp_path / "movinghost"
    env["SYNCTOOL_HOME"] = str(home)
    env.pop("SYNCTOOL_CONFIG")
    env.pop("SYNCTOOL_DB")
    ok(cli("orgs", "add", "riverside", "--platforms", "givebutter"))
    ok(cli("--org", "riverside", "sync-mode", "live"))
    ok(cli("users", "add", "ops@example.org", "--host-admin"))
    ok(cli("store", "copy", "--to", pg_url))
    (home / "host" / "config.yaml").write_text(f"database: {pg_url}\n")
    (home / "orgs" / "riverside" / "synctool.db").unlink()  # nothing reads it any more
    assert "live" in ok(cli("--org", "riverside", "sync-mode"))
    assert "ops@example.org" in ok(cli("users", "list", "--host-admin"))


def test_a_schema_there_already_is_never_taken_over(cli, env, pg_host: str) -> None:
    rows(pg_host, "CREATE SCHEMA org_riverside; CREATE TABLE org_riverside.kept (id INTEGER)")
    result = cli("orgs", "add", "riverside", "--platforms", "givebutter")
    assert result.exit_code == 2 and "schema org_riverside is there already" in result.stderr, result.output
    assert not (Path(env["SYNCTOOL_HOME"]) / "orgs" / "riverside").exists()
    assert rows(pg_host, "SELECT count(*) FROM org_riverside.kept") == [(0,)]
