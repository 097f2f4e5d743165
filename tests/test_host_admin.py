"""The host's operators (`synctool users ... --host-admin`) and the host page (``/host``): they live in the host's
own database, see every organisation's backlog, failures and last runs and no donor data, link into an organisation
only where they are its user too, and their links and sessions and an organisation's open nothing of each other's
(the commands through the CLI runner, the pages through Starlette's TestClient, the host's folder under tmp)."""

from __future__ import annotations

import json
import re
import sqlite3
import stat
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from synctool import store
from synctool.web import host as host_app
from synctool.web import host_page, staff_page

OPERATOR = "ops@example.org"
DONOR = ("Ada Donorly", "ada.donorly@example.org", "123.45", "Spring Gala Appeal")


@pytest.fixture
def home(env: dict[str, str], tmp_path: Path) -> Path:
    """A host with organisations a and b (the single install's SYNCTOOL_CONFIG/SYNCTOOL_DB not set), organisation
    a with a failed job whose error names a donor, and one host operator."""
    env["SYNCTOOL_HOME"] = str(tmp_path / "home")
    env.pop("SYNCTOOL_CONFIG")
    env.pop("SYNCTOOL_DB")
    return tmp_path / "home"


@pytest.fixture
def orgs(cli, home: Path) -> Path:
    from synctool.queue import jobs

    for name in ("a", "b"):
        result = cli("orgs", "add", name, "--platforms", "givebutter")
        assert result.exit_code == 0, result.output
    conn = store.connect(home / "orgs" / "a" / "synctool.db")
    with store.atomic(conn):
        job_id = jobs.enqueue(conn, source="donations", entity_type="transaction", entity_id="T1", external_id="donations_T1")
        error = f"no constituent for {DONOR[0]} <{DONOR[1]}>: ${DONOR[2]} to {DONOR[3]}"
        conn.execute("UPDATE jobs SET status = 'failed', last_error = ?, attempts = 3 WHERE id = ?", (error, job_id))
    conn.close()
    assert cli("users", "add", OPERATOR, "--host-admin").exit_code == 0
    return home


@pytest.fixture
def browser(orgs: Path, env: dict[str, str]):
    """A browser-like client of the host's `serve`: the host page at /host, each organisation's pages at /o/NAME/."""
    config = orgs / "orgs" / "a" / "config.yaml"
    settings = yaml.safe_load(config.read_text()) or {}
    settings.setdefault("receiver", {})["admin_ui"] = True  # organisation a's staff page on (b's stays off)
    config.write_text(yaml.safe_dump(settings))
    with TestClient(host_app.build(env, host_routes=host_page.routes(env)), follow_redirects=False) as client:
        yield client


def link_path(cli, *args: str) -> str:
    """The path of a sign-in link `synctool ARGS users login-link ...` prints."""
    result = cli(*args, "--json")
    assert result.exit_code == 0, result.output
    return re.sub(r"^https?://[^/]+", "", json.loads(result.stdout)["url"])


def with_cookie(browser: TestClient, path: str, secret: str):
    """GET ``path`` from another client carrying only this session cookie, whatever its path said (as a forged
    request would)."""
    with TestClient(browser.app, follow_redirects=False) as other:
        return other.get(path, headers={"cookie": f"{staff_page.COOKIE}={secret}"})


def sign_in_host(browser: TestClient, cli) -> None:
    path = link_path(cli, "users", "login-link", OPERATOR, "--host-admin")
    assert path.startswith("/host/login/")
    shown = browser.get(path)  # a mail scanner's fetch shows who it is for and spends nothing
    assert shown.status_code == 200 and f"Sign in as {OPERATOR}" in shown.text and f'action="{path}"' in shown.text
    opened = browser.post(path)
    assert opened.status_code == 303 and opened.headers["location"] == "/host/", opened.text
    cookie = opened.headers["set-cookie"]
    assert "Path=/host;" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie, cookie
    assert browser.post(path).status_code == 401  # once


def test_a_host_operator_signs_in_and_sees_every_organisation_without_donor_data(browser, cli, home):
    assert browser.get("/host/").headers["location"] == "/host/sign-in"
    asks = browser.get("/host/sign-in")
    assert "ask whoever runs synctool on this host for a sign-in" in asks.text and "<form" not in asks.text
    sign_in_host(browser, cli)
    page = browser.get("/host/")
    assert page.status_code == 200 and OPERATOR in page.text
    rows = dict(re.findall(r'<th scope="row">(.*?)</th>(.*?)</tr>', page.text, re.S))
    assert list(rows) == ["a", "b"]  # names, and no link: the operator is no organisation's user yet
    assert [re.findall(r"<td>([^<]*)</td>", rows[n]) for n in "ab"] == [["givebutter", "0", "1", "never", "never"],
                                                                         ["givebutter", "0", "0", "never", "never"]]  # fmt: skip
    for text in DONOR:
        assert text not in page.text
    assert "/o/" not in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
    assert browser.get("/host/static/staff.css").status_code == 200
    assert browser.get("/host/nothing").status_code == 404


def test_an_organisation_is_a_link_only_once_the_operator_is_its_user(browser, cli):
    sign_in_host(browser, cli)
    assert "/o/a/admin/" not in browser.get("/host/").text
    assert cli("--org", "a", "users", "add", OPERATOR).exit_code == 0
    page = browser.get("/host/").text
    assert '<a href="/o/a/admin/">a</a>' in page and "/o/b/" not in page
    user = json.loads(cli("--org", "a", "users", "list", "--json").stdout)[0]
    assert cli("--org", "a", "users", "update", str(user["id"]), "--deactivate").exit_code == 0
    assert "/o/a/admin/" not in browser.get("/host/").text  # an inactive user of a: no link


def test_an_organisations_staff_link_and_session_open_nothing_of_the_host_page(browser, cli):
    assert cli("--org", "a", "users", "add", "staff@a.example.org", "--role", "super_admin").exit_code == 0
    staff_link = link_path(cli, "--org", "a", "users", "login-link", "staff@a.example.org")
    token = staff_link.rsplit("/", 1)[1]
    assert browser.get(f"/host/login/{token}").status_code == 401
    assert browser.post(f"/host/login/{token}").status_code == 401
    opened = browser.post(staff_link)  # still good for its own page: the host's refusal spent nothing
    assert opened.status_code == 303 and opened.headers["location"] == "/o/a/admin/"
    session = browser.cookies.get(staff_page.COOKIE)
    assert with_cookie(browser, "/o/a/admin/", session).status_code == 200  # the cookie alone opens its own page
    refused = with_cookie(browser, "/host/", session)
    assert refused.status_code == 303 and refused.headers["location"].startswith("/host/sign-in")
    assert "staff@a.example.org" not in refused.text


def test_a_host_operators_link_and_session_open_nothing_of_an_organisations_staff_page(browser, cli):
    token = link_path(cli, "users", "login-link", OPERATOR, "--host-admin").rsplit("/", 1)[1]
    assert browser.post(f"/o/a/admin/login/{token}").status_code == 401
    sign_in_host(browser, cli)  # the same link, refused by a's page, still opens the host's
    secret = browser.cookies.get(staff_page.COOKIE)
    assert with_cookie(browser, "/host/", secret).status_code == 200  # the cookie alone opens its own page
    assert cli("--org", "a", "users", "add", OPERATOR, "--role", "super_admin").exit_code == 0  # even as a's user
    for path in ("/o/a/admin/", "/o/a/admin/failed", "/o/a/admin/syncs"):
        refused = with_cookie(browser, path, secret)
        assert refused.status_code == 303 and refused.headers["location"].startswith("/o/a/admin/sign-in"), path
        assert DONOR[0] not in refused.text


def test_host_operators_live_in_the_hosts_own_database_and_no_organisations(cli, orgs, home):
    folder, database = home / "host", home / "host" / "synctool.db"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and stat.S_IMODE(database.stat().st_mode) == 0o600
    listed = json.loads(cli("users", "list", "--host-admin", "--json").stdout)
    assert [(u["email"], u["active"]) for u in listed] == [(OPERATOR, True)]
    for name in ("a", "b"):
        assert json.loads(cli("--org", name, "users", "list", "--json").stdout) == []
    conn = sqlite3.connect(database)
    assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
    actions = conn.execute("SELECT action, target, via FROM staff_actions").fetchall()
    assert actions == [("users add", OPERATOR, "cli")]  # the host's command, in the host's log
    conn.close()


def test_host_admin_is_refused_with_an_organisation_in_one_line(cli, orgs, env):
    for args in (("--org", "a", "users", "add", "x@example.org", "--host-admin"),
                 ("--org", "a", "users", "list", "--host-admin"),
                 ("--org", "a", "users", "login-link", OPERATOR, "--host-admin")):  # fmt: skip
        refused = cli(*args)
        assert refused.exit_code == 2 and "--host-admin is the host's, not organisation a's" in refused.stderr, args
        assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.output
    env["SYNCTOOL_ORG"] = "b"
    assert cli("users", "add", "x@example.org", "--host-admin").exit_code == 2
    del env["SYNCTOOL_ORG"]
    assert cli("users", "add", "x@example.org", "--host-admin", "--role", "admin").exit_code == 2
    assert cli("users", "add", "x@example.org", "--host-admin", "--send").exit_code == 2
    assert cli("users", "login-link", OPERATOR, "--url", "https://sync.example.org").exit_code == 2
    assert [u["email"] for u in json.loads(cli("users", "list", "--host-admin", "--json").stdout)] == [OPERATOR]
    assert all(json.loads(cli("--org", n, "users", "list", "--json").stdout) == [] for n in "ab")


def test_a_deactivated_host_operator_is_signed_out_and_gets_no_link(browser, cli):
    spare = link_path(cli, "users", "login-link", OPERATOR, "--host-admin")
    sign_in_host(browser, cli)
    done = cli("users", "update", OPERATOR, "--host-admin", "--deactivate")
    assert done.exit_code == 0 and json.loads(done.stdout)["active"] is False
    refused = browser.get("/host/")
    assert refused.status_code == 303 and refused.headers["location"] == "/host/sign-in?why=deactivated"
    assert "Ask whoever runs synctool on this host." in browser.get(refused.headers["location"]).text
    assert browser.post(spare).status_code == 401
    again = cli("users", "login-link", OPERATOR, "--host-admin")
    assert again.exit_code != 0 and "is deactivated" in again.stderr and "--host-admin --activate" in again.stderr
    assert cli("users", "login-link", "nobody@example.org", "--host-admin").exit_code == 3


def test_signing_out_needs_the_sessions_token(browser, cli):
    sign_in_host(browser, cli)
    secret = browser.cookies.get(staff_page.COOKIE)
    page = browser.get("/host/").text
    form = re.search(r'<form[^>]*action="/host/sign-out"[^>]*>(.*?)</form>', page, re.S)
    assert form, "no sign-out form"
    token = re.search(r'name="csrf" value="([^"]*)"', form.group(1)).group(1)
    assert browser.post("/host/sign-out", data={"csrf": "forged"}).status_code == 403
    assert browser.get("/host/").status_code == 200
    out = browser.post("/host/sign-out", data={"csrf": token})
    assert out.status_code == 303 and out.headers["location"] == "/host/sign-in"
    assert with_cookie(browser, "/host/", secret).headers["location"] == "/host/sign-in?why=signed-out"


def test_an_organisation_that_cannot_be_read_shows_its_error_escaped_and_stops_no_other(browser, cli, home):
    (home / "orgs" / "b" / "config.yaml").write_text("platforms: ['<script>alert(1)</script>']\n")
    sign_in_host(browser, cli)
    page = browser.get("/host/").text
    assert "<script>" not in page and "&lt;script&gt;" in page and "Cannot be read:" in page
    assert re.search(r'<th scope="row">a</th>\s*<td>givebutter</td>', page)


def test_the_link_starts_with_url_else_the_hosts_public_url(cli, orgs, home):
    link = json.loads(cli("users", "login-link", OPERATOR, "--host-admin", "--json").stdout)["url"]
    assert link.startswith("http://127.0.0.1:8787/host/login/")
    given = json.loads(cli("users", "login-link", OPERATOR, "--host-admin", "--url", "https://x.example.org/", "--json").stdout)
    assert given["url"].startswith("https://x.example.org/host/login/")
    config = home / "host" / "config.yaml"
    config.write_text(config.read_text() + "receiver:\n  public_url: https://sync.example.org\n")
    link = json.loads(cli("users", "login-link", OPERATOR, "--host-admin", "--json").stdout)["url"]
    assert link.startswith("https://sync.example.org/host/login/")
