"""Many organisations on one install: `synctool orgs ...` and `synctool --org NAME COMMAND`, each organisation's
config, database and secrets its own (real files under tmp, the commands through the CLI runner)."""

from __future__ import annotations

import gzip
import json
import sqlite3
import stat
from pathlib import Path

import pytest

from synctool import store
from synctool.fakes import samples
from synctool.fakes.crm import FakeCrm, create_app
from synctool.fakes.server import BackgroundServer
from tests.conftest import ON_POSTGRES

DATA = Path(__file__).parent / "data"


@pytest.fixture
def host(env: dict[str, str], tmp_path: Path) -> Path:
    """A host data folder under tmp; the single install's SYNCTOOL_CONFIG/SYNCTOOL_DB are not set (a host's cron
    names organisations, not files)."""
    env["SYNCTOOL_HOME"] = str(tmp_path / "host")
    env.pop("SYNCTOOL_CONFIG")
    env.pop("SYNCTOOL_DB")
    return tmp_path / "host"


def add(cli, name: str, *more: str) -> None:
    result = cli("orgs", "add", name, "--platforms", "givebutter", *more)
    assert result.exit_code == 0, result.output


def secrets_file(host: Path, name: str, **values: str) -> Path:
    path = host / "orgs" / name / "secrets.env"
    path.write_text("# this organisation's secrets\n" + "".join(f"{k}={v}\n" for k, v in values.items()))
    path.chmod(0o600)
    return path


def point_crm_at(host: Path, name: str, url: str) -> None:
    config = host / "orgs" / name / "config.yaml"
    text = config.read_text().replace("https://api.littlegreenlight.com/api/v1", url + "/api/v1")
    config.write_text(text)


def rows_of(path: Path) -> dict[str, list[tuple]]:
    """Every table's rows, sorted, keyed by table."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return {t: sorted(map(tuple, conn.execute(f'SELECT * FROM "{t}"')), key=repr) for t in tables}
    finally:
        conn.close()


def single_install_rows(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, list[tuple]]:
    """The single install's database (SQLite's file in the test's folder, or the test's PostgreSQL database), every
    table's rows, sorted, keyed by table."""
    if not ON_POSTGRES:
        return rows_of(tmp_path / "synctool.db")
    conn = store.connect(request.getfixturevalue("pg_url"), migrate=False)
    try:
        tables = store.dialect.table_names(conn)
        return {t: sorted(map(tuple, conn.execute(f'SELECT * FROM "{t}"')), key=repr) for t in tables}
    finally:
        conn.close()


def test_add_makes_a_private_folder_config_and_database(cli, host):
    add(cli, "riverside")
    folder = host / "orgs" / "riverside"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for name in ("config.yaml", "synctool.db"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name
    assert "platforms: [givebutter]" in (folder / "config.yaml").read_text()
    shown = json.loads(cli("orgs", "show", "riverside", "--json").stdout)
    assert shown["database"] == str(folder / "synctool.db") and shown["platforms"] == "givebutter"
    assert shown["due"] == 0 and shown["failed"] == 0 and shown["keyring_service"] == "synctool:riverside"
    assert "CRM_API_KEY" in shown["secrets_missing"] and str(folder / "secrets.env") in shown["secrets_missing"]["CRM_API_KEY"]
    again = cli("--org", "riverside", "init", "--platforms", "givebutter,square", "--currency", "CAD")  # init's, for it
    assert again.exit_code == 0 and f"database        {folder / 'synctool.db'}" in again.stdout, again.output
    assert "platforms: [givebutter, square]" in (folder / "config.yaml").read_text()
    assert json.loads(cli("orgs", "show", "riverside", "--json").stdout)["platforms"] == "givebutter, square"


@pytest.mark.parametrize("name", ["../b", "a/../b", "Acme", "-a", "9lives", "a_b", "a b", "", "a" * 41, "/tmp/x"])
def test_a_name_that_is_not_one_is_refused_in_words(cli, host, name):
    result = cli("orgs", "add", "--", name)
    assert result.exit_code == 2 and "is not an organisation name" in result.stderr and "Traceback" not in result.output
    assert "lowercase letters, digits and '-'" in result.stderr
    used = cli(f"--org={name}", "jobs", "list")
    assert used.exit_code == 2 and "is not an organisation name" in used.stderr
    assert not host.exists() or list((host / "orgs").iterdir()) == []


def test_a_duplicate_is_refused_and_the_first_is_kept(cli, host):
    add(cli, "acme")
    (host / "orgs" / "acme" / "config.yaml").write_text((host / "orgs" / "acme" / "config.yaml").read_text() + "# mine\n")
    again = cli("orgs", "add", "acme")
    assert again.exit_code == 2 and "exists already" in again.stderr
    assert (host / "orgs" / "acme" / "config.yaml").read_text().endswith("# mine\n")


def test_an_unknown_organisation_is_one_line_and_exit_2_and_nothing_is_made(cli, host, env):
    add(cli, "acme")
    for args in (("--org", "nope", "jobs", "list"), ("--org", "nope", "init"), ("--org", "nope", "platforms")):
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.count("\n") == 1 and "no organisation is named 'nope'" in result.stderr
    env["SYNCTOOL_ORG"] = "nope"
    assert cli("syncs", "list").exit_code == 2
    assert sorted(p.name for p in (host / "orgs").iterdir()) == ["acme"]


def test_every_command_runs_against_the_organisation_s_own_database(cli, host, env, tmp_path, request):
    add(cli, "acme")
    add(cli, "birch")
    single = single_install_rows(request, tmp_path)["jobs"]
    payload = tmp_path / "txn.json"
    payload.write_bytes(samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION, event_id="ev-1"))
    injected = cli("--org", "acme", "inject", str(payload), "--source", "donations", "--json")
    assert injected.exit_code == 0, injected.output
    job_id = json.loads(injected.stdout)["job_id"]

    def ids(*args: str) -> list[str]:
        return [row["id"] for row in json.loads(cli(*args, "syncs", "list", "--json").stdout)["items"]]

    assert ids("--org", "acme") == [job_id]
    assert ids("--org", "birch") == []
    env["SYNCTOOL_ORG"] = "acme"  # the environment's organisation, as cron would name it
    assert ids() == [job_id]
    assert cli("--org", "birch", "syncs", "show", job_id).exit_code == 3  # another's job is not found there
    del env["SYNCTOOL_ORG"]
    assert single_install_rows(request, tmp_path)["jobs"] == single  # the single install's database untouched

    listed = {row["name"]: row for row in json.loads(cli("orgs", "list", "--json").stdout)}
    assert listed["acme"]["due"] == 1 and listed["birch"]["due"] == 0


def test_org_with_a_config_or_database_elsewhere_is_refused(cli, host, env, tmp_path):
    add(cli, "acme")
    other = tmp_path / "config.yaml"
    result = cli("--org", "acme", "--config", str(other), "jobs", "list")
    assert result.exit_code == 2 and "disagree" in result.stderr and result.stderr.count("\n") == 1
    env["SYNCTOOL_DB"] = str(tmp_path / "synctool.db")
    result = cli("--org", "acme", "jobs", "list")
    assert result.exit_code == 2 and "SYNCTOOL_DB" in result.stderr
    env["SYNCTOOL_DB"] = str(host / "orgs" / "acme" / "synctool.db")  # naming its own is no disagreement
    assert cli("--org", "acme", "jobs", "list").exit_code == 0
    del env["SYNCTOOL_DB"]
    config = host / "orgs" / "acme" / "config.yaml"
    config.write_text(config.read_text().replace(f"database: {host}/orgs/acme/synctool.db", f"database: {tmp_path}/synctool.db"))
    result = cli("--org", "acme", "jobs", "list")
    assert result.exit_code == 2 and "an organisation's database is its folder's" in result.stderr


def test_without_org_nothing_changes(cli, host, env, tmp_path):
    """The single install's files are the environment's, as before, whatever organisations the host has."""
    add(cli, "acme")
    env["SYNCTOOL_CONFIG"] = str(tmp_path / "config.yaml")
    env["SYNCTOOL_DB"] = str(tmp_path / "synctool.db")
    shown = json.dumps(json.loads(cli("doctor", "--json").stdout)["(single install)"])  # a host's doctor: its part
    assert str(tmp_path / "synctool.db") in shown and "orgs" not in shown


def test_a_command_for_one_organisation_never_reads_another_s_secrets_config_or_database(cli, host, env):
    """The attacker's view: B's secrets.env open to everyone, its config broken, its database garbage, and B's key
    in the process environment. A's commands use A's files and A's key, call A's CRM alone, and work."""
    crm_a, crm_b = FakeCrm("key-a", limit=1000, window_s=1.0), FakeCrm("key-b", limit=1000, window_s=1.0)
    add(cli, "alpha")
    add(cli, "beta")
    with BackgroundServer(create_app(crm_a)) as server_a, BackgroundServer(create_app(crm_b)) as server_b:
        point_crm_at(host, "alpha", server_a.url)
        point_crm_at(host, "beta", server_b.url)
        secrets_file(host, "alpha", CRM_API_KEY="key-a")
        secrets_file(host, "beta", CRM_API_KEY="key-b")
        env["CRM_API_KEY"] = "key-b"  # the process environment names B's key: never an organisation's secret
        assert cli("--org", "alpha", "crm", "test-connection").exit_code == 0
        assert crm_a.requests and all(r["status"] != 401 for r in crm_a.requests) and crm_b.requests == []

        seen_a = len(crm_a.requests)
        assert cli("--org", "beta", "crm", "test-connection").exit_code == 0
        assert crm_b.requests and all(r["status"] != 401 for r in crm_b.requests) and len(crm_a.requests) == seen_a

        beta = host / "orgs" / "beta"
        (beta / "secrets.env").chmod(0o644)
        (beta / "config.yaml").write_text("crm: [not, a, mapping\n")
        (beta / "synctool.db").write_bytes(b"not a database" * 100)
        crm_b.requests.clear()
        result = cli("--org", "alpha", "crm", "test-connection")
        assert result.exit_code == 0, result.output
        assert cli("--org", "alpha", "jobs", "list").exit_code == 0
        assert crm_b.requests == []

        point_crm_at(host, "beta", server_b.url)
        (beta / "config.yaml").write_text("platforms: [givebutter]\n")
        refused = cli("--org", "beta", "jobs", "list")  # its own file, refused with the fix
        assert refused.exit_code == 2 and "chmod 600" in refused.stderr


def test_an_organisation_s_secrets_never_come_from_the_process_environment(cli, host, env):
    add(cli, "acme")
    env["CRM_API_KEY"] = "from-the-environment"
    doctor = json.loads(cli("--org", "acme", "doctor", "--json").stdout)
    row = next(r for r in doctor if r["check"] == "secret CRM_API_KEY")
    assert row["status"] == "fail" and str(host / "orgs" / "acme" / "secrets.env") in row["fix"]
    secrets_file(host, "acme", CRM_API_KEY="its-own")
    doctor = json.loads(cli("--org", "acme", "doctor", "--json").stdout)
    row = next(r for r in doctor if r["check"] == "secret CRM_API_KEY")
    assert row["status"] == "ok" and "secrets.env" in row["detail"]
    assert "its-own" not in json.dumps(doctor)


def test_list_shows_a_broken_organisation_s_error_and_the_others(cli, host):
    add(cli, "acme")
    add(cli, "birch")
    (host / "orgs" / "acme" / "synctool.db").unlink()
    result = cli("orgs", "list", "--json")
    assert result.exit_code == 1
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert "missing" in rows["acme"]["error"] and "error" not in rows["birch"] and rows["birch"]["platforms"] == "givebutter"
    assert cli("orgs", "list").exit_code == 1


def test_remove_needs_erase_asks_and_leaves_nothing(cli, host):
    add(cli, "acme")
    add(cli, "birch")
    secrets_file(host, "acme", CRM_API_KEY="k")
    folder = host / "orgs" / "acme"
    (folder / "backups").mkdir()
    (folder / "backups" / "synctool-1.db").write_bytes(b"x")
    assert cli("--org", "acme", "jobs", "list").exit_code == 0  # a -wal and -shm beside the database
    refused = cli("orgs", "remove", "acme")
    assert refused.exit_code == 2 and "--erase" in refused.stderr and folder.exists()
    kept = cli("orgs", "remove", "acme", "--erase", input="n\n")
    assert kept.exit_code == 1 and folder.exists()
    gone = cli("orgs", "remove", "acme", "--erase", "--yes")
    assert gone.exit_code == 0, gone.output
    assert not folder.exists() and (host / "orgs" / "birch" / "config.yaml").exists()
    for name in ("config.yaml", "synctool.db", "secrets.env", "backups/synctool-1.db"):
        assert f"file {name}" in gone.stdout
    assert "until they rotate" in gone.stdout
    assert "the keyring was not read" in gone.stdout  # SYNCTOOL_KEYRING=off here: its entries are the operator's to remove
    assert cli("--org", "acme", "jobs", "list").exit_code == 2
    assert [r["name"] for r in json.loads(cli("orgs", "list", "--json").stdout)] == ["birch"]


@pytest.mark.sqlite_only(reason="a single install's SQLite file, its commits still in its WAL, imported into the host")
def test_import_keeps_every_row_of_a_live_database(cli, host, tmp_path):
    """The single install's database, with commits still in its WAL (a writer holds it open), copied whole."""
    source = tmp_path / "synctool.db"
    payload = tmp_path / "txn.json"
    payload.write_bytes(samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION, event_id="ev-9"))
    live = sqlite3.connect(source)
    live.execute("PRAGMA wal_autocheckpoint = 0")
    live.execute("INSERT INTO settings (key, value, updated_at) VALUES ('imported', '\"yes\"', '2026-01-01T00:00:00Z')")
    live.commit()
    assert Path(f"{source}-wal").stat().st_size > 0
    config = tmp_path / "config.yaml"
    config.write_text("platforms: [givebutter]\norganisation:\n  currency: CAD\n")
    result = cli("orgs", "import", "acme", "--config", str(config), "--database", str(source))
    assert result.exit_code == 0, result.output
    assert "CRM_API_KEY" in result.stdout and "DONATIONS_WEBHOOK_SECRET" in result.stdout and "secrets.env" in result.stdout
    imported = host / "orgs" / "acme" / "synctool.db"
    assert rows_of(imported) == rows_of(source)
    assert stat.S_IMODE(imported.stat().st_mode) == 0o600
    live.close()
    shown = json.loads(cli("orgs", "show", "acme", "--json").stdout)
    assert shown["platforms"] == "givebutter" and "error" not in shown
    assert cli("--org", "acme", "jobs", "list").exit_code == 0
    again = cli("orgs", "import", "acme", "--config", str(config), "--database", str(source))
    assert again.exit_code == 2 and "exists already" in again.stderr


def test_import_of_an_older_release_keeps_every_row(cli, host, tmp_path):
    """A database an older synctool wrote: the organisation's is that database as this synctool migrates it."""
    from synctool import store

    old = tmp_path / "old.db"
    old.write_bytes(gzip.decompress((DATA / "release-0.3.0-dev.db.gz").read_bytes()))
    expected = tmp_path / "expected.db"
    expected.write_bytes(old.read_bytes())
    store.connect(expected).close()
    config = tmp_path / "config.yaml"
    result = cli("orgs", "import", "old-site", "--config", str(config), "--database", str(old))
    assert result.exit_code == 0, result.output
    after, want = rows_of(host / "orgs" / "old-site" / "synctool.db"), rows_of(expected)
    assert {t: len(rows) for t, rows in after.items()} == {t: len(rows) for t, rows in want.items()}
    stamped = {
        "store_meta",
        "login_links",
        "staff_sessions",
        "_sqlite_migrations",
    }  # the migrations write the time they ran into these
    assert {t: r for t, r in after.items() if t not in stamped} == {t: r for t, r in want.items() if t not in stamped}
    assert sum(map(len, after.values())) > 100


class MemoryKeyring:
    """The OS keyring's part synctool uses, in a dict: (service, name) -> value."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, name: str) -> str | None:
        return self.values.get((service, name))

    def set_password(self, service: str, name: str, value: str) -> None:
        self.values[(service, name)] = value

    def delete_password(self, service: str, name: str) -> None:
        del self.values[(service, name)]


def test_each_organisation_has_its_own_keyring_service_and_remove_erases_it(cli, host, env, monkeypatch):
    from synctool import secrets

    keyring = MemoryKeyring()
    monkeypatch.setattr(secrets, "_backend", lambda: keyring)
    env["SYNCTOOL_KEYRING"] = "on"
    add(cli, "acme")
    add(cli, "birch")
    keyring.set_password("synctool", "CRM_API_KEY", "the-single-install-s")
    saved = cli("--org", "acme", "crm", "config", "--api-key", input="acme-key\n")
    assert saved.exit_code == 0, saved.output
    assert keyring.values[("synctool:acme", "CRM_API_KEY")] == "acme-key"
    assert keyring.values[("synctool", "CRM_API_KEY")] == "the-single-install-s"
    assert ("synctool:birch", "CRM_API_KEY") not in keyring.values

    def crm_key_row(org: str) -> dict:
        return next(r for r in json.loads(cli("--org", org, "doctor", "--json").stdout) if r["check"] == "secret CRM_API_KEY")

    assert crm_key_row("acme")["detail"] == "set (keyring)"
    birch = crm_key_row("birch")  # neither acme's entry nor the single install's is birch's
    assert birch["status"] == "fail" and "synctool:birch" in birch["fix"] and "secrets.env" in birch["fix"]

    gone = cli("orgs", "remove", "acme", "--erase", "--yes")
    assert gone.exit_code == 0 and "keyring synctool:acme CRM_API_KEY" in gone.stdout
    assert [k for k in keyring.values if k[0] == "synctool:acme"] == []
    assert keyring.values[("synctool", "CRM_API_KEY")] == "the-single-install-s"


def test_serve_for_an_organisation_takes_its_deliveries_and_refuses_another_s_secret(cli, host):
    """Real `synctool serve` processes, one per organisation (as a host runs them until one receiver serves all):
    a delivery signed with A's secret is stored in A's database; the same sent to B's receiver is refused."""
    import httpx

    from tests import helpers

    for name, secret in (("acme", "acme-gb-secret"), ("birch", "birch-gb-secret")):
        add(cli, name)
        secrets_file(host, name, DONATIONS_WEBHOOK_SECRET=secret)
    body = samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION, event_id="ev-serve")
    acme_port, birch_port = helpers.free_port(), helpers.free_port()
    acme = helpers.start_receiver(acme_port, {"SYNCTOOL_ORG": "acme"})
    birch = helpers.start_receiver(birch_port, {"SYNCTOOL_ORG": "birch"})
    try:
        signed_by_acme = {"Signature": "acme-gb-secret"}
        to_birch = httpx.post(f"http://127.0.0.1:{birch_port}/webhooks/donations", content=body, headers=signed_by_acme)
        assert to_birch.status_code == 401
        to_acme = httpx.post(f"http://127.0.0.1:{acme_port}/webhooks/donations", content=body, headers=signed_by_acme)
        assert to_acme.status_code == 200, to_acme.text
    finally:
        for proc in (acme, birch):
            proc.terminate()
            proc.wait(timeout=30)
    acme_rows, birch_rows = (rows_of(host / "orgs" / name / "synctool.db") for name in ("acme", "birch"))
    assert len(acme_rows["deliveries"]) == 1 and len(acme_rows["jobs"]) == 1
    assert birch_rows["deliveries"] == [] and birch_rows["jobs"] == []
    listed = {row["name"]: row for row in json.loads(cli("orgs", "list", "--json").stdout)}
    assert listed["acme"]["failed"] == 0 and listed["birch"]["due"] == 0


def test_an_organisation_in_the_sandbox_uses_its_single_key_from_its_secrets_file(cli, host):
    """As the single install falls back to CRM_API_KEY in the environment when no sandbox key is set, an organisation
    falls back to the one in its own secrets.env."""
    add(cli, "acme")
    secrets_file(host, "acme", CRM_API_KEY="its-own")
    assert cli("--org", "acme", "crm", "environment", "sandbox").exit_code == 0
    shown = cli("--org", "acme", "crm", "environment", "--json")
    assert shown.exit_code == 0, shown.output
    found = json.loads(shown.stdout)
    assert found["api_key"] == "set" and found["api_key_from"] == "secrets.env", found


def test_the_environment_never_sends_an_organisation_s_requests_elsewhere(cli, host, env):
    """A base URL, CRM environment or policy exported for the single install (or another organisation) is not an
    organisation's: its config says where its CRM key goes; host tuning (pacing, timeouts) still applies."""
    add(cli, "acme")
    secrets_file(host, "acme", CRM_API_KEY="its-own")
    env["CRM_API_BASE_URL"] = "https://elsewhere.example/api/v1"
    env["CRM_ENVIRONMENT"] = "sandbox"
    env["CRM_MIN_INTERVAL_MS"] = "5"
    shown = cli("--org", "acme", "crm", "config", "--json")
    assert shown.exit_code == 0, shown.output
    found = json.loads(shown.stdout)
    assert "elsewhere.example" not in shown.stdout and found["environment"] == "production", found
    assert found["api_key_from"] == "secrets.env" and "CRM_API_BASE_URL" not in found["base_url_from"], found


def test_without_a_keyring_an_organisation_is_told_to_use_its_secrets_file_not_the_environment(cli, host):
    add(cli, "acme")
    result = cli("--org", "acme", "crm", "config", "--api-key", input="a-key\na-key\n")
    assert result.exit_code == 2 and "was not saved" in result.stderr, result.output
    assert str(host / "orgs" / "acme" / "secrets.env") in result.stderr and "environment variable" not in result.stderr
