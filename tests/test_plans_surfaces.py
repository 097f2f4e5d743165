"""Monthly donors on every surface (issue 53): `synctool plans list|show` (table and --json), the Plans page (what a
donor typed escaped), ``/api/plans``, the board's figures by currency, the overview's failed plans, the mapping,
the settings, the chat notice sent once (and refused for http://), doctor's warning, and reconcile's group check
with its fix. The plans are written into the platform's tables directly, dated from the clock."""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace

import httpx
import pytest

from synctool import notices, settings, store
from tests.helpers import runtime
from tests.test_events_page import api  # noqa: F401  (fixture)
from tests.test_staff_page import page, team  # noqa: F401  (fixtures)

HOSTILE = "<script>alert(1)</script>"
WEBHOOK = "https://hooks.slack.com/services/T0/B0/sEcReTtOkEn"


def ago(days: float) -> str:
    return store.iso(store.utcnow() - timedelta(days=days))


def plan(conn, plan_id: str, *, status: str = "active", constituent: str | None = None, amount: str = "10.00",
         currency: str = "USD", frequency: str = "monthly", first: str = "Ada", email: str | None = None) -> None:  # fmt: skip
    with store.atomic(conn):
        conn.execute(
            "INSERT INTO plans (plan_id, email, first_name, last_name, constituent_id, amount, currency, frequency, status,"
            " platform_status, started_at, next_charge, last_charge_at, failures, updated_at)"
            " VALUES (?, ?, ?, 'Lovelace', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (plan_id, email or f"{plan_id.lower()}@example.org", first, constituent, amount, currency, frequency, status,
             status, ago(200), ago(-20)[:10], ago(10), 1 if status == "failed" else 0, store.iso()),
        )  # fmt: skip


def event(conn, plan_id: str, kind: str, days: float) -> None:
    with store.atomic(conn):
        conn.execute(
            "INSERT INTO plan_events (id, plan_id, kind, at, detail) VALUES (?, ?, ?, ?, ?)",
            (f"evt-{plan_id}-{kind}-{days}", plan_id, kind, ago(days), f"plan.{kind}"),
        )


@pytest.fixture
def plans(db):
    """Four plans of three donors: Ada gives monthly in USD twice (one plan failed), Bob gave and canceled, Cleo
    gives yearly in EUR (held aside)."""
    plan(db, "PLAN1", constituent="101", amount="10.00", email="ada@example.org")
    plan(db, "PLAN2", status="failed", constituent="101", amount="30.00", frequency="quarterly", email="ada@example.org")
    event(db, "PLAN2", "failed", 2)
    plan(db, "PLAN3", status="canceled", constituent="102", first="Bob")
    event(db, "PLAN3", "canceled", 3)
    event(db, "PLAN3", "failed", 30)  # long ago: not in the overview's 7 days
    plan(db, "PLAN4", constituent="103", amount="120.00", currency="EUR", frequency="yearly", first=HOSTILE)
    event(db, "PLAN1", "created", 200)
    return db


def test_plans_list_and_show_in_a_table_and_as_json(cli, plans):
    listed = cli("plans", "list")
    assert listed.exit_code == 0 and "PLAN1" in listed.stdout and "Ada Lovelace" in listed.stdout
    assert "quarterly" in cli("plans", "list", "--columns", "plan_id,frequency,status").stdout
    data = json.loads(cli("plans", "list", "--json").stdout)
    assert {p["plan_id"] for p in data["items"]} == {"PLAN1", "PLAN2", "PLAN3", "PLAN4"}
    assert data["counts"]["active"] == 2 and data["counts"]["failed"] == 1 and data["counts"]["canceled"] == 1
    first = next(p for p in data["items"] if p["plan_id"] == "PLAN1")
    assert first["donor"] == "Ada Lovelace" and first["constituent_id"] == "101" and first["currency"] == "USD"
    assert set(first) >= {"amount", "frequency", "status", "since", "last_charge", "next_charge"}
    failed = json.loads(cli("plans", "list", "--status", "failed", "--json").stdout)
    assert [p["plan_id"] for p in failed["items"]] == ["PLAN2"]
    assert cli("plans", "list", "--status", "lost").exit_code == 2

    shown = json.loads(cli("plans", "show", "PLAN3", "--json").stdout)
    assert [e["kind"] for e in shown["events"]] == ["failed", "canceled"]
    assert shown["charges"] == [] and shown["follow_ups"] == [] and shown["membership"] is None
    table = cli("plans", "show", "PLAN3")
    assert table.exit_code == 0 and "canceled" in table.stdout and "group membership: none" in table.stdout
    unknown = cli("plans", "show", "NOPE")
    assert unknown.exit_code == 3 and "no plan NOPE" in unknown.stderr  # an unknown id, as everywhere


def test_figures_count_donors_once_and_hold_other_currencies_aside(plans):
    from synctool.ops.plans import failed_recently, figures, to_follow

    found = figures(plans, runtime())
    # active plans only: Ada's monthly 10 (her failed quarterly plan is not giving now) and Cleo's yearly EUR
    assert found["monthly_donors"] == 2 and found["active_plans"] == 2
    assert found["currency"] == "USD" and found["per_month"] == "10.00" and found["held"] == {"EUR": "10.00"}
    plan(plans, "PLAN5", constituent="104", amount="30.00", frequency="quarterly")
    assert figures(plans, runtime())["per_month"] == "20.00"
    assert failed_recently(plans) == 1
    lines = [f["message"] for f in to_follow(plans, ago(7))]
    assert len(lines) == 2 and "PLAN2 failed to charge" in lines[0] and "PLAN3 canceled" in lines[1]  # newest first


def test_the_plans_page_shows_them_escaped_and_each_plan(page, plans):  # noqa: F811
    viewer = page("viewer")
    shown = viewer.get("/admin/plans")
    assert shown.status_code == 200
    assert HOSTILE not in shown.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in shown.text
    assert "Monthly donors now" in shown.text and "10.00 EUR" in shown.text  # held aside
    failed = viewer.get("/admin/plans?status=failed")
    assert "PLAN2" in failed.text and "PLAN1" not in failed.text
    detail = viewer.get("/admin/plans/PLAN4")
    assert detail.status_code == 200 and HOSTILE not in detail.text and "yearly" in detail.text
    assert viewer.get("/admin/plans/NOPE").status_code == 404
    assert page().get("/admin/plans").status_code in (302, 303)
    overview = viewer.get("/admin/")
    assert "1 plan(s) failed in the last 7 days" in overview.text and "/admin/plans?status=failed" in overview.text


def test_the_api_answers_plans_to_viewers(api, plans):  # noqa: F811
    listed = api("GET", "/api/plans?status=active", "viewer")
    assert listed.status_code == 200 and {p["plan_id"] for p in listed.json()["items"]} == {"PLAN1", "PLAN4"}
    assert listed.json()["figures"]["held"] == {"EUR": "10.00"}
    assert api("GET", "/api/plans/PLAN2", "viewer").json()["status"] == "failed"
    missing = api("GET", "/api/plans/NOPE", "viewer")
    assert missing.status_code == 404 and missing.json()["error"] == "no plan NOPE"
    assert api("GET", "/api/plans").status_code == 401
    assert api("GET", "/api/plans?status=lost", "viewer").status_code == 422


def test_the_plans_mapping_is_checked_against_the_crm_lists_and_shown_by_name(cli, db, api):  # noqa: F811
    settings.cache_replace(db, "crm:groups", {"000000000012": {"id": 12, "name": "Monthly donors"}})
    settings.cache_replace(db, "crm:contact-report-types", {"000000000003": {"id": 3, "name": "Phone call"}})
    assert cli("mappings", "plans", "set", "--group", "99").exit_code != 0
    done = cli("mappings", "plans", "set", "--group", "12", "--report-type", "3", "--team-member", "dd@example.org")
    assert done.exit_code == 0, done.stdout + done.stderr
    shown = json.loads(cli("mappings", "plans", "show", "--json").stdout)
    assert shown["group"] == "Monthly donors" and shown["contact_report_type"] == "Phone call"
    from synctool import mappings

    assert mappings.get(db, "plans", "*") == {"group_id": 12, "contact_report_type_id": 3, "team_member": "dd@example.org"}
    assert api("GET", "/api/mappings/plans", "admin").json()["group_id"] == 12
    assert api("GET", "/api/mappings/plans", "viewer").status_code == 403
    assert api("POST", "/api/mappings/plans", "admin", json={"group_id": 7}).status_code == 422


def test_a_chat_notice_is_sent_once_and_the_url_never_shown(cli, db):
    refused = cli("settings", "plans-chat-webhook", "http://hooks.slack.com/x")
    assert refused.exit_code != 0 and "https" in refused.stderr
    assert notices.queue(db, "plan:PLAN2:evt1", "nobody to tell") is False  # no webhook: nothing queued
    set_ = cli("settings", "plans-chat-webhook", WEBHOOK, "--json")
    assert set_.exit_code == 0 and json.loads(set_.stdout) == {"host": "hooks.slack.com", "set": True}
    assert "sEcReTtOkEn" not in cli("settings", "plans-chat-webhook").stdout
    text = f"Plan PLAN2 failed: {HOSTILE} token Bearer abc.def {WEBHOOK} " + "x" * 3000
    assert notices.queue(db, "plan:PLAN2:evt1", text) is True
    assert notices.queue(db, "plan:PLAN2:evt1", text) is False  # a replay
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200 if len(seen) > 1 else 503)

    transport = httpx.MockTransport(answer)
    assert notices.send_due(db, runtime(), transport=transport)["failed"] == 1  # the service was down
    row = db.execute("SELECT last_error FROM chat_notices").fetchone()
    assert row[0] == "hooks.slack.com answered 503"
    with store.atomic(db):
        db.execute("UPDATE chat_notices SET send_after = ?", (ago(1 / 24),))  # a minute later, and more
    assert notices.send_due(db, runtime(), transport=transport)["sent"] == 1
    assert notices.send_due(db, runtime(), transport=transport)["sent"] == 0
    assert len(seen) == 2 and str(seen[1].url) == WEBHOOK
    sent = json.loads(seen[1].content)["text"]
    assert len(sent) <= notices.MAX_TEXT and "sEcReTtOkEn" not in sent and "<script>" not in sent and "abc.def" not in sent
    assert cli("settings", "plans-chat-webhook", "--clear", "--json").stdout.strip().startswith("{")
    assert notices.webhook(db) is None


def test_a_notice_is_never_posted_to_an_http_url(db):
    with store.atomic(db):
        settings.put(db, notices.WEBHOOK_SETTING, "http://hooks.slack.com/x")  # written around the checks
    assert notices.queue(db, "k", "a line")
    asked: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: asked.append(r) or httpx.Response(200))
    assert notices.send_due(db, runtime(), transport=transport)["failed"] == 1 and asked == []
    error = db.execute("SELECT last_error FROM chat_notices").fetchone()[0]
    assert "not an https" in error and "/x" not in error


def test_the_plan_settings_are_rows_of_the_cli_the_api_and_the_settings_page(cli, api, page):  # noqa: F811
    assert json.loads(cli("settings", "plans-report-changes", "--json").stdout) == {"enabled": False}
    assert json.loads(cli("settings", "plans-report-changes", "on", "--json").stdout) == {"enabled": True}
    assert api("GET", "/api/settings/plans-report-changes", "admin").json() == {"enabled": True}
    changed = api("PATCH", "/api/settings/plans-chat-webhook", "admin", json={"url": "ftp://x"})
    assert changed.status_code == 422
    assert api("PATCH", "/api/settings/plans-chat-webhook", "admin", json={"url": WEBHOOK}).json()["host"] == "hooks.slack.com"
    shown = page("admin").get("/admin/settings")
    assert "Chat messages about monthly plans" in shown.text and "sEcReTtOkEn" not in shown.text
    assert "Plan changes in contact reports <small>(monthly donors)</small>" in shown.text
    assert "Now: <strong>on</strong>. On, a monthly plan whose amount" in shown.text and "enabled <strong>" not in shown.text
    assert ">plans-report-changes<" not in shown.text and ">plans-chat-webhook<" not in shown.text


def test_doctor_warns_when_plans_are_known_and_no_group_is_mapped(plans):
    from synctool.ops.checks import plans_rows

    rows = plans_rows(SimpleNamespace(conn=plans))  # type: ignore[arg-type]
    assert rows and rows[0][1] == "warn" and "plans: no group mapped" in rows[0][2]
    from synctool import mappings

    mappings.put(plans, "plans", "*", {"group_id": 12, "contact_report_type_id": None, "team_member": None})
    assert plans_rows(SimpleNamespace(conn=plans)) == []  # type: ignore[arg-type]


def test_reconcile_finds_donors_out_of_step_with_their_plans_and_fix_queues_plan_jobs(plans):
    from synctool import mappings
    from synctool.ops.reconcile import plans as plan_check

    assert plan_check.run(plans, runtime())["why"].startswith("no group mapped")
    mappings.put(plans, "plans", "*", {"group_id": 12, "contact_report_type_id": None, "team_member": None})
    now = store.iso()
    with store.atomic(plans):  # Ada's membership is current; Bob's is too though his only plan was canceled
        for cid in ("101", "102"):
            plans.execute(
                "INSERT INTO crm_group_memberships (constituent_id, group_id, crm_membership_id, date_start, state, updated_at)"
                " VALUES (?, 12, 7, ?, 'current', ?)",
                (cid, ago(200)[:10], now),
            )
    plan(plans, "PLAN6", first="Dee")  # giving, not matched yet
    found = plan_check.run(plans, runtime())
    by = {i["status"]: i for i in found["items"]}
    assert (
        found["differences"] == 3 and found["crm_requests"] == 0 and set(by) == {"not_in_group", "still_in_group", "not_matched"}
    )
    assert by["not_in_group"]["constituent_id"] == "103" and by["still_in_group"]["constituent_id"] == "102"
    assert "fix" in by["still_in_group"] and by["not_matched"]["plan_id"] == "PLAN6"

    class Crm:  # the CRM's side, with --plans: Ada's membership was ended there by a person
        def list_group_memberships(self, constituent_id):
            return [{"id": 7, "group_id": 12, "is_current": constituent_id != "101", "date_end": None}]

    asked = plan_check.check(plans, runtime(), crm=Crm())  # type: ignore[arg-type]
    assert asked["crm_requests"] == 3 and {i["constituent_id"] for i in asked["items"]} == {None, "101", "102", "103"}

    fixed = plan_check.run(plans, runtime(), fix=True)
    assert len(fixed["fixed"]) == 3
    queued = plans.execute(
        "SELECT source, entity_type, entity_id, force, payload FROM jobs WHERE entity_type = 'plan'"
    ).fetchall()
    assert {(r[0], r[2], r[3]) for r in queued} == {
        ("donations", "PLAN4", 1),
        ("donations", "PLAN3", 1),
        ("donations", "PLAN6", 1),
    }
    assert all(json.loads(r[4])["origin"] == "reconcile --fix" for r in queued)


def test_the_chat_webhook_goes_only_to_slack_teams_or_a_host_the_config_file_names(cli, db, env, api, tmp_path):  # noqa: F811
    for url, why in (
        ("https://attacker.example/hook", "not Slack's or Teams'"),
        ("https://127.0.0.1:8443/hook", "not Slack's or Teams'"),
        ("https://[::1", "not a URL"),
        ("https://" + "a" * 70 + ".slack.com/x", "not"),
        ("https://hooks.slack.com/" + "x" * 3000, "longer than"),
    ):
        refused = cli("settings", "plans-chat-webhook", url)
        assert refused.exit_code != 0 and why in refused.stderr and "Traceback" not in refused.output, url
        answer = api("PATCH", "/api/settings/plans-chat-webhook", "admin", json={"url": url})
        assert answer.status_code == 422 and "error" in answer.json() and url not in answer.text, url
    assert notices.webhook(db) is None
    (tmp_path / "config.yaml").write_text("organisation:\n  chat_webhook_hosts: [chat.example.org]\n")
    env["SYNCTOOL_CONFIG"] = str(tmp_path / "config.yaml")
    assert cli("settings", "plans-chat-webhook", "https://chat.example.org/hooks/SeCrEt").exit_code == 0
    # the staff actions log, which viewers read, holds the host alone, never the token
    [noted] = json.loads(cli("syncs", "actions", "--json").stdout)["items"][:1]
    assert noted["note"] == "host chat.example.org" and "SeCrEt" not in json.dumps(noted)


def test_a_hostile_limit_or_a_donor_named_in_markup_breaks_nothing(plans, cli, api):  # noqa: F811
    for limit in ("99999999999999999999", "-1", "0"):
        assert api("GET", f"/api/plans?limit={limit}", "viewer").status_code == 422
        assert cli("plans", "list", "--limit", limit).exit_code != 0
    plan(plans, "PLAN9", constituent="109", first="Jane [/b] [link=https://evil.example]x[/link] \x1b]0;owned\x07")
    shown = cli("plans", "list")
    assert shown.exit_code == 0 and "\x1b" not in shown.stdout and "Jane" in shown.stdout
    detail = cli("plans", "show", "PLAN9")
    assert detail.exit_code == 0 and "\x1b" not in detail.stdout
