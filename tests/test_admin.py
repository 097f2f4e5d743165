"""The operator surface: the admin API's roles on every route, users and tokens, alerts, checks, dev
operations, and that no secret ever shows."""

from __future__ import annotations

import json
import socketserver
import threading

import pytest
from starlette.testclient import TestClient

from synctool import platforms, store
from synctool.config import Config
from synctool.fakes import samples
from synctool.web.admin_api import routes, table
from synctool.web.receiver import create_app
from tests.conftest import CRM_KEY, TEST_SECRETS
from tests.helpers import runtime

JWT_SECRET = "jwt-test-secret-5f4e3d2c1b-0a9b8c7d6e5f"


@pytest.fixture
def api(world, cli, env, db):
    env["ADMIN_JWT_SECRET"] = JWT_SECRET
    assert cli("crm", "refresh").exit_code == 0
    tokens = {}
    for role in ("viewer", "admin", "super_admin"):
        assert cli("users", "invite", f"{role}@example.org", "--role", role).exit_code == 0
        out = cli("users", "token", f"{role}@example.org").stdout
        tokens[role] = next(line.split()[1] for line in out.splitlines() if line.startswith("token"))
    config = runtime()
    with TestClient(create_app(config, routes=routes(config))) as client:
        client.tokens = tokens
        client.world = world
        yield client


def call(client, method: str, path: str, role: str | None, **kw):
    headers = {"Authorization": f"Bearer {client.tokens[role]}"} if role else {}
    return client.request(method, path, headers=headers, **kw)


def seed_failed_job(db) -> str:
    from synctool.queue import jobs

    with store.atomic(db):
        job_id = jobs.enqueue(db, source="pos", entity_type="order", entity_id="X1")
        db.execute("UPDATE jobs SET status = 'failed', last_error = 'boom', attempts = 3 WHERE id = ?", (job_id,))
    return job_id


def seed_held_gift(db) -> str:
    """A gift's job held for a donor decision, with one candidate; returns the match's id."""
    from synctool.crm import matching
    from synctool.crm.constituents import Person
    from synctool.queue import jobs
    from synctool.queue.unit import Unit

    with store.atomic(db):
        job_id = jobs.enqueue(db, source="donations", entity_type="transaction", entity_id="H1", external_id="donations_H1")
        db.execute("UPDATE jobs SET status = 'review' WHERE id = ?", (job_id,))
        candidate = matching.Candidate("959480", "Robert Smith", ["Bob and Robert are one name (nickname)"], [])
        person = Person(first_name="Bob", last_name="Smith", email=f"bob-{job_id[:8]}@example.org")
        return str(matching.hold(Unit(db), jobs.get(db, job_id), person, [candidate], "may be Robert Smith"))


def seed_currency_hold(db) -> str:
    """A sale's job held for money in another currency (``crm.currency``); returns the job's id."""
    from decimal import Decimal

    from synctool.crm import currency
    from synctool.queue import jobs
    from synctool.queue.unit import Unit

    with store.atomic(db):
        job_id = jobs.enqueue(db, source="pos", entity_type="order", entity_id="CAD1", external_id="pos_order_CAD1")
        db.execute("UPDATE jobs SET status = 'review' WHERE id = ?", (job_id,))
        currency.hold(Unit(db), job_id=job_id, source="pos", kind="gift", key=f"pos_order_CAD1-{job_id}", external_id="pos_order_CAD1",
                      amount=Decimal("74.16"), currency="CAD", org="USD")  # fmt: skip
    return job_id


def request_for(method: str, path: str, ids: dict[str, str]) -> tuple[str, dict]:
    """A request to the route that its operation can satisfy against the fakes."""
    url = (
        path.replace(
            "{id}",
            ids["job"]
            if "/syncs/" in path or "/jobs/" in path
            else ids["match"]
            if "/matches/" in path
            else "PLAN-1"
            if "/plans/" in path
            else ids["user"],
        )
        .replace("{orderId}", "ORDER-1")
        .replace("{paymentId}", "pay-1")
        .replace("{jobId}", ids["job"])
        .replace("{year}", "2025")
        .replace("{campaign}", "555")
    )
    bodies = {
        "/api/syncs/{id}/resolve": {"notes": "handled", "resolvedBy": "sam"},
        "/api/jobs/{id}/release": {"amount": "54.12"},
        "/api/settings/crm-environment": {"environment": "production"},
        "/api/settings/alert-recipients": {"emails": ["ops@example.org"]},
        "/api/settings/mailing-sync-enabled": {"enabled": True},
        "/api/settings/refund-policy": {"policy": "delete"},
        "/api/settings/soft-credits": {"enabled": False},
        "/api/settings/donor-updates": {"policy": "add"},
        "/api/settings/donor-matching": {"policy": "auto"},
        "/api/donors/changes/apply": {"all": True},
        "/api/donors/changes/dismiss": {"all": True},
        "/api/settings/pos-default-constituent": {"email": "walkin@example.org", "first_name": "Walk", "last_name": "In"},
        "/api/users/invite": {"email": f"new-{ids['job'][:8]}@example.org", "role": "viewer"},
        "/api/users/{id}": {"role": "viewer"},
        "/api/mappings/overrides": {"campaign": "118722", "fund_id": 2398},
        "/api/mappings/funds": {"fund": "BUILDING", "fund_id": 2401},
        "/api/mappings/events": {"campaign": "555", "event_id": 1069},
        "/api/mappings/plans": {"group_id": 704},
        "/api/settings/plans-report-changes": {"enabled": True},
        "/api/settings/plans-chat-webhook": {"url": None},
        "/api/pos/orders/enrich": {"orderIds": ["ORDER-1"]},
        "/api/pos/location-overrides": [{"location_id": "FPYCBCHYMXFK1", "fund_id": 2402}],
        "/api/mailing/mappings": {"list_id": "b7e21c0d94", "label": "News"},
        "/api/mailing/tag-rules": {"list_id": "*", "event": "unsubscribe", "add": [12222], "remove": []},
        "/api/inject-webhook": {"source": "pos", "payload": json.loads(samples.square_order_event("INJ-1"))},
        "/api/admin/crm/config/api": {"base_url": ids["crm_url"]},
        "/api/admin/crm/environment": {"environment": "production"},
        "/api/reconcile/accept": {"external_id": "donations_DIFF", "note": "reviewed"},
        "/api/users/login-link": {"email": "viewer@example.org"},
    }
    return url, ({"json": bodies[path]} if path in bodies and method != "GET" else {})


SPEC_ROLES = {r.path: r.role for r in table(Config())}


@pytest.mark.registry
def test_every_route_by_role(api, db, monkeypatch):
    world = api.world
    world.square.orders["ORDER-1"] = {
        "id": "ORDER-1",
        "location_id": "FPYCBCHYMXFK1",
        "state": "OPEN",
        "created_at": "2026-11-20T10:00:00Z",
        "total_money": {"amount": 100, "currency": "USD"},
    }
    from synctool.platforms.portal import records as portal_records

    with store.atomic(db):
        portal_records.upsert(db, "user", {"id": "u-1", "email": "p@example.org", "last_name": "P"})
        portal_records.upsert(
            db, "payment", {"id": "pay-1", "user_id": "u-1", "type": "donation", "status": "pending", "amount_cents": 100}
        )
    from synctool import settings
    from synctool.ops.reconcile import LAST_RUN

    difference = {"external_id": "donations_DIFF", "source": "donations", "status": "missing", "platform_amount": "5.00",
                  "crm_amount": None, "reason": "never arrived"}  # fmt: skip
    with store.atomic(db):  # a reconcile's difference to accept, and a year-end check to read
        settings.put(db, LAST_RUN, {"at": store.iso(), "from": "2026-10-01", "to": "2026-10-31", "items": [difference]})
        settings.put(db, "year_end:2025", {"at": store.iso(), "blockers": 0, "by_kind": {}, "items": []})
    with store.atomic(db):  # a monthly donor's plan to read
        db.execute(
            "INSERT INTO plans (plan_id, email, status, updated_at) VALUES ('PLAN-1', 'p@example.org', 'active', ?)",
            (store.iso(),),
        )
    user_id = str(db.execute("SELECT id FROM users WHERE email = 'viewer@example.org'").fetchone()[0])
    rank = {"viewer": 0, "admin": 1, "super_admin": 2}

    def request(method, path):
        match = seed_held_gift(db) if "/matches/" in path else ""
        if "/events" in path:  # an event campaign mapped to a CRM event, for each call (one removes it)
            from synctool.ops import events

            events.set_mapping(db, events.EventMappingBody(campaign="555", event_id=1069))
        return request_for(
            method,
            path,
            {
                "job": seed_currency_hold(db) if path.endswith("/release") else seed_failed_job(db),
                "user": user_id,
                "match": match,
                "crm_url": world.env()["CRM_API_BASE_URL"],
            },
        )

    for method, path, min_role in ((r.method, r.path, r.role) for r in table(Config())):
        url, kw = request(method, path)
        assert call(api, method, url, None, **kw).status_code == 401, path
        bad = api.request(method, url, headers={"Authorization": "Bearer not.a.token"}, **kw)
        assert bad.status_code == 401 and bad.json()["error"] == "unauthorized", path
        for role in ("viewer", "admin", "super_admin"):
            if path == "/api/reset-test-data":
                continue  # checked below: it would wipe the seeded data
            url, kw = request(method, path)  # a fresh record for each call that changes one
            response = call(api, method, url, role, **kw)
            if rank[role] < rank[min_role]:
                assert response.status_code == 403, (path, role, response.text)
                assert response.json()["error"] == "forbidden"
            else:
                assert response.status_code == 200, (method, path, role, response.text)
    reset = call(api, "POST", "/api/reset-test-data", "admin")
    assert reset.status_code == 409 and "sandbox" in reset.json()["error"]
    assert call(api, "POST", "/api/reset-test-data", "viewer").status_code == 403


def test_spec_role_column():
    assert SPEC_ROLES["/api/syncs"] == "viewer" and SPEC_ROLES["/api/stats"] == "viewer"
    assert SPEC_ROLES["/api/refunds"] == "viewer"  # read-only, like the sync log it sits beside
    assert SPEC_ROLES["/api/syncs/{id}/resolve"] == "admin"
    assert {SPEC_ROLES[p] for p in ("/api/users", "/api/users/invite", "/api/users/{id}")} == {"super_admin"}
    # the overview is the stats and the sync log's counts; the staff actions are the sync log's record of who did what
    viewer_reads = ("/api/syncs", "/api/syncs/{id}", "/api/stats", "/api/refunds", "/api/overview", "/api/actions",
                    "/api/events", "/api/events/{campaign}", "/api/plans", "/api/plans/{id}")  # fmt: skip
    assert all(role == "viewer" for path, role in SPEC_ROLES.items() if path in viewer_reads)
    assert all(
        role == "admin" for path, role in SPEC_ROLES.items() if path not in viewer_reads and not path.startswith("/api/users")
    )


def test_errors_are_json_and_bounded(api, db):
    assert call(api, "GET", "/api/syncs?limit=100000", "viewer").status_code == 422
    bad_sort = call(api, "GET", "/api/syncs?sort=password", "viewer")
    assert bad_sort.status_code == 422 and bad_sort.json()["error"].startswith("sort: must be one of created_at")
    assert bad_sort.json()["detail"] == "in the query string"
    missing = call(api, "POST", "/api/mappings/funds", "admin", json={"fund": "X"})
    assert missing.status_code == 422 and missing.json()["error"] == "fund_id: is required"
    extra = call(api, "POST", "/api/users/invite", "super_admin", json={"email": "x@example.org", "rolee": "admin"})
    assert extra.status_code == 422 and extra.json()["error"] == "rolee: unknown key"
    assert call(api, "GET", "/api/syncs?page=x", "viewer").status_code == 422
    assert call(api, "GET", "/api/syncs/does-not-exist", "viewer").status_code == 404
    r = api.request(
        "PATCH",
        "/api/settings/mailing-sync-enabled",
        content=b"{nope",
        headers={"Authorization": f"Bearer {api.tokens['admin']}"},
    )
    assert r.status_code == 422 and r.json()["error"] == "body is not valid JSON"
    assert call(api, "PATCH", "/api/settings/mailing-sync-enabled", "admin", json={"enabled": "yes"}).status_code == 422
    assert call(api, "PATCH", "/api/users/999", "super_admin", json={"role": "admin"}).status_code == 404


def test_api_and_cli_give_the_same_results(api, cli, db):
    seed_failed_job(db)
    via_api = call(api, "GET", "/api/syncs?status=failed", "viewer").json()
    via_cli = json.loads(cli("syncs", "list", "--status", "failed", "--json").stdout)
    assert via_api == via_cli
    assert call(api, "GET", "/api/stats", "viewer").json()["total"] == json.loads(cli("stats", "--json").stdout)["total"]
    call(api, "PATCH", "/api/settings/alert-recipients", "admin", json={"emails": ["a@example.org"]})
    assert json.loads(cli("settings", "alert-recipients", "--json").stdout) == {"emails": ["a@example.org"]}


def test_poll_now_polls_what_synctool_poll_polls(api, cli, db):
    """``POST /api/poll-now`` (and its ``/api/dev/poll-now`` twin) is `synctool poll`: every platform in use that
    polls, not one platform's; ``/api/poll-fresh`` is `synctool poll --fresh`."""
    polled = {p.role for p in platforms.in_use(Config()) if p.poll}
    assert len(polled) > 1
    for path in ("/api/poll-now", "/api/dev/poll-now", "/api/poll-fresh"):
        assert call(api, "POST", path, "viewer").status_code == 403
        answer = call(api, "POST", path, "admin")
        assert answer.status_code == 200, answer.text
        assert set(answer.json()["sources"]) == polled and answer.json()["ok"], answer.text
    via_cli = json.loads(cli("poll", "--json").stdout)
    assert set(via_cli["sources"]) == polled
    done = call(api, "GET", "/api/actions", "viewer").json()["items"]
    assert {"POST /api/poll-now", "POST /api/dev/poll-now", "POST /api/poll-fresh"} <= {a["action"] for a in done}


def test_an_api_request_opens_one_connection(api, monkeypatch):
    """The token check, the role check, the handler and its staff-action record share the request's connection."""
    opened = []
    real = store.connect

    def counting(*args, **kwargs):
        opened.append(real(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(store, "connect", counting)
    assert call(api, "PATCH", "/api/settings/alert-recipients", "admin", json={"emails": ["a@example.org"]}).status_code == 200
    assert call(api, "PATCH", "/api/settings/alert-recipients", "viewer", json={"emails": []}).status_code == 403
    assert call(api, "GET", "/api/stats", "viewer").status_code == 200
    assert len(opened) == 3
    done = call(api, "GET", "/api/actions", "viewer").json()["items"]
    assert [a["outcome"][:7] for a in done[:2]] == ["refused", "done"]


def test_deactivated_users_tokens_stop_working(api, cli, db):
    assert call(api, "GET", "/api/stats", "viewer").status_code == 200
    user_id = db.execute("SELECT id FROM users WHERE email = 'viewer@example.org'").fetchone()[0]
    assert call(api, "PATCH", f"/api/users/{user_id}", "super_admin", json={"deactivate": True}).status_code == 200
    r = call(api, "GET", "/api/stats", "viewer")
    assert r.status_code == 401 and "deactivated" in r.json()["detail"]
    # a role change applies at once, whatever the token says
    admin_id = db.execute("SELECT id FROM users WHERE email = 'admin@example.org'").fetchone()[0]
    cli("users", "update", str(admin_id), "--role", "viewer")
    assert call(api, "GET", "/api/settings/alert-recipients", "admin").status_code == 403


class SmtpSink(socketserver.ThreadingTCPServer):
    """A plain SMTP server on loopback that offers AUTH but no STARTTLS, and records every command and message it is
    sent (tests/drills/test_mail_tls.py drills the real TLS handshakes)."""

    allow_reuse_address = True
    daemon_threads = True

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.messages: list[str] = []
        sink = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                self.wfile.write(b"220 sink ready\r\n")
                data: list[str] | None = None
                for raw in self.rfile:
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    if data is not None:
                        if line == ".":
                            sink.messages.append("\n".join(data))
                            data = None
                            self.wfile.write(b"250 queued\r\n")
                        else:
                            data.append(line)
                        continue
                    sink.commands.append(line)
                    verb = line.split(" ", 1)[0].upper()
                    if verb == "EHLO":
                        self.wfile.write(b"250-sink\r\n250-AUTH PLAIN LOGIN\r\n250 OK\r\n")
                    elif verb == "AUTH":
                        self.wfile.write(b"235 ok\r\n")
                    elif verb == "DATA":
                        data = []
                        self.wfile.write(b"354 go ahead\r\n")
                    elif verb == "QUIT":
                        self.wfile.write(b"221 bye\r\n")
                        return
                    else:
                        self.wfile.write(b"250 OK\r\n")

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    @property
    def port(self) -> int:
        return self.server_address[1]

    def verbs(self) -> list[str]:
        return [c.split(" ", 1)[0].upper() for c in self.commands]


def test_alerts_digest_and_test(world, cli, db, tmp_path):
    sink = SmtpSink()
    (tmp_path / "config.yaml").write_text(f"smtp:\n  host: 127.0.0.1\n  port: {sink.server_address[1]}\n  security: none\n")
    assert cli("alerts", "test").exit_code == 2  # no recipients yet
    cli("settings", "alert-recipients", "ops@example.org")
    assert cli("alerts", "test").exit_code == 0
    assert "Subject: synctool: test alert" in sink.messages[-1]
    from synctool.errors import PermanentError
    from synctool.queue.worker import HANDLERS

    HANDLERS[("pos", "doomed")] = lambda event, ctx: (_ for _ in ()).throw(PermanentError("fund 77 does not exist"))
    try:
        with store.atomic(db):
            from synctool.queue import jobs

            jobs.enqueue(db, source="pos", entity_type="doomed", entity_id="1")
        result = cli("drain")
        assert "alert sent to 1 recipient(s) about 1 failed job(s)" in result.output
        assert "fund 77 does not exist" in sink.messages[-1]
        count = len(sink.messages)
        cli("drain")  # nothing new failed: no e-mail
        assert len(sink.messages) == count
    finally:
        HANDLERS.pop(("pos", "doomed"))
    sink.shutdown()


@pytest.mark.registry
def test_test_connections_and_doctor(world, cli, env):
    result = cli("test-connections")
    tested = 1 + sum(bool(p.client and p.client.probe) for p in platforms.in_use(Config()))  # the CRM and each one in use
    assert result.exit_code == 0 and [line.split()[1] for line in result.output.splitlines()] == ["ok"] * tested
    del env["PAYMENTS_API_KEY"]  # a platform in use without its key fails, alone: the others are tested all the same
    unset = cli("test-connections")
    assert unset.exit_code == 1 and "payments   FAIL  PAYMENTS_API_KEY" in unset.output, unset.output
    assert "mailing    ok" in unset.output
    doctor = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert doctor["secret PAYMENTS_API_KEY"]["status"] == "fail"
    assert doctor["secret PAYMENTS_API_KEY"]["fix"].startswith("export PAYMENTS_API_KEY=")  # no keyring here: no keyring advice
    assert "keyring" not in doctor["secret PAYMENTS_API_KEY"]["fix"]
    env["POS_ACCESS_TOKEN"] = "wrong"
    failed = cli("test-connections")
    assert failed.exit_code == 1 and "pos        FAIL" in failed.output
    doctor = cli("doctor", "--json")
    checks = {c["check"]: c for c in json.loads(doctor.stdout)}
    assert checks["secret CRM_API_KEY"]["detail"] == "set (environment)" and checks["cron drain"]["status"] == "fail"
    cli("drain")
    assert {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}["cron drain"]["status"] == "ok"


def test_dev_operations(world, cli, db):
    refused = cli("dev", "reset-test-data", "--yes")
    assert refused.exit_code == 4 and "sandbox" in refused.output
    seed_failed_job(db)
    cli("crm", "environment", "sandbox")
    cli("crm", "config", "--base-url", world.env()["CRM_API_BASE_URL"])
    out = json.loads(cli("dev", "reset-test-data", "--yes").stdout)
    assert out["deleted"]["jobs"] == 1 and db.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
    assert "drain" in cli("dev", "poll-cron").output


def test_retry_all_fresh_refetches_the_transaction(world, cli, db):
    import copy

    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    from synctool.queue import jobs

    with store.atomic(db):
        job_id = jobs.enqueue(
            db,
            source="donations",
            entity_type="transaction",
            entity_id=txn["id"],
            external_id="donations_" + txn["id"],
            payload={"transaction": {**txn, "email": None, "last_name": None}},
        )
    cli("drain")
    assert jobs.get(db, job_id)["status"] == "failed"  # no supporter to match
    world.givebutter.add_transaction(txn)
    result = json.loads(cli("retry-all", "--fresh", "--json").stdout)
    assert result["refetched"] == 1 and result["requeued"] == 1
    cli("drain")
    assert jobs.get(db, job_id)["status"] == "succeeded"


def test_no_secret_ever_shows(api, cli, db, caplog, world):
    secrets = [
        *TEST_SECRETS.values(),
        CRM_KEY,
        JWT_SECRET,
        world.env()["POS_ACCESS_TOKEN"],
        world.env()["DONATIONS_API_KEY"],
        world.env()["MAILING_API_KEY"],
    ]
    outputs = []
    for args in (
        ["doctor", "--json"],
        ["crm", "test-connection", "--json"],
        ["test-connections", "--json"],
        ["crm", "environment", "--json"],
        ["deliveries", "list", "--json"],
        ["syncs", "list", "--json"],
        ["crm", "budget", "--json"],
        ["settings", "crm-environment", "--json"],
    ):
        outputs.append(cli(*args).output)
    body = samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION)
    api.post("/webhooks/donations", content=body, headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]})
    outputs.append(api.post("/webhooks/donations", content=body, headers={"Signature": "wrong"}).text)
    outputs.append(cli("drain").output)
    outputs.append(cli("deliveries", "show", "1", "--json").output)
    for method, path in (("GET", "/api/admin/crm/test-connection"), ("GET", "/api/test-connections"), ("GET", "/api/syncs")):
        outputs.append(call(api, method, path, "admin").text)
    outputs.append("\n".join(r.getMessage() for r in caplog.records))
    dump = "\n".join(
        str(tuple(row))
        for table in ("deliveries", "jobs", "settings", "caches", "mappings", "users")
        for row in db.execute(f"SELECT * FROM {table}")
    )
    for secret in secrets:
        for text in outputs + [dump]:
            assert secret not in text, secret


@pytest.mark.registry
def test_every_bad_caller_is_refused_on_every_route(api):
    """Starlette's authentication middleware in front of every route: each kind of bad token gets a JSON 401."""
    import time

    import jwt

    claims = {"sub": "admin@example.org", "role": "super_admin", "ver": 0, "exp": int(time.time()) + 600}
    callers = {
        "malformed": "Bearer",
        "not bearer": f"Basic {api.tokens['admin']}",
        "garbage": "Bearer not.a.token",
        "wrong key": "Bearer " + jwt.encode(claims, "some-other-secret-0123456789abcdef", algorithm="HS256"),
        "expired": "Bearer " + jwt.encode({**claims, "exp": int(time.time()) - 5}, JWT_SECRET, algorithm="HS256"),
        "alg none": "Bearer " + jwt.encode(claims, None, algorithm="none"),
        "unknown user": "Bearer " + jwt.encode({**claims, "sub": "nobody@example.org"}, JWT_SECRET, algorithm="HS256"),
    }
    for method, path in ((r.method, r.path) for r in table(Config())):
        url = path.replace("{id}", "1").replace("{orderId}", "O").replace("{paymentId}", "P").replace("{jobId}", "J")
        for name, header in callers.items():
            r = api.request(method, url, headers={"Authorization": header})
            assert r.status_code == 401, (name, method, path, r.text)
            assert r.json()["error"] == "unauthorized", (name, path)
    assert "expired" in api.get("/api/stats", headers={"Authorization": callers["expired"]}).json()["detail"]
    assert api.get("/api/nothing-here", headers={"Authorization": f"Bearer {api.tokens['admin']}"}).status_code == 404
