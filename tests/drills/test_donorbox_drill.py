"""Donorbox (issue 60), drilled with the real processes: `synctool serve`, `drain`, `poll` and `reconcile` against the
served Donorbox and LGL fakes, Donorbox named in `platforms:`. A signed donation becomes one gift (a forged, a stale,
an unsigned and another platform's signature refused, nothing stored); a repeat delivery and a poll of the same
donation make no second gift; a partial and a full refund lower the gift by the policy (adjust); a lost webhook is
found by the poll; a recurring donor joins the monthly-donors group and their cancelled plan gets one contact report;
reconcile for the period matches every donation and lists a gift deleted in the CRM; and every
exchange with Donorbox's fake is what its API description (tests/specs/donorbox.json) describes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from synctool.platforms.donorbox.fake import signed
from synctool.platforms.donorbox.webhook import sign
from tests import contracts
from tests.drills.conftest import Site, coded, crm_state

SECRET = "drill-donorbox-signature-secret"


def gifts(site: Site, donation_id: int) -> list[dict]:
    return [g for g in crm_state(site.world)["gifts"] if g["external_id"] == f"donorbox_{donation_id}"]


def drain(site: Site) -> None:
    done = site.run("drain", "--max-seconds", "8")
    assert done.returncode == 0, done.stdout + done.stderr


def send(site: Site, record: dict, event: str) -> None:
    body, headers = signed(record, SECRET, event=event)
    assert site.post(None, "donorbox", body, headers).json()["status"] == "accepted"


def memberships(site: Site) -> list[dict]:
    return [m for m in crm_state(site.world)["group_memberships"] if m["group_id"] == 704]


def in_process(site: Site, *args: str) -> Any:
    """A command in this process (an operator's setting or a read, not what is drilled: it keeps the drill short)."""
    from typer.testing import CliRunner

    from synctool.cli.main import app
    from synctool.console import AppContext

    return CliRunner().invoke(app, list(args), obj=AppContext(environ=site.env, transports={}))


def reconcile(site: Site, *args: str) -> tuple[int, dict[str, str]]:
    done = in_process(site, "reconcile", *args, "--source", "donorbox", "--json")
    return done.exit_code, {i["external_id"]: i["status"] for i in json.loads(done.stdout)["items"]}


def test_donorbox_through_serve_poll_drain_and_reconcile(site: Site):
    site.env.update(DONORBOX_WEBHOOK_SECRET=SECRET, DONORBOX_ACCOUNT_EMAIL="treasurer@example.org")
    (site.folder / "config.yaml").write_text("platforms: [givebutter, square, mailchimp, stripe, portal, donorbox]\n"
                                             "donorbox:\n  default_fund_id: 2398\n")  # fmt: skip
    coded(site)
    in_process(site, "mappings", "plans", "set", "--group", "704", "--report-type", "2183")
    box = site.world.donorbox
    now = datetime.now(UTC)
    at = (now - timedelta(minutes=5)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    site.serve()

    kept = box.donate(7001, "100.0", at, donor={"email": "ada.drill@example.org", "last_name": "Drill"})
    body, headers = signed(kept, SECRET, event="donation.created")
    with httpx.Client(timeout=30) as client:
        refused = [
            site.post(client, "donorbox", body, {"Donorbox-Signature": sign("forged", body)}),
            site.post(client, "donorbox", body, {"Donorbox-Signature": sign(SECRET, body, at=now.timestamp() - 3600)}),
            site.post(client, "donorbox", body, {}),
            site.post(client, "donorbox", body, {"Signature": "demo-gb-signing-secret"}),
        ]
        assert [r.status_code for r in refused] == [401, 401, 401, 401], [r.text for r in refused]
        assert site.rows("SELECT COUNT(*) FROM jobs WHERE source = 'donorbox'") == [(0,)]
        assert site.post(client, "donorbox", body, headers).json()["status"] == "accepted"
        assert site.post(client, "donorbox", body, headers).json()["status"] == "duplicate"
    box.donate(7002, "35.0", at, donor={"email": "lost.drill@example.org", "last_name": "Lost"})  # its webhook is lost
    polled = site.run("poll", "--source", "donorbox", "--json")  # D1 has its webhook's job: D2 alone is queued
    assert polled.returncode == 0 and json.loads(polled.stdout)["sources"]["donorbox"]["queued"] == 1, polled.stdout
    ada = {"id": 1, "name": "Ada Drill", "first_name": "Ada", "last_name": "Drill", "email": "ada.drill@example.org"}
    plan = box.plan(88, "15.0", donor=ada)  # Ada gives monthly too
    send(site, plan, "plan.created")
    drain(site)
    assert [g["received_amount"] for g in gifts(site, 7001) + gifts(site, 7002)] == [100.0, 35.0]
    assert [m["is_current"] for m in memberships(site)] == [True]

    send(site, box.refund(7001, "30.0"), "donation.updated")  # a partial refund
    send(site, {**plan, "status": "cancelled"}, "plan.updated")  # and Ada's plan ends
    drain(site)
    assert gifts(site, 7001)[0]["received_amount"] == 70.0
    assert [m["is_current"] for m in memberships(site)] == [False]
    reports = [r for r in crm_state(site.world)["contact_reports"] if "Donorbox recurring plan" in r["text"]]
    assert len(reports) == 1 and "canceled" in reports[0]["text"], reports
    send(site, box.refund(7001, "70.0"), "donation.updated")  # the rest
    drain(site)
    assert gifts(site, 7001)[0]["received_amount"] == 0.0

    period = ("--from", str((now - timedelta(days=2)).date()), "--to", str((now + timedelta(days=1)).date()))
    code, statuses = reconcile(site, *period)
    assert code == 0 and statuses == {"donorbox_7001": "matched", "donorbox_7002": "matched"}, statuses
    gone = gifts(site, 7002)[0]["id"]
    httpx.delete(f"{site.world.url('crm')}/api/v1/gifts/{gone}", headers={"Authorization": "Bearer demo-crm-key"}, timeout=10)
    code, statuses = reconcile(site, *period)
    assert code == 1 and statuses["donorbox_7002"] != "matched" and statuses["donorbox_7001"] == "matched", statuses

    assert contracts.problems("donorbox.json", site.world.recorders["donorbox"].exchanges) == []
