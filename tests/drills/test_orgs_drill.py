"""Many organisations on one install, drilled with the real processes (issue 58; README "Many organisations").

Three organisations on one host, each with its own fake CRM account (its own key and rate limit) and its own
Givebutter: one `synctool serve` answers all three under `/o/NAME/`, and the cron commands run with no `--org`
(`poll`, then `drain`) do each organisation's work. A giving day at two of them at once: every gift lands in its own
organisation's CRM and nowhere else, each CRM within its account's limits and the busy ones near them, the quiet
organisation's gifts made while the busy ones still wait. Then the attacks: A's signature at B's URL, A's session,
sign-in link and API token at B's pages and API; then `orgs remove --erase` while serve runs, and an existing single
install imported with every row kept.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from synctool.fakes.world import FakeWorld
from tests.drills.conftest import ROOT, crm_state, givebutter_delivery
from tests.drills.test_platform_drills import givebutter_transaction
from tests.helpers import free_port, wait_for

ORGS = ("alder", "birch", "cedar")  # alder and birch have a giving day, cedar a quiet morning
BUSY, GIFTS, QUIET_GIFTS = ("alder", "birch"), 24, 2
#: each organisation's CRM account, scaled down from LGL's 300 requests in 300 s: the pacer's numbers and the fake's
LIMIT, WINDOW_S = 24, 2.0


class Host:
    """A host's data folder and the real processes its operator runs, every organisation's fakes on loopback."""

    def __init__(self, folder: Path, worlds: dict[str, FakeWorld]):
        self.folder = folder
        self.home = folder / "home"
        self.worlds = worlds
        keep = {
            k: v for k, v in __import__("os").environ.items() if not k.startswith(("SYNCTOOL_", "CRM_", "POS_", "DONATIONS_"))
        }
        self.env = {
            **keep,
            "SYNCTOOL_HOME": str(self.home),
            "SYNCTOOL_KEYRING": "off",
            # the host's tuning (the only settings an organisation takes from the environment): each account's
            # pacing scaled down, quick retries and leases
            "CRM_RATE_LIMIT_REQUESTS": str(LIMIT),
            "CRM_SHARE_REQUESTS": str(LIMIT),
            "CRM_RATE_LIMIT_WINDOW_S": str(WINDOW_S),
            "CRM_MIN_INTERVAL_MS": "20",
            "CRM_RETRY_BASE_MS": "10",
            "PLATFORM_API_RETRY_BASE_MS": "10",
            "CRM_TIMEOUT_S": "2",
            "QUEUE_RETRY_DELAY_MS": "100",
        }
        self.procs: list[subprocess.Popen] = []
        self.port = free_port()

    def run(self, *args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [sys.executable, "-m", "synctool.cli.main", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def popen(self, *args: str) -> subprocess.Popen:
        log = open(self.folder / f"{args[0]}-{len(self.procs)}.log", "ab")
        proc = subprocess.Popen(
            [sys.executable, "-m", "synctool.cli.main", *args], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        log.close()
        self.procs.append(proc)
        return proc

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, name: str) -> None:
        """`orgs add`, then what its operator sets: its CRM and Givebutter (config), its secrets (secrets.env), its
        reference lists and mappings, the staff page and the API on, live."""
        world = self.worlds[name]
        self.run("orgs", "add", name, "--platforms", "givebutter")
        folder = self.home / "orgs" / name
        config = yaml.safe_load((folder / "config.yaml").read_text()) or {}
        config.setdefault("crm", {})["base_url"] = world.url("crm") + "/api/v1"
        config.setdefault("donations", {})["base_url"] = world.url("donations") + "/v1"
        config.setdefault("receiver", {}).update(admin_ui=True, admin_api=True, public_url="https://sync.example.org")
        config.setdefault("donors", {})["matching"] = "email"  # the sample donors share one name and street
        (folder / "config.yaml").write_text(yaml.safe_dump(config))
        secrets = {
            "CRM_API_KEY": world.crm.api_key,
            "DONATIONS_API_KEY": world.env()["DONATIONS_API_KEY"],
            "DONATIONS_WEBHOOK_SECRET": secret_of(name),
            "ADMIN_JWT_SECRET": f"jwt-{name}-0123456789abcdef0123456789abcdef",
        }
        (folder / "secrets.env").write_text("".join(f"{k}={v}\n" for k, v in secrets.items()))
        (folder / "secrets.env").chmod(0o600)
        for args in (
            ("crm", "refresh"),
            ("mappings", "types", "set", "donations:default", "--fund-id", "2398", "--campaign-id", "822"),
            ("mappings", "payments", "set", "donations:card", "--payment-type-id", "1509"),
            ("sync-mode", "live"),
        ):
            self.run("--org", name, *args)

    def database(self, name: str) -> Path:
        return self.home / "orgs" / name / "synctool.db"

    def rows(self, name: str, sql: str, *params: Any) -> list[tuple]:
        conn = sqlite3.connect(f"file:{self.database(name)}?mode=ro", uri=True, timeout=30)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def give(self, client: httpx.Client, org: str, n: int, *, secret: str | None = None) -> httpx.Response:
        body, headers = givebutter_delivery(n, email=f"{org}-donor{n}@example.org")
        body = body.replace(f'"T{n}"'.encode(), f'"{org.upper()}{n}"'.encode())
        headers["Signature"] = secret or secret_of(org)
        return client.post(f"{self.url}/o/{org}/webhooks/donations", content=body, headers=headers)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def secret_of(org: str) -> str:
    return f"gb-signing-secret-of-{org}"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    worlds = {name: FakeWorld(crm_limit=LIMIT, crm_window_s=WINDOW_S, serve=True) for name in ORGS}
    for name, world in worlds.items():
        world.crm.api_key = f"crm-key-of-{name}"  # three accounts: a request with another's key is refused
        world.start()
    h = Host(tmp_path, worlds)
    try:
        yield h
    finally:
        h.stop()
        for world in worlds.values():
            world.stop()


def gifts_in(world: FakeWorld) -> list[str]:
    return sorted(g["external_id"] for g in crm_state(world)["gifts"])


@pytest.mark.sqlite_only(reason="its host keeps each organisation in a SQLite file of its own")
def test_three_organisations_on_one_install(host: Host, tmp_path: Path):
    for name in ORGS:
        host.add(name)
    host.worlds["alder"].givebutter.add_transaction(givebutter_transaction("ALDERLOST", "lost@alder.example.org"))
    serve = host.popen("serve", "--host", "127.0.0.1", "--port", str(host.port))
    wait_for(f"{host.url}/health")

    # -- a giving day at alder and birch at once, two gifts at cedar ------------------------------------------------
    acknowledged: dict[str, int] = dict.fromkeys(ORGS, 0)
    lock = threading.Lock()

    def sender(org: str, count: int) -> None:
        with httpx.Client(timeout=10) as client:
            for n in range(count):
                r = host.give(client, org, n)
                assert r.status_code == 200, r.text
                with lock:
                    acknowledged[org] += 1

    threads = [threading.Thread(target=sender, args=(org, GIFTS if org in BUSY else QUIET_GIFTS)) for org in ORGS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert acknowledged == {"alder": GIFTS, "birch": GIFTS, "cedar": QUIET_GIFTS}

    polled = host.run("poll")  # cron's line, no --org: each organisation's poll; alder's finds its lost gift
    assert polled.stdout.startswith("== alder ==\npoll donations:") and "1 queued" in polled.stdout, polled.stdout
    assert "birch" not in polled.stdout and "cedar" not in polled.stdout  # a quiet part prints nothing, as cron wants

    started = time.time()
    drained = host.run("drain", "--max-seconds", "50", timeout=90)  # cron's line, no --org
    for org in ORGS:
        assert host.rows(org, "SELECT status, count(*) FROM jobs GROUP BY status") == [
            ("succeeded", (GIFTS if org in BUSY else QUIET_GIFTS) + (org == "alder"))
        ], (org, drained.stdout, drained.stderr)

    # every gift in its own organisation's CRM, and nowhere else
    for org in ORGS:
        expected = [f"donations_{org.upper()}{n}" for n in range(GIFTS if org in BUSY else QUIET_GIFTS)]
        expected += ["donations_ALDERLOST"] if org == "alder" else []
        assert gifts_in(host.worlds[org]) == sorted(expected), org
    # each CRM account within its limits, the busy ones near them
    for org in ORGS:
        stats = host.worlds[org].crm.stats()
        assert stats["rejected_429"] == 0 and stats["max_in_any_window"] <= LIMIT, (org, stats)
    for org in BUSY:
        crm = host.worlds[org].crm
        times = [r["at"] for r in crm.requests if r["status"] != 429 and r["at"] >= started]  # the drain's
        span = times[-1] - times[0]
        allowed = LIMIT * (span / WINDOW_S + 1)  # what the account allows over that span, its first window's burst too
        assert len(times) >= 0.9 * allowed * span / (span + WINDOW_S), (org, len(times), span)
        assert crm.stats()["max_in_any_window"] >= 0.9 * LIMIT, (org, crm.stats())
    # the quiet organisation's gifts were made while both busy ones still had gifts to make
    cedar_done = max(t for (t,) in host.rows("cedar", "SELECT finished_at FROM jobs"))
    for org in BUSY:
        busy_done = max(t for (t,) in host.rows(org, "SELECT finished_at FROM jobs"))
        assert cedar_done < busy_done, (org, cedar_done, busy_done)
    assert _seconds(cedar_done) - started < 15, (cedar_done, started)

    # -- the attacks ------------------------------------------------------------------------------------------------
    with httpx.Client(timeout=10, follow_redirects=False) as client:
        before = {org: host.rows(org, "SELECT count(*) FROM deliveries")[0][0] for org in ORGS}
        assert host.give(client, "birch", 999, secret=secret_of("alder")).status_code == 401
        for path in ("/o/nope/webhooks/donations", "/o/Alder/webhooks/donations", "/o/%2e%2e/webhooks/donations"):
            assert client.post(host.url + path, content=b"{}", headers={"Signature": secret_of("alder")}).status_code == 404
        assert {org: host.rows(org, "SELECT count(*) FROM deliveries")[0][0] for org in ORGS} == before

        host.run("--org", "alder", "users", "invite", "ann@alder.example.org", "--role", "admin")
        link = json.loads(host.run("--org", "alder", "users", "login-link", "ann@alder.example.org", "--json").stdout)["url"]
        assert link.startswith("https://sync.example.org/o/alder/admin/login/"), link
        token = link.rsplit("/", 1)[1]
        # A's sign-in link opened at B's page: refused, no session
        for method in ("GET", "POST"):  # shown by GET, spent by POST
            at_birch = client.request(method, f"{host.url}/o/birch/admin/login/{token}")
            assert "set-cookie" not in at_birch.headers and at_birch.status_code == 401, at_birch.status_code
        opened = client.post(f"{host.url}/o/alder/admin/login/{token}")  # and it still opens alder's
        assert opened.status_code == 303 and "Path=/o/alder/admin" in opened.headers["set-cookie"], opened.headers
        cookie = opened.headers["set-cookie"].split(";", 1)[0]
        assert client.get(f"{host.url}/o/alder/admin/", headers={"Cookie": cookie}).status_code == 200
        # A's session cookie at B's page: B does not know it
        at_b = client.get(f"{host.url}/o/birch/admin/", headers={"Cookie": cookie})
        assert at_b.status_code in (303, 401, 403) and "BIRCH" not in at_b.text, at_b.status_code
        # A's API token at B's API
        issued = host.run("--org", "alder", "users", "token", "ann@alder.example.org").stdout
        bearer = next(line.split()[-1] for line in issued.splitlines() if line.startswith("token"))
        auth = {"Authorization": f"Bearer {bearer}"}
        assert client.get(f"{host.url}/o/alder/api/overview", headers=auth).status_code == 200
        refused = client.get(f"{host.url}/o/birch/api/overview", headers=auth)
        assert refused.status_code in (401, 403) and "BIRCH" not in refused.text, refused.status_code

        # -- erasure while serve runs -----------------------------------------------------------------------------------
        removed = host.run("orgs", "remove", "cedar", "--erase", "--yes")
        assert "cedar" in removed.stdout
        assert not (host.home / "orgs" / "cedar").exists()
        assert host.give(client, "cedar", 7).status_code == 404
        assert client.get(f"{host.url}/o/cedar/admin/", headers={"Cookie": cookie}).status_code == 404
        assert host.give(client, "alder", 500).status_code == 200  # the others still answer
    assert serve.poll() is None
    listed = json.loads(host.run("orgs", "list", "--json").stdout)
    assert sorted(row["name"] for row in _rows(listed)) == ["alder", "birch"]


def _rows(listed: Any) -> list[dict]:
    return listed["items"] if isinstance(listed, dict) else listed


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.mark.sqlite_only(reason="it imports a single install's SQLite file into the host")
def test_a_single_install_moves_in_with_nothing_lost(coded_site, tmp_path: Path):
    """An install that ran for real (its receiver and drain) becomes an organisation, every row kept, while its
    serve still runs (its WAL copied with the rest)."""
    from tests.test_orgs import rows_of

    site = coded_site
    site.serve()
    for n in range(3):
        assert site.give(n).status_code == 200
    drained = site.run("drain", "--max-seconds", "20")
    assert drained.returncode == 0, drained.stdout + drained.stderr
    env = {k: v for k, v in site.env.items() if k not in ("SYNCTOOL_CONFIG", "SYNCTOOL_DB")}
    env["SYNCTOOL_HOME"] = str(tmp_path / "host")
    args = ["orgs", "import", "moved", "--config", str(site.folder / "config.yaml"), "--database", str(site.db_path)]
    moved = subprocess.run([sys.executable, "-m", "synctool.cli.main", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "CRM_API_KEY" in moved.stdout  # the secrets it must be given again, named
    assert rows_of(tmp_path / "host" / "orgs" / "moved" / "synctool.db") == rows_of(site.db_path)
    listed = subprocess.run([sys.executable, "-m", "synctool.cli.main", "--org", "moved", "syncs", "list", "--json"],
                            cwd=ROOT, env=env, capture_output=True, text=True)  # fmt: skip
    assert [row["status"] for row in json.loads(listed.stdout)["items"]] == ["succeeded"] * 3, listed.stdout
