"""The staff page (``serve --admin-ui``) through Starlette's TestClient: one-time sign-in links and sessions,
roles exactly as the admin API's, CSRF on every action, each action recorded with who did it, the pages
reading the same operations as the CLI, and the security headers. The browser tests are in
tests/drills/test_staff_page_browser.py."""

from __future__ import annotations

import json
import re

import pytest
from starlette.testclient import TestClient

from synctool import store
from synctool.web.receiver import create_app
from synctool.web.staff_page import COOKIE, routes
from tests.flow_helpers import give, run_drain
from tests.helpers import database_text, runtime
from tests.test_admin import seed_failed_job
from tests.test_reconcile import edited_by_hand, reconcile, txn

ROLES = ("viewer", "admin", "super_admin")


@pytest.fixture
def team(cli):
    for role in ROLES:
        assert cli("users", "invite", f"{role}@example.org", "--role", role).exit_code == 0


@pytest.fixture
def page(team, cli):
    """A function giving a fresh browser-like client, signed in as a role (or not signed in at all). The app
    is built at the first call, so a test can write its config first."""
    made: list[TestClient] = []
    apps = []

    def client(role: str | None = None) -> TestClient:
        if not apps:
            rt = runtime()
            apps.append(create_app(rt, routes=routes(rt)))
        c = TestClient(apps[0], follow_redirects=False)
        c.__enter__()
        made.append(c)
        if role:
            r = c.post(link_path(cli, f"{role}@example.org"))
            assert r.status_code == 303 and r.headers["location"] == "/admin/", r.text
        return c

    yield client
    for c in made:
        c.__exit__(None, None, None)


def link_path(cli, email: str) -> str:
    result = cli("users", "login-link", email, "--json")
    assert result.exit_code == 0, result.output
    url = json.loads(result.stdout)["url"]
    return "/admin/" + url.split("/admin/", 1)[1]


def csrf(html: str, action: str = "/admin/sign-out") -> str:
    """The CSRF token of the page's form that posts to ``action``, as a browser would send it."""
    form = re.search(rf'<form[^>]*action="{re.escape(action)}"[^>]*>(.*?)</form>', html, re.S)
    assert form, f"no form posts to {action}"
    return re.search(r'name="csrf" value="([^"]*)"', form.group(1)).group(1)


def test_a_login_link_shows_who_it_is_for_then_works_once_and_opens_an_8_hour_session(page, cli, db):
    browser = page()
    path = link_path(cli, "viewer@example.org")
    shown = browser.get(path)  # a mail scanner's fetch: shows, spends nothing
    assert shown.status_code == 200 and "Sign in as viewer@example.org" in shown.text
    assert browser.get(path).status_code == 200
    opened = browser.post(path)
    assert opened.status_code == 303 and opened.headers["location"] == "/admin/"
    cookie = opened.headers["set-cookie"]
    assert f"{COOKIE}=" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie and "Max-Age=28800" in cookie
    assert "Path=/admin" in cookie and "Secure" not in cookie  # plain http on loopback
    assert browser.get("/admin/").status_code == 200
    again = page().post(path)
    assert again.status_code == 401 and "used already" in again.text
    # the database keeps no usable secret: neither the link's token nor the session's cookie
    token = path.rsplit("/", 1)[1]
    session = cookie.split(";")[0].split("=", 1)[1]
    dumped = database_text(db)
    assert token not in dumped and session not in dumped


def test_a_form_from_another_site_is_refused_even_with_a_good_link_or_token(page, cli, db):
    path = link_path(cli, "viewer@example.org")
    elsewhere = {"Origin": "https://evil.example"}
    assert page().post(path, headers=elsewhere).status_code == 403  # no login CSRF
    assert page().post(path, headers={"Origin": "http://testserver"}).status_code == 303  # and the link still works
    job = seed_failed_job(db)
    admin = page("admin")
    token = csrf(admin.get("/admin/failed").text, f"/admin/syncs/{job}/retry")
    refused = admin.post(f"/admin/syncs/{job}/retry", data={"csrf": token}, headers=elsewhere)
    assert refused.status_code == 403 and "another site" in refused.text
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (job,)).fetchone()[0] == "failed"
    assert page().post("/admin/sign-in", data={"email": "viewer@example.org"}, headers={"Origin": "null"}).status_code == 403


def test_an_expired_or_unknown_link_is_refused_with_why(page, cli, db):
    path = link_path(cli, "admin@example.org")
    with store.atomic(db):
        db.execute("UPDATE login_links SET expires_at = '2020-01-01T00:00:00.000000Z'")
    assert "has expired" in page().get(path).text
    assert page().post(path).status_code == 401
    assert "not valid" in page().post("/admin/login/nonsense").text
    assert cli("users", "login-link", "nobody@example.org").exit_code == 3


def test_signed_out_pages_redirect_to_sign_in_and_actions_are_refused(page, db):
    anonymous = page()
    r = anonymous.get("/admin/syncs")
    assert r.status_code == 303 and r.headers["location"].startswith("/admin/sign-in")
    job = seed_failed_job(db)
    assert anonymous.post(f"/admin/syncs/{job}/retry", data={"csrf": "x"}).status_code == 401
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (job,)).fetchone()[0] == "failed"


def test_a_viewer_sees_the_read_pages_without_action_controls_and_a_forged_action_is_refused(page, db, cli):
    job = seed_failed_job(db)
    viewer = page("viewer")
    home = viewer.get("/admin/")
    assert home.status_code == 200 and "1 failed sync record(s) to retry or resolve" in home.text
    for path in ("/admin/syncs", f"/admin/syncs/{job}", "/admin/failed", "/admin/actions"):
        r = viewer.get(path)
        assert r.status_code == 200, path
        assert "Retry" not in r.text and "Resolve" not in r.text, path
    assert 'href="/admin/team"' not in home.text and 'href="/admin/donors"' not in home.text
    for path in ("/admin/reconcile", "/admin/donors", "/admin/payouts", "/admin/team"):  # as the admin API: admin+
        assert viewer.get(path).status_code == 403, path
    # the viewer's own, valid CSRF token does not make an admin's action theirs
    forged = viewer.post(f"/admin/syncs/{job}/retry", data={"csrf": csrf(home.text)})
    assert forged.status_code == 403 and "needs admin" in forged.text
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (job,)).fetchone()[0] == "failed"
    refused = json.loads(cli("syncs", "actions", "--json").stdout)["items"][0]
    assert (refused["who"], refused["action"], refused["target"]) == ("viewer@example.org", "retry", job)
    assert refused["outcome"].startswith("refused (403)")


def test_every_action_needs_the_sessions_csrf_token(page, db):
    job = seed_failed_job(db)
    admin, other = page("admin"), page("admin")
    for data in ({}, {"csrf": "guess"}, {"csrf": csrf(other.get("/admin/").text)}):  # none, wrong, another session's
        r = admin.post(f"/admin/syncs/{job}/retry", data=data)
        assert r.status_code == 403 and "security token" in r.text
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (job,)).fetchone()[0] == "failed"
    assert admin.post("/admin/sign-out", data={}).status_code == 403  # sign-out too


def test_an_admin_retries_and_resolves_from_the_page_and_each_is_recorded_with_who(page, db, cli):
    first, second = seed_failed_job(db), seed_failed_job(db)
    admin = page("admin")
    failed = admin.get("/admin/failed")
    assert failed.text.count(">Retry<") == 2
    token = csrf(failed.text, f"/admin/syncs/{first}/retry")
    assert token == csrf(failed.text, f"/admin/syncs/{second}/resolve")
    done = admin.post(f"/admin/syncs/{first}/retry", data={"csrf": token, "back": "/admin/failed"})
    assert done.status_code == 303 and done.headers["location"] == "/admin/failed"
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (first,)).fetchone()[0] == "queued"
    assert "is queued again" in admin.get("/admin/failed").text  # said once, on the next page
    assert "is queued again" not in admin.get("/admin/failed").text
    no_note = admin.post(f"/admin/syncs/{second}/resolve", data={"csrf": token})
    assert no_note.status_code == 303 and "a note is required" in admin.get("/admin/").text
    admin.post(f"/admin/syncs/{second}/resolve", data={"csrf": token, "note": "entered by hand", "back": "https://evil.example/"})
    row = db.execute("SELECT resolved_by, notes FROM jobs WHERE id = ?", (second,)).fetchone()
    assert tuple(row) == ("admin@example.org", "entered by hand")
    again = admin.post(f"/admin/syncs/{first}/retry", data={"csrf": token})  # queued now: refused, and said why
    assert again.headers["location"] == "/admin/failed"  # never another origin
    refused = admin.get("/admin/failed").text  # said as an error, not in the green of a success
    assert '<p class="flash error" id="problem" role="alert">Not done: job ' in refused
    assert "only a failed job can be retried" in refused
    actions = json.loads(cli("syncs", "actions", "--who", "admin@example.org", "--json").stdout)["items"]
    assert [(a["action"], a["target"], a["outcome"][:7]) for a in actions[:4]] == [
        ("retry", first, "refused"),
        ("resolve", second, "done"),
        ("resolve", second, "refused"),
        ("retry", first, "done"),
    ]
    detail = admin.get(f"/admin/syncs/{second}").text
    assert "entered by hand" in detail and "admin@example.org" in detail


def test_an_admin_accepts_a_reconcile_difference_with_a_note(page, coded, receiver, cli, db):
    edited_by_hand(coded, receiver)
    assert reconcile(cli)[0] == 1
    assert cli("reconcile", "last").exit_code == 1
    admin = page("admin")
    shown = admin.get("/admin/reconcile")
    assert "donations_AC" in shown.text and "amount_differs" in shown.text and ">Accept<" in shown.text
    admin.post(
        "/admin/reconcile/accept",
        data={"csrf": csrf(shown.text, "/admin/reconcile/accept"), "target": "donations_AC", "note": "refunded by cheque"},
    )
    after = admin.get("/admin/reconcile").text
    assert "accepted by admin@example.org" in after and "0 open difference" in after
    assert cli("reconcile", "last").exit_code == 0
    assert reconcile(cli)[0] == 0  # the next reconcile agrees


def test_a_deactivated_users_session_ends_at_the_next_request_and_sign_out_ends_one(page, cli, db):
    viewer = page("viewer")
    assert viewer.get("/admin/").status_code == 200
    user_id = db.execute("SELECT id FROM users WHERE email = 'viewer@example.org'").fetchone()[0]
    assert cli("users", "update", str(user_id), "--deactivate").exit_code == 0
    r = viewer.get("/admin/")
    assert r.status_code == 303 and "deactivated" in r.headers["location"]
    admin = page("admin")
    kept = dict(admin.cookies)
    assert admin.post("/admin/sign-out", data={"csrf": csrf(admin.get("/admin/").text)}).status_code == 303
    replayed = page()
    replayed.cookies.update(kept)  # the old cookie, replayed after sign-out, opens nothing
    assert replayed.get("/admin/").status_code == 303


def test_send_me_a_link_mails_a_user_and_answers_the_same_for_anyone(page, cli, tmp_path):
    from tests.test_admin import SmtpSink

    sink = SmtpSink()
    (tmp_path / "config.yaml").write_text(f"smtp:\n  host: 127.0.0.1\n  port: {sink.server_address[1]}\n  security: none\n")
    anonymous = page()
    known = anonymous.post("/admin/sign-in", data={"email": "viewer@example.org"})
    unknown = anonymous.post("/admin/sign-in", data={"email": "stranger@example.org"})
    assert known.status_code == unknown.status_code == 200
    assert known.text == unknown.text and "a sign-in link is on its way" in known.text
    assert sink.messages == []  # the request queued it: drain sends it
    assert cli("drain").exit_code == 0
    assert len(sink.messages) == 1 and "viewer@example.org" in sink.messages[0]
    url = re.search(r"http://\S+/admin/login/\S+", sink.messages[0]).group(0)
    assert page().post(url.split("8787", 1)[1]).status_code == 303
    assert cli("users", "invite", "new@example.org", "--send").exit_code == 0
    assert len(sink.messages) == 2 and "new@example.org" in sink.messages[1]


def test_a_super_admin_invites_changes_a_role_and_deactivates_from_the_team_page(page, db, cli):
    boss = page("super_admin")
    shown = boss.get("/admin/team")
    token = csrf(shown.text, "/admin/team/invite")
    boss.post("/admin/team/invite", data={"csrf": token, "email": "Treasurer@Example.org", "role": "admin"})
    row = db.execute("SELECT id, role, active FROM users WHERE email = 'treasurer@example.org'").fetchone()
    assert (row["role"], row["active"]) == ("admin", 1)
    boss.post(f"/admin/team/{row['id']}", data={"csrf": token, "change": "role", "role": "viewer"})
    boss.post(f"/admin/team/{row['id']}", data={"csrf": token, "change": "deactivate"})
    row = db.execute("SELECT role, active FROM users WHERE id = ?", (row["id"],)).fetchone()
    assert (row["role"], row["active"]) == ("viewer", 0)
    me = db.execute("SELECT id FROM users WHERE email = 'super_admin@example.org'").fetchone()[0]
    boss.post(f"/admin/team/{me}", data={"csrf": token, "change": "deactivate"})
    assert "cannot lower or deactivate yourself" in boss.get("/admin/team").text
    assert page("admin").get("/admin/team").status_code == 403


def test_the_pages_show_what_the_cli_shows(page, coded, receiver, cli, db):
    for n in range(3):
        give(receiver, {**txn(f"P{n}", 25 + n), "first_name": "Pat", "last_name": f"Giver{n}"})
    run_drain()
    listed = json.loads(cli("syncs", "list", "--json").stdout)
    viewer = page("viewer")
    shown = viewer.get("/admin/syncs").text
    assert f"{listed['total']} record(s)" in shown
    assert all(f"/admin/syncs/{r['id']}" in shown for r in listed["items"])
    filtered = viewer.get("/admin/syncs", params={"q": "Giver1", "status": "succeeded"}).text
    assert "1 record(s)" in filtered and "Giver1" in filtered and "Giver2" not in filtered
    bad = viewer.get("/admin/syncs", params={"status": "nonsense"})
    assert bad.status_code == 400 and "status" in bad.text
    overview = json.loads(cli("overview", "--json").stdout)
    home = viewer.get("/admin/").text
    assert f">{overview['day']['total']}</a>" in home and f">{overview['day']['succeeded']}<" in home
    record = listed["items"][0]
    detail = viewer.get(f"/admin/syncs/{record['id']}").text
    assert "Attempts" in detail and str(record["crm_gift_id"]) in detail
    assert viewer.get("/admin/syncs/not-a-record").status_code == 404


def test_every_page_carries_the_security_headers_and_loads_nothing_from_another_origin(page, db):
    seed_failed_job(db)
    boss = page("super_admin")
    for path in ("/admin/sign-in", "/admin/", "/admin/syncs", "/admin/failed", "/admin/reconcile", "/admin/donors",
                 "/admin/payouts", "/admin/team", "/admin/actions"):  # fmt: skip
        r = boss.get(path)
        assert r.status_code == 200, path
        assert (
            "default-src 'none'" in r.headers["content-security-policy"]
            and "script-src" not in r.headers["content-security-policy"]
        )
        assert r.headers["referrer-policy"] == "same-origin" and r.headers["cache-control"] == "no-store"
        assert "<script" not in r.text and not re.search(r'(src|href)="(https?:)?//', r.text), path
        assert '<meta name="viewport"' in r.text
        # every control is labelled: each input and select that a person fills has a <label for=...>
        for control in re.findall(r'<(?:input|select)(?![^>]*type="hidden")[^>]*>', r.text):
            found = re.search(r'id="([^"]+)"', control)
            assert found and f'for="{found.group(1)}"' in r.text or "checkbox" in control, (path, control)
    css = boss.get("/admin/static/staff.css")
    assert css.status_code == 200 and "@media" in css.text


def test_the_admin_api_records_its_actions_and_serves_the_pages_data(world, cli, env, db):
    from tests.test_admin import JWT_SECRET

    env["ADMIN_JWT_SECRET"] = JWT_SECRET
    assert cli("users", "invite", "ops@example.org", "--role", "admin").exit_code == 0
    token = next(
        line.split()[1] for line in cli("users", "token", "ops@example.org").stdout.splitlines() if line.startswith("token")
    )
    job = seed_failed_job(db)
    from synctool.web.admin_api import routes as api_routes

    rt = runtime()
    with TestClient(create_app(rt, routes=api_routes(rt))) as api:
        headers = {"Authorization": f"Bearer {token}"}
        assert api.post(f"/api/admin/sync/retry/{job}", headers=headers).status_code == 200
        assert api.get("/api/overview", headers=headers).json()["queue"]["queued"] == 1
        assert api.get("/api/reconcile", headers=headers).json() == {"ran": False, "items": [], "open": 0}
        link = api.post("/api/users/login-link", headers=headers, json={"email": "ops@example.org"})
        assert link.status_code == 403  # super_admin only
        listed = api.get("/api/actions", headers=headers).json()["items"]
    assert [(a["via"], a["action"], a["target"], a["outcome"][:7]) for a in listed if a["via"] == "api"] == [
        ("api", "POST /api/users/login-link", "ops@example.org", "refused"),
        ("api", "POST /api/admin/sync/retry/{jobId}", job, "done"),
    ]


def test_an_admin_settles_a_held_gift_from_the_donors_page(page, coded, receiver, cli, db, env):
    from tests.test_donor_matching import ROBERT, gift

    robert = str(coded.crm.create_constituent(dict(ROBERT))["id"])
    assert cli("crm", "mirror", "--refresh").exit_code == 0
    env["DONORS_MATCHING"] = "review"
    held = give(receiver, gift("T1", "Bob", "Smith", "bob.smith@gmail.com"))["job_id"]
    run_drain()
    admin = page("admin")
    home = admin.get("/admin/").text
    assert "1 gift(s) held until someone says who the donor is" in home
    shown = admin.get("/admin/donors").text
    assert "bob.smith@gmail.com" in shown and "Bob and Robert are one name" in shown
    match_id = json.loads(cli("donors", "matches", "--json").stdout)["items"][0]["id"]
    action = f"/admin/donors/matches/{match_id}/accept"
    done = admin.post(action, data={"csrf": csrf(shown, action), "constituent": robert})
    assert done.status_code == 303 and "the gift goes to constituent" in admin.get("/admin/donors").text
    run_drain()
    row = db.execute("SELECT status, crm_constituent_id FROM jobs WHERE id = ?", (held,)).fetchone()
    assert (row[0], str(row[1])) == ("succeeded", robert)


def test_each_page_has_one_name_and_the_navigation_is_the_pages_table():
    """``PAGES``: a view, its template (the view's name) and the navigation's key are one name; the navigation is
    the rows with a label, in the table's order."""
    from pathlib import Path

    from synctool.web import staff_page

    folder = Path(staff_page.__file__).parent / "templates"
    names = [p.name for p in staff_page.PAGES]
    assert len(set(names)) == len(names) and len({p.path for p in staff_page.PAGES}) == len(names)
    for p in staff_page.PAGES:
        assert (folder / p.template).is_file(), p.template
    assert [p.label for p in staff_page.NAV] == [
        "Overview", "Sync log", "Failed", "Events", "Plans", "Reconcile", "Donors", "Payouts", "Year end", "Mappings", "Settings",
        "Team", "Actions",
    ]  # fmt: skip
    assert staff_page.section(next(p for p in staff_page.PAGES if p.path == "/syncs/{id}")) == "syncs"
    assert len({(a.path, a.name) for a in staff_page.ACTIONS}) == len(staff_page.ACTIONS)


def test_a_request_opens_one_connection_and_a_click_commits_once(page, db, monkeypatch):
    """The session check, the role check, the operation, its record and the message for the next page share the
    request's one connection, and a click writes them in one transaction, done or refused."""
    job = seed_failed_job(db)
    admin = page("admin")
    token = csrf(admin.get("/admin/failed").text, f"/admin/syncs/{job}/retry")
    opened, commits = [], []
    real = store.connect

    def counting(*args, **kwargs):
        conn = real(*args, **kwargs)
        opened.append(conn)
        conn.set_trace_callback(lambda sql: commits.append(sql) if sql.lstrip().upper().startswith("COMMIT") else None)
        return conn

    monkeypatch.setattr(store, "connect", counting)

    def measured(response):
        found = (response.status_code, len(opened), len(commits))
        opened.clear()
        commits.clear()
        return found

    assert measured(admin.post(f"/admin/syncs/{job}/retry", data={"csrf": token})) == (303, 1, 1)
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (job,)).fetchone()[0] == "queued"
    shown = admin.get("/admin/failed")
    assert measured(shown) == (200, 1, 1) and "is queued again" in shown.text  # the message read, once
    assert measured(admin.get("/admin/failed")) == (200, 1, 0)  # nothing to say: nothing written
    # refused by the operation: its own writes undone, its record and the message kept, in one commit
    assert measured(admin.post(f"/admin/syncs/{job}/retry", data={"csrf": token})) == (303, 1, 1)
    assert "only a failed job can be retried" in admin.get("/admin/failed").text
    opened.clear()
    commits.clear()
    assert measured(admin.post(f"/admin/syncs/{job}/retry", data={"csrf": "wrong"})) == (403, 1, 1)  # the refusal's record
    assert measured(admin.get("/admin/nothing-here")) == (404, 1, 0)
