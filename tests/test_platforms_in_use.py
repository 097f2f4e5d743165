"""Platforms in use (config ``platforms:``): one not in use is absent everywhere, one in use that fails fails alone
(DESIGN "Platforms in use"; README "Which platforms")."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from synctool import platforms
from synctool.fakes import samples
from synctool.web.admin_api import routes
from synctool.web.receiver import create_app
from tests.conftest import TEST_SECRETS
from tests.flow_helpers import CUSTOMER, add_order, pos_event, run_drain
from tests.helpers import runtime

TWO = "platforms: [givebutter, mailchimp]\n"
JWT_SECRET = "jwt-test-secret-5f4e3d2c1b-0a9b8c7d6e5f"


def use(isolated: Path, text: str) -> None:
    (isolated / "config.yaml").write_text(text)


def out(result) -> dict:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return json.loads(result.stdout)


def test_a_platform_not_in_use_has_no_route_no_checks_and_no_part_in_cross_platform_commands(world, cli, isolated, env):
    use(isolated, TWO)
    with TestClient(create_app(runtime())) as client:
        gone = client.post("/webhooks/pos", content=samples.square_order_event("O1"))
        assert gone.status_code == 404 and gone.json() == {
            "error": "pos is not in use",
            "detail": "this synctool does not take square deliveries",
        }
        body = samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION)
        taken = client.post("/webhooks/donations", content=body, headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]})
        assert taken.json()["status"] == "accepted"
    polled = out(cli("poll", "--json"))
    assert list(polled["sources"]) == ["donations"] and polled["sources"]["donations"]["status"] == "ok"
    assert [r["name"] for r in out(cli("test-connections", "--json"))] == ["crm", "donations", "mailing"]
    doctor = cli("doctor", "--json").stdout
    assert "POS_" not in doctor and "PAYMENTS_" not in doctor and "PORTAL_" not in doctor
    assert {c["check"]: c for c in json.loads(doctor)}["platforms"][
        "detail"
    ] == "in use: givebutter (donations), mailchimp (mailing)"
    reconciled = out(cli("reconcile", "--from", "7d", "--json"))
    assert list(reconciled["sources"]) == ["donations"]
    assert [r["source"] for r in out(cli("webhooks", "status", "--json"))["deliveries"]] == ["donations", "mailing"]
    listed = {p["name"]: p for p in out(cli("platforms", "--json"))}
    assert listed["square"]["in_use"] is False and listed["square"]["credentials"] is None
    assert listed["givebutter"]["in_use"] is True and listed["givebutter"]["credentials"] == "set"


@pytest.mark.parametrize(
    "args",
    [
        ("poll", "--source", "pos"),
        ("reconcile", "--source", "pos"),
        ("backfill", "--since", "7d", "--source", "pos"),
        ("webhooks", "heal", "--source", "payments"),
        ("webhooks", "status", "--source", "pos"),
        ("inject", "-", "--source", "pos"),
    ],
)
def test_a_source_not_in_use_is_refused_with_how_to_turn_it_on(world, cli, isolated, args):
    use(isolated, TWO)
    result = cli(*args, input="{}")
    assert result.exit_code == 2
    assert "is not in use" in result.stderr and "add " in result.stderr and "`platforms:`" in result.stderr, result.stderr


def test_an_unknown_platform_name_is_a_config_error(world, cli, isolated):
    use(isolated, "platforms: [givebutter, squarre]\n")
    result = cli("poll")
    assert result.exit_code == 2 and "platforms" in result.stderr and "'squarre'" in result.stderr, result.stderr


def test_a_missing_credential_of_a_platform_in_use_is_a_doctor_fail_with_its_fix(world, cli, isolated, env):
    use(isolated, TWO)
    del env["DONATIONS_API_KEY"]
    checks = {c["check"]: c for c in out(cli("doctor", "--json"))}
    row = checks["secret DONATIONS_API_KEY"]
    assert row["status"] == "fail" and row["fix"].startswith("export DONATIONS_API_KEY=")
    assert "leave it out of `platforms:`" in row["fix"]
    listed = {p["name"]: p for p in out(cli("platforms", "--json"))}
    assert listed["givebutter"]["credentials"] == "missing: DONATIONS_API_KEY"
    polled = cli("poll")
    assert polled.exit_code == 1 and polled.stderr.startswith("Error: poll donations failed: DONATIONS_API_KEY")


def refusing(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


@pytest.mark.parametrize("status", [401, 503])
def test_one_platform_failing_stops_no_other(world, cli, transports, status):
    """Square refusing the key or down: Givebutter's poll runs to the end, the command exits 1 naming Square (a
    refused connection: the drill tier, tests/drills/test_platform_drills.py)."""
    transports["pos"] = httpx.MockTransport(lambda r: httpx.Response(status, json={"errors": [{"detail": "no"}]}))
    result = cli("poll", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["sources"]["donations"]["status"] == "ok" and report["sources"]["donations"]["error"] is None
    assert report["sources"]["pos"]["status"] == "failed" and report["sources"]["pos"]["error"]
    assert report["failed"] == {"pos": report["sources"]["pos"]["error"]}
    assert result.stderr.strip().splitlines() == [f"Error: poll pos failed: {report['sources']['pos']['error']}"]
    connections = out(cli("test-connections", "--json"))
    probed = [p.role for p in platforms.in_use(runtime().config) if p.client and p.client.probe]
    assert "pos" in probed and "donations" in probed
    assert {r["name"]: r["ok"] for r in connections} == {"crm": True, **{role: role != "pos" for role in probed}}


def test_the_admin_api_runs_the_others_and_reports_the_failure(world, cli, transports, env):
    env["ADMIN_JWT_SECRET"] = JWT_SECRET
    assert cli("crm", "refresh").exit_code == 0
    transports["pos"] = httpx.MockTransport(refusing)
    assert cli("users", "invite", "admin@example.org", "--role", "admin").exit_code == 0
    token = next(
        line.split()[1] for line in cli("users", "token", "admin@example.org").stdout.splitlines() if line.startswith("token")
    )
    rt = runtime()
    with TestClient(create_app(rt, routes=routes(rt))) as client:
        answer = client.post("/api/dev/poll-cron", headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
        polled = answer.json()["poll"]
        assert polled["ok"] is False and set(polled["failed"]) == {"pos"}
        assert polled["sources"]["donations"]["status"] == "ok"
        # the specification's shapes: a CRM id as a string is taken, anything else refused by name
        put = client.put(
            "/api/pos/location-overrides",
            headers={"Authorization": f"Bearer {token}"},
            json=[{"location_id": "FPYCBCHYMXFK1", "fund_id": "2398", "campaign_id": 822}],
        )
        assert put.status_code == 200 and put.json()[0]["fund_id"] == 2398, put.text
        bad = client.put(
            "/api/pos/location-overrides",
            headers={"Authorization": f"Bearer {token}"},
            json=[{"location_id": "L", "fund_id": "six"}],
        )
        assert bad.status_code == 422 and bad.json()["error"].startswith("0.fund_id: not a CRM id: 'six'"), bad.text


def test_a_platform_not_in_use_has_no_admin_routes(world, cli, env, isolated):
    use(isolated, TWO)
    env["ADMIN_JWT_SECRET"] = JWT_SECRET
    assert cli("users", "invite", "admin@example.org", "--role", "admin").exit_code == 0
    token = next(
        line.split()[1] for line in cli("users", "token", "admin@example.org").stdout.splitlines() if line.startswith("token")
    )
    rt = runtime()
    with TestClient(create_app(rt, routes=routes(rt))) as client:
        assert client.get("/api/pos/location-overrides", headers={"Authorization": f"Bearer {token}"}).status_code == 404
        assert client.get("/api/donations/campaigns", headers={"Authorization": f"Bearer {token}"}).status_code == 200


def test_init_writes_the_platforms_in_use_and_keeps_the_rest_of_the_file(cli, isolated):
    (isolated / "config.yaml").write_text("# mine\ntimezone: America/New_York\nplatforms:\n  - square\n# after\n")
    result = cli("init", "--platforms", "givebutter,mailchimp")
    assert result.exit_code == 0, result.output
    text = (isolated / "config.yaml").read_text()
    assert text.startswith("# mine\ntimezone: America/New_York\n") and text.rstrip().endswith("# after")
    assert "platforms: [givebutter, mailchimp]" in text and "- square" not in text
    assert cli("init", "--platforms", "givebutter").exit_code == 0
    assert (isolated / "config.yaml").read_text().count("platforms:") == 1
    refused = cli("init", "--platforms", "givebutter,nope")
    assert refused.exit_code == 2 and "'nope'" in refused.stderr


def test_init_names_the_built_in_platforms_in_a_new_config(cli, isolated, env):
    """A new config names its platforms: a platform package installed later changes nothing until it is named."""
    import dataclasses

    (isolated / "config.yaml").unlink(missing_ok=True)
    givebutter = next(p for p in platforms.registered() if p.name == "givebutter")
    platforms.register(dataclasses.replace(givebutter, name="later", role="later", webhook=None, client=None,
                                           fake=None, external_id_prefixes=(), config=None, commands={}, settings=()))  # fmt: skip
    try:
        result = cli("init")
        assert result.exit_code == 0, result.output
        assert f"platforms: [{', '.join(platforms.DEFAULT_PLATFORMS)}]" in (isolated / "config.yaml").read_text()
        listed = {p["name"]: p["in_use"] for p in out(cli("platforms", "--json"))}
        assert listed["later"] is False and all(listed[name] for name in platforms.DEFAULT_PLATFORMS)
    finally:
        platforms.unregister("later")


def test_an_unlinked_square_refund_says_so(coded, receiver, db):
    """A refund given without its sale (Square's ``unlinked``; its return order names no source order)."""
    add_order(coded, "RET1", "COMPLETED", customer=CUSTOMER)
    coded.square.orders["RET1"]["returns"] = [{"uid": "r1"}]  # no source_order_id
    refund = {"id": "RFU", "status": "COMPLETED", "unlinked": True, "order_id": "RET1", "location_id": "FPYCBCHYMXFK1",
              "amount_money": {"amount": 500, "currency": "USD"}, "created_at": "2026-11-21T17:00:00Z"}  # fmt: skip
    job_id = pos_event(receiver, samples.square_refund_notice(refund))["job_id"]
    run_drain()
    row = db.execute("SELECT status, last_error FROM jobs WHERE id = ?", (job_id,)).fetchone()
    assert row["status"] == "failed" and "is unlinked" in row["last_error"], row["last_error"]
    # the same return order, its refund not flagged unlinked: the return's missing source says it all the same
    refund.update(id="RFU2", unlinked=False)
    job_id = pos_event(receiver, samples.square_refund_notice(refund))["job_id"]
    run_drain()
    assert "is unlinked" in db.execute("SELECT last_error FROM jobs WHERE id = ?", (job_id,)).fetchone()["last_error"]


def test_reconcile_with_a_platform_down_compares_the_others_and_calls_none_of_its_gifts_extra(coded, receiver, cli, transports):
    add_order(coded, "SOLD1", "COMPLETED", customer=CUSTOMER, tenders=[{"type": "CARD"}])
    pos_event(receiver, samples.square_order_event("SOLD1"))
    run_drain()
    assert any(g["external_id"] == "pos_order_SOLD1" for g in coded.crm.gifts.values())
    transports["pos"] = httpx.MockTransport(lambda r: httpx.Response(401, json={"errors": [{"detail": "bad token"}]}))
    result = cli("reconcile", "--from", "400d", "--json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and result.stderr.startswith("Error: reconcile pos failed: ")
    assert report["sources"]["pos"]["status"] == "failed" and "pos" not in report["platform_requests"]
    assert not [r for r in report["items"] if r["source"] == "pos"]  # not compared: never "extra"


def test_the_daily_summary_leaves_out_a_platform_not_in_use(world, cli, isolated, db):
    from synctool import store
    from synctool.queue import jobs

    with store.atomic(db):
        jobs.enqueue(db, source="pos", entity_type="order", entity_id="OLD")  # from when Square was in use
        jobs.enqueue(db, source="donations", entity_type="transaction", entity_id="NEW")
    use(isolated, TWO)
    summary = out(cli("alerts", "summary", "--dry-run", "--json"))
    assert "donations" in summary["per_source"] and "pos" not in summary["per_source"]
