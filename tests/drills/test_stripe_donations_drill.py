"""Stripe donations, drilled with the real `serve`, `poll` and `drain` processes (issue 60's "Done
when"): a signed donation on Stripe's endpoint becomes one gift (a forged or another platform's signature refused,
nothing stored), a repeat delivery and a poll make no second gift, a partial and a full refund change it as the
policy says, a lost webhook is found by the poll, a recurring donor joins the monthly-donors group and a failed plan
gets its contact report, a bad charge ends as a clear failure in the sync log, and reconcile for the month matches
every charge and lists a deleted gift."""

from __future__ import annotations

import json
import time

import httpx

from synctool.fakes.world import WEBHOOK_SECRETS
from synctool.platforms.stripe import fake as stripe_fake
from synctool.platforms.stripe.webhook import sign
from tests.drills.conftest import Site, coded, crm_state

ROLE = "stripe-donations"


def deliver(site: Site, kind: str, obj: dict, *, event_id: str | None = None, secret: str | None = None) -> httpx.Response:
    event = stripe_fake.event_of(kind, json.loads(json.dumps(obj)))
    if event_id:
        event["id"] = event_id
    body = json.dumps(event).encode()
    return site.post(
        None, "payments", body, {"Stripe-Signature": sign(body, secret or WEBHOOK_SECRETS["PAYMENTS_WEBHOOK_SECRET"])}
    )


def gifts(site: Site, charge: dict) -> list[dict]:
    return [g for g in crm_state(site.world)["gifts"] if g["external_id"] == f"stripe_{charge['payment_intent']}"]


def run(site: Site, *args: str) -> str:
    done = site.run(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def in_process(site: Site, *args: str) -> str:
    """A command run in this process (as ``coded`` runs its own), to keep the drill to a few seconds."""
    from typer.testing import CliRunner

    from synctool.cli.main import app
    from synctool.console import AppContext

    result = CliRunner().invoke(app, list(args), obj=AppContext(environ=site.env, transports={}), catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def test_stripe_donations_end_to_end(site: Site):
    started = time.monotonic()
    (site.folder / "config.yaml").write_text(
        "platforms: [givebutter, square, mailchimp, stripe, portal, stripe-donations]\nstripe-donations:\n  default_fund_id: 2398\n"
    )
    coded(site)
    in_process(site, "mappings", "plans", "set", "--group", "704", "--report-type", "2183", "--team-member", "tom@example.org")
    account = site.world.fakes[ROLE]
    now = int(time.time())
    site.serve()
    kept = stripe_fake.add_charge(account, 5000, email="kept@example.org", name="Kate Kept", created=now - 600)
    assert deliver(site, "charge.succeeded", kept, secret="whsec_forged").status_code == 401
    assert deliver(site, "charge.succeeded", kept, secret=WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]).status_code == 401
    assert site.rows("SELECT COUNT(*) FROM deliveries") == [(0,)]
    assert deliver(site, "charge.succeeded", kept, event_id="evt_kept").json()["status"] == "accepted"
    assert deliver(site, "charge.succeeded", kept, event_id="evt_kept").json()["status"] == "duplicate"
    refunded = stripe_fake.add_charge(account, 8000, email="rae@example.org", name="Rae Refund", created=now - 500)
    deliver(site, "charge.succeeded", refunded)
    gone = stripe_fake.add_charge(account, 2000, email="gus@example.org", name="Gus Gone", created=now - 400)
    deliver(site, "charge.succeeded", gone)
    lost = stripe_fake.add_charge(account, 3000, email="lou@example.org", name="Lou Lost", created=now - 300)  # never delivered
    bad = stripe_fake.add_charge(account, 1000, email="bea@example.org", name="Bea Bad", created=now - 200)
    bad["currency"] = "dollars"  # Stripe's record of it does not read
    deliver(site, "charge.succeeded", bad)
    monthly = stripe_fake.add_subscription(
        account, 1500, email="mo@example.org", customer="cus_mo", created=now - 100, name="Mo Monthly"
    )
    deliver(site, "customer.subscription.created", stripe_fake.public(monthly))
    invoice, first = stripe_fake.pay_invoice(account, monthly, created=now - 100, name="Mo Monthly")
    deliver(site, "charge.succeeded", first)
    stripe_fake.refund_charge(account, refunded, 3000)  # a partial refund (its job waits for the gift's, then runs)
    deliver(site, "charge.refunded", refunded)
    run(site, "drain", "--max-seconds", "8")
    assert [g["received_amount"] for g in gifts(site, kept)] == [50.0]
    assert [g["received_amount"] for g in gifts(site, refunded)] == [50.0]
    assert "1 queued" in run(site, "poll", "--source", ROLE)  # the lost one, and no second gift of the others
    state = crm_state(site.world)
    [donor] = {g["constituent_id"] for g in state["gifts"] if g["external_id"] == f"stripe_{first['payment_intent']}"}
    assert [m["group_id"] for m in state["group_memberships"] if m["constituent_id"] == donor] == [704]
    stripe_fake.refund_charge(account, refunded, 5000)  # the rest
    deliver(site, "charge.refunded", refunded)
    monthly["status"] = "past_due"  # the next month's charge fails
    deliver(site, "invoice.payment_failed", {**invoice, "id": "in_failed", "paid": False, "status": "open"})
    run(site, "drain", "--max-seconds", "8")
    assert [g["received_amount"] for g in gifts(site, lost)] == [30.0]
    assert [g["received_amount"] for g in gifts(site, refunded)] == [0.0]
    reports = [r for r in crm_state(site.world)["contact_reports"] if r["constituent_id"] == donor]
    assert len(reports) == 1 and "failed" in reports[0]["text"]
    assert [len(gifts(site, c)) for c in (kept, refunded, gone, lost, bad)] == [1, 1, 1, 1, 0]
    [(status, error)] = site.rows("SELECT status, last_error FROM jobs WHERE source = ? AND entity_id = ?", ROLE, bad["id"])
    assert status == "failed" and "currency" in error
    # a person deletes a gift in the CRM: reconcile for the month lists it, and matches every other charge
    [deleted] = gifts(site, gone)
    httpx.delete(f"{site.world.url('crm')}/api/v1/gifts/{deleted['id']}", headers={"Authorization": "Bearer demo-crm-key"})
    today = time.strftime("%Y-%m-%d", time.gmtime())
    report = json.loads(in_process(site, "reconcile", "--from", "30d", "--to", today, "--source", ROLE, "--json"))
    statuses = {i["external_id"]: i["status"] for i in report["items"]}
    assert statuses[f"stripe_{gone['payment_intent']}"] != "matched"
    assert all(statuses[f"stripe_{c['payment_intent']}"] == "matched" for c in (kept, refunded, lost))
    print(f"stripe-donations drill: {time.monotonic() - started:.1f} s")
