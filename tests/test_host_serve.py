"""One receiver for every organisation of a host (`synctool serve` without --org: ``web/host.py``), tried as an
attacker would: another organisation's secret, session, sign-in link and API token; names that are not names;
an organisation removed while the host runs, or one that cannot be built. Three organisations are made once for
the module with `orgs add` under a host folder of its own, each with its secrets in its own ``secrets.env``."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from synctool.fakes import samples
from synctool.platforms.square.webhook import SIGNATURE_HEADER, signature
from synctool.runtime import Runtime
from synctool.web import host as host_app
from synctool.web.receiver import build_receiver
from synctool.web.sign_in_pages import COOKIE

PUBLIC = "https://sync.example.org"
NAMES = ("acme", "birch", "cedar")
#: acme and birch share their API signing secret (a consultant's shortcut): their tokens must not cross even so
SHARED_JWT = "j" * 48
STAFF = "staff@example.org"  # the same person is on every organisation's team


def secret_of(name: str, what: str) -> str:
    return f"{name}-{what}-secret-0123456789"


@dataclass
class World:
    home: Path
    environ: dict[str, str]
    runner: CliRunner

    def cli(self, *args: str, transports: dict | None = None):
        from synctool.cli.main import app
        from synctool.console import AppContext

        obj = AppContext(environ=self.environ, transports=transports or {})
        return self.runner.invoke(app, list(args), catch_exceptions=False, obj=obj)

    def folder(self, name: str) -> Path:
        return self.home / "orgs" / name

    def counts(self, name: str) -> tuple[int, int]:
        conn = sqlite3.connect(self.folder(name) / "synctool.db")
        try:
            return tuple(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("deliveries", "jobs"))  # type: ignore[return-value]
        finally:
            conn.close()

    def files(self) -> list[str]:
        """The host folder's files, but SQLite's own (``-wal``, ``-shm``: they come and go with connections)."""
        return sorted(str(p.relative_to(self.home)) for p in self.home.rglob("*") if not p.name.endswith(("-wal", "-shm")))

    def add(self, name: str, platforms: str = "givebutter", **secrets: str) -> None:
        result = self.cli("orgs", "add", name, "--platforms", platforms)
        assert result.exit_code == 0, result.output
        config = self.folder(name) / "config.yaml"
        config.write_text(
            config.read_text().replace("receiver:\n", f"receiver:\n  public_url: {PUBLIC}\n  admin_ui: true\n  admin_api: true\n")
        )
        path = self.folder(name) / "secrets.env"
        path.write_text("".join(f"{k}={v}\n" for k, v in secrets.items()))
        path.chmod(0o600)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    home = tmp_path_factory.mktemp("host")
    w = World(home, {"SYNCTOOL_KEYRING": "off", "SYNCTOOL_HOME": str(home), "DONORS_MATCHING": "email"}, CliRunner())
    for name in NAMES:
        w.add(
            name,
            "givebutter,square" if name == "acme" else "givebutter",
            DONATIONS_WEBHOOK_SECRET=secret_of(name, "donations"),
            POS_WEBHOOK_SIGNATURE_KEY=secret_of(name, "pos"),
            ADMIN_JWT_SECRET=SHARED_JWT if name in ("acme", "birch") else secret_of(name, "jwt") * 2,
            POS_ACCESS_TOKEN="demo-square-token",  # the fake Square's
        )
        assert w.cli("--org", name, "users", "invite", STAFF, "--role", "admin").exit_code == 0
    return w


@pytest.fixture
def client(world: World):
    # https, as behind the host's proxy: the session cookie is Secure (the public URL is https)
    with TestClient(host_app.Host(world.environ), base_url="https://testserver", follow_redirects=False) as c:
        yield c


def gift(event_id: str) -> bytes:
    return samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION, event_id=event_id)


def deliver(client: TestClient, name: str, body: bytes, secret: str):
    return client.post(f"/o/{name}/webhooks/donations", content=body, headers={"Signature": secret})


def login_path(world: World, name: str) -> str:
    result = world.cli("--org", name, "users", "login-link", STAFF, "--json")
    assert result.exit_code == 0, result.output
    url = json.loads(result.stdout)["url"]
    assert url.startswith(f"{PUBLIC}/o/{name}/admin/login/"), url  # the link carries the organisation's prefix
    return url.removeprefix(PUBLIC)


def signed_in(client: TestClient, world: World, name: str) -> str:
    """Sign ``client`` in to ``name``'s staff page; the session cookie's value."""
    opened = client.post(login_path(world, name))
    assert opened.status_code == 303 and opened.headers["location"] == f"/o/{name}/admin/", opened.text
    cookie = opened.headers["set-cookie"]
    assert f"Path=/o/{name}/admin;" in cookie or cookie.endswith(f"Path=/o/{name}/admin"), cookie
    return cookie.split(";")[0].split("=", 1)[1]


def api_token(world: World, name: str) -> str:
    result = world.cli("--org", name, "users", "token", STAFF)
    assert result.exit_code == 0, result.output
    return next(line.split()[1] for line in result.stdout.splitlines() if line.startswith("token"))


def test_a_delivery_is_verified_with_its_own_organisation_s_secret_only(client, world, caplog):
    before = {name: world.counts(name) for name in NAMES}
    body = gift("ev-cross-1")
    with caplog.at_level(logging.WARNING, logger="synctool.receiver"):
        refused = deliver(client, "birch", body, secret_of("acme", "donations"))
    assert refused.status_code == 401 and set(refused.json()) == {"error", "detail"}
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["organisation birch"]  # its log line names it
    assert not any("acme" in r.getMessage() or "secret-0123" in r.getMessage() for r in caplog.records)
    assert {name: world.counts(name) for name in NAMES} == before  # nothing stored, in A's database or B's
    accepted = deliver(client, "birch", body, secret_of("birch", "donations"))
    assert accepted.status_code == 200 and accepted.json()["status"] == "accepted"
    assert world.counts("birch") == (before["birch"][0] + 1, before["birch"][1] + 1)
    assert world.counts("acme") == before["acme"] and world.counts("cedar") == before["cedar"]
    assert deliver(client, "acme", body, secret_of("acme", "donations")).json()["status"] == "accepted"  # A's own


@pytest.mark.parametrize(
    "path",
    [
        "/o/nope/webhooks/donations",
        "/o/Acme/webhooks/donations",
        "/o/ACME/admin/",
        "/o/%2e%2e/o/acme/webhooks/donations",
        "/o/%2E%2E/synctool.db",
        "/o/acme%2Fwebhooks/donations",
        "/o/acme%2fwebhooks%2fdonations",
        "/o/..%2Forgs%2Facme/webhooks/donations",
        "/o/a_b/webhooks/donations",
        "/o/ghost/webhooks/donations",  # a folder without a config is no organisation
        "/o//webhooks/donations",
        "/o/",
        "/o",
        "/o/acme/health",  # /health is the host's alone
    ],
)
def test_names_that_are_none_of_the_host_s_organisations_are_404_and_make_nothing(client, world, path):
    (world.folder("ghost")).mkdir(exist_ok=True)
    files = world.files()
    before = {name: world.counts(name) for name in NAMES}
    for method in ("GET", "POST"):
        answer = client.request(method, path, content=gift("ev-404"), headers={"Signature": secret_of("acme", "donations")})
        assert answer.status_code == 404, (method, path, answer.text)
        assert set(answer.json()) == {"error", "detail"}
    assert world.files() == files and {name: world.counts(name) for name in NAMES} == before


def test_an_unknown_organisation_answers_as_an_unknown_path_of_a_known_one(client):
    """A stranger cannot tell a name that is none of the host's from a path an organisation does not have."""
    unknown = client.get("/o/nope/nothing-here").json()
    known = client.get("/o/acme/nothing-here").json()
    assert unknown["error"] == known["error"] == "not found"
    assert unknown["detail"].replace("nope", "acme") == known["detail"]


def test_health_is_the_host_s_and_names_no_organisation(client):
    answer = client.get("/health")
    assert answer.status_code == 200 and set(answer.json()) == {"status", "receiver"} and answer.json()["status"] == "ok"
    assert not any(name in answer.text for name in NAMES)
    assert client.get("/").status_code == 404 and client.get("/webhooks/donations").status_code == 404  # no single install


def test_a_removed_organisation_answers_404_and_its_receiver_is_closed(world):
    world.add("doomed", DONATIONS_WEBHOOK_SECRET=secret_of("doomed", "donations"), ADMIN_JWT_SECRET=SHARED_JWT)
    committers = lambda: sum(t.name.startswith("synctool-commit") for t in threading.enumerate())  # noqa: E731
    with TestClient(host_app.Host(world.environ)) as client:
        before = committers()
        assert deliver(client, "doomed", gift("ev-doomed"), secret_of("doomed", "donations")).status_code == 200
        assert committers() == before + 1
        removed = world.cli("orgs", "remove", "doomed", "--erase", "--yes")
        assert removed.exit_code == 0, removed.output
        for _ in range(2):
            gone = deliver(client, "doomed", gift("ev-doomed-2"), secret_of("doomed", "donations"))
            assert gone.status_code == 404 and client.get("/o/doomed/admin/sign-in").status_code == 404
        assert committers() == before  # its committing thread finished, its connection dropped
        assert not world.folder("doomed").exists()
        assert deliver(client, "acme", gift("ev-after-doomed"), secret_of("acme", "donations")).status_code == 200


def test_shutdown_closes_every_organisation_s_receiver(world):
    committers = lambda: sum(t.name.startswith("synctool-commit") for t in threading.enumerate())  # noqa: E731
    before = committers()
    with TestClient(host_app.Host(world.environ)) as client:
        for name in NAMES:
            assert deliver(client, name, gift(f"ev-shutdown-{name}"), secret_of(name, "donations")).status_code == 200
        assert committers() == before + len(NAMES)
    assert committers() == before


def test_a_staff_session_of_one_organisation_opens_nothing_of_another(client, world):
    session = signed_in(client, world, "acme")
    home = client.get("/o/acme/admin/")
    assert home.status_code == 200
    # the page's links and forms carry the organisation's prefix, and none leaves it
    assert 'href="/o/acme/admin/syncs"' in home.text and 'action="/o/acme/admin/sign-out"' in home.text
    assert 'href="/admin' not in home.text and 'action="/admin' not in home.text
    # the browser never sends A's cookie to B's pages (its Path), and sent by hand it opens nothing there
    assert client.get("/o/birch/admin/").headers["location"] == "/o/birch/admin/sign-in"
    for path in ("/o/birch/admin/", "/o/birch/admin/syncs", "/o/birch/admin/team"):
        answer = client.get(path, headers={"Cookie": f"{COOKIE}={session}"})
        assert answer.status_code == 303 and answer.headers["location"].startswith("/o/birch/admin/sign-in"), path
    posted = client.post("/o/birch/admin/team/invite", headers={"Cookie": f"{COOKIE}={session}"}, data={"email": "x@example.org"})
    assert posted.status_code in (401, 403) and "x@example.org" not in posted.text
    assert "x@example.org" not in world.cli("--org", "birch", "users", "list").stdout
    # a form returns to a page of its own organisation's staff page, never another's
    token = _csrf(home.text)
    for back, lands in (("/o/acme/admin/syncs", "/o/acme/admin/syncs"), ("/o/birch/admin/syncs", "/o/acme/admin/failed"),
                        ("/admin/syncs", "/o/acme/admin/failed")):  # fmt: skip
        acted = client.post("/o/acme/admin/syncs/no-such-job/retry", data={"csrf": token, "back": back})
        assert acted.status_code == 303 and acted.headers["location"] == lands, (back, acted.text)
    # signing out of A clears A's cookie at A's path, and lands on A's sign-in page
    out = client.post("/o/acme/admin/sign-out", data={"csrf": _csrf(home.text)})
    assert out.headers["location"] == "/o/acme/admin/sign-in" and "Path=/o/acme/admin" in out.headers["set-cookie"]


def _csrf(html: str) -> str:
    import re

    return re.search(r'name="csrf" value="([^"]*)"', html).group(1)


def test_a_sign_in_link_of_one_organisation_is_refused_by_another(client, world):
    token = login_path(world, "acme").rsplit("/", 1)[1]
    for method in ("GET", "POST"):
        refused = client.request(method, f"/o/birch/admin/login/{token}")
        assert refused.status_code == 401 and COOKIE not in refused.headers.get("set-cookie", "")
        assert STAFF not in refused.text
    assert client.post(f"/o/acme/admin/login/{token}").status_code == 303  # and it still works where it belongs


def test_an_api_token_of_one_organisation_is_refused_by_another_s_api(client, world):
    token = api_token(world, "acme")
    bearer = {"Authorization": f"Bearer {token}"}
    assert client.get("/o/acme/api/overview", headers=bearer).status_code == 200
    for name in ("birch", "cedar"):  # birch signs with the same secret, and has a user of the same e-mail
        refused = client.get(f"/o/{name}/api/overview", headers=bearer)
        assert refused.status_code == 401 and set(refused.json()) == {"error", "detail"}
    assert client.post("/o/birch/api/users", headers=bearer, json={"email": "y@example.org", "role": "admin"}).status_code == 401


def test_an_organisation_that_cannot_be_built_is_503_alone_and_logged_once(client, world, caplog):
    broken = world.folder("broken")
    broken.mkdir(mode=0o700, exist_ok=True)
    (broken / "config.yaml").write_text("receiver: [\n")
    nokey = world.folder("nokey")
    nokey.mkdir(mode=0o700, exist_ok=True)
    (nokey / "config.yaml").write_text("receiver:\n  admin_api: true\nplatforms: [givebutter]\n")  # no signing secret
    try:
        with caplog.at_level(logging.ERROR, logger="synctool.host"):
            for _ in range(2):
                for name in ("broken", "nokey"):
                    answer = deliver(client, name, gift("ev-broken"), secret_of("acme", "donations"))
                    assert answer.status_code == 503 and set(answer.json()) == {"error", "detail"}
                    assert name in answer.json()["error"]
                    assert not any(other in answer.text for other in NAMES) and str(world.home) not in answer.text
                assert deliver(client, "acme", gift("ev-beside-broken"), secret_of("acme", "donations")).status_code == 200
        logged = [r.getMessage() for r in caplog.records if r.name == "synctool.host"]
        assert len(logged) == 2 and any("broken" in m for m in logged) and any("nokey" in m for m in logged)
        assert not any(other in m for m in logged for other in NAMES)
        (broken / "config.yaml").write_text("platforms: [givebutter]\n")  # mended: built on its next request
        assert client.get("/o/broken/webhooks/donations").status_code == 405  # its own app answers now
    finally:
        for folder in (broken, nokey):
            for path in sorted(folder.rglob("*"), reverse=True):
                path.unlink()
            folder.rmdir()


def test_square_verifies_with_the_organisation_s_own_notification_url(client, world):
    """Square signs the URL it posts to: an organisation's is its /o/NAME/webhooks/pos under the host's URL."""
    from synctool import platforms
    from synctool.platforms.square import notification

    platforms.registered()
    rt = Runtime.from_environ(environ=host_app.organisation_environ(world.environ), org="acme")
    assert notification.configured(rt) == f"{PUBLIC}/o/acme/webhooks/pos"
    body = samples.square_order_event("HOST-SQ-1")
    key = secret_of("acme", "pos")
    wrong = client.post("/o/acme/webhooks/pos", content=body,
                        headers={SIGNATURE_HEADER: signature(key, f"{PUBLIC}/webhooks/pos", body)})  # fmt: skip
    assert wrong.status_code == 401
    right = client.post("/o/acme/webhooks/pos", content=body,
                        headers={SIGNATURE_HEADER: signature(key, f"{PUBLIC}/o/acme/webhooks/pos", body)})  # fmt: skip
    assert right.status_code == 200 and right.json()["status"] == "accepted"


def test_webhooks_register_for_an_organisation_registers_its_own_urls(world):
    from synctool.fakes.world import FakeWorld

    fakes = FakeWorld(crm_limit=10_000, crm_window_s=1.0)
    result = world.cli("--org", "acme", "webhooks", "register", "--url", PUBLIC, "--source", "pos", "--json",
                       transports=fakes.transports())  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["url"] == f"{PUBLIC}/o/acme"
    [sub] = fakes.square.subscriptions.values()
    assert sub["notification_url"] == f"{PUBLIC}/o/acme/webhooks/pos"


def test_a_single_install_beside_organisations_keeps_the_root(world, tmp_path):
    (tmp_path / "config.yaml").write_text(f"database: {tmp_path / 'single.db'}\nplatforms: [givebutter]\n")
    environ = {**world.environ, "SYNCTOOL_CONFIG": str(tmp_path / "config.yaml"), "DONATIONS_WEBHOOK_SECRET": "single-secret",
               "ADMIN_JWT_SECRET": SHARED_JWT}  # fmt: skip
    single_cli = World(world.home, environ, world.runner).cli
    assert single_cli("users", "invite", STAFF, "--role", "admin").exit_code == 0
    issued = single_cli("users", "token", STAFF).stdout
    token = next(line.split()[1] for line in issued.splitlines() if line.startswith("token"))
    from synctool import platforms

    platforms.registered()
    single = Runtime.from_environ(environ=environ)
    assert host_app.single_install(None, environ)
    with TestClient(host_app.Host(environ, single=build_receiver(single))) as client:
        assert deliver_root(client, "single-secret").status_code == 200
        assert deliver_root(client, secret_of("acme", "donations")).status_code == 401
        assert deliver(client, "acme", gift("ev-beside-single"), secret_of("acme", "donations")).status_code == 200
        # the single install's token names no organisation: no organisation's API takes it, whatever their secrets
        assert client.get("/o/acme/api/overview", headers={"Authorization": f"Bearer {token}"}).status_code == 401
        health = client.get("/health").json()
        assert health["status"] == "ok" and not any(name in json.dumps(health) for name in NAMES)
    conn = sqlite3.connect(tmp_path / "single.db")
    assert conn.execute("SELECT count(*) FROM deliveries").fetchone()[0] == 1
    conn.close()


def deliver_root(client: TestClient, secret: str):
    return client.post("/webhooks/donations", content=gift(f"ev-root-{secret}"), headers={"Signature": secret})


def test_serve_on_a_host_serves_every_organisation_and_with_org_just_one(world, monkeypatch):
    from synctool.web import receiver

    ran: list = []
    monkeypatch.setattr(receiver, "run", lambda app, host, port: ran.append((app, host, port)))
    assert world.cli("serve", "--port", "8788").exit_code == 0
    app, host, port = ran.pop()
    assert isinstance(app, host_app.Host) and (host, port) == ("127.0.0.1", 8788)
    assert world.cli("--org", "acme", "serve").exit_code == 0
    app, _, port = ran.pop()
    assert not isinstance(app, host_app.Host) and port == 8787  # today's single receiver, for that organisation


def test_the_host_s_own_page_is_at_host(world):
    from synctool.web import host_page

    with TestClient(host_app.build(world.environ, host_routes=host_page.routes(world.environ)), follow_redirects=False) as client:
        assert client.get("/host/").headers["location"] == "/host/sign-in"
        assert client.get("/health").json()["status"] == "ok" and client.get("/o/nope/").status_code == 404


def test_doctor_fails_a_square_notification_url_outside_the_organisation_s_prefix(world):
    """``doctor``'s Square check (its hook, run here alone: the whole doctor would ask the public URL)."""
    from synctool import platforms, store
    from synctool.platforms.square import notification

    platforms.registered()
    world.add("pine", "square")
    config = world.folder("pine") / "config.yaml"
    try:
        config.write_text(config.read_text() + f"pos:\n  notification_url: {PUBLIC}/webhooks/pos\n")  # a single install's
        rt = Runtime.from_environ(environ=host_app.organisation_environ(world.environ), org="pine")
        conn = store.connect(rt.db_path)
        try:
            [(check, status, detail, _)] = notification.checks(conn, rt)
        finally:
            conn.close()
        assert (check, status) == ("pos notification url", "fail") and "/o/pine/webhooks/pos" in detail
    finally:
        assert world.cli("orgs", "remove", "pine", "--erase", "--yes").exit_code == 0
