"""PayPal drilled with the real processes (issue 60's "Done when"): ``serve`` takes a donation signed with the
fake's certificate (fetched once, from the fake's own address, which the config allows) and refuses a forged one,
another webhook's and Givebutter's signature, storing nothing; ``poll`` finds a donation whose webhook never came;
``drain`` makes one gift of each, a monthly donor joins the group and their canceled subscription gets its
contact report, and a partial then a full refund change the first as the policy says; a repeat
delivery and a poll of the same payment make no second gift; ``reconcile`` (run in this process) for the month matches every payment and
lists a gift a person deleted; every exchange with the fake is one PayPal's OpenAPI files describe."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from synctool.platforms.paypal.fake import FakePayPal
from tests import contracts
from tests.drills.conftest import Site, coded

pytestmark = pytest.mark.drill

WEBHOOK_ID = "4JH86294D6297924G"


def gifts(site: Site, external_id: str) -> list[dict]:
    return [g for g in site.world.crm.gifts.values() if g["external_id"] == external_id]


def in_process(site: Site, *args: str):
    from typer.testing import CliRunner

    from synctool.cli.main import app
    from synctool.console import AppContext

    return CliRunner().invoke(app, list(args), obj=AppContext(environ=site.env, transports={}), catch_exceptions=False)


def test_paypal_through_serve_poll_and_drain(site: Site):
    paypal: FakePayPal = site.world.fakes["paypal"]
    paypal.url = site.world.url("paypal")  # its certificate's URL: its own loopback address
    (site.folder / "config.yaml").write_text(
        f"platforms: [givebutter, paypal]\npaypal:\n  cert_url_prefixes: ['{paypal.cert_prefix}']\n  default_fund_id: 2398\n"
    )
    site.env.update(PAYPAL_CLIENT_ID="AdrillClientId", PAYPAL_WEBHOOK_ID=WEBHOOK_ID)
    coded(site)
    site.serve()

    def post(body: bytes, headers: dict[str, str]) -> int:
        return site.post(None, "paypal", body, headers).status_code

    capture = paypal.donate("50.00", "ida@example.org")
    body = paypal.event("PAYMENT.CAPTURE.COMPLETED", capture)
    signed = paypal.sign(body, WEBHOOK_ID)
    assert post(body.replace(b"50.00", b"90.00"), signed) == 401  # forged: the body changed
    assert post(body, paypal.sign(body, "ANOTHERWEBHOOK1")) == 401  # another webhook's signature
    assert post(body, {"Signature": "demo-gb-signing-secret"}) == 401  # Givebutter's
    assert site.rows("SELECT COUNT(*) FROM deliveries WHERE source = 'paypal'") == [(0,)]
    assert site.post(None, "paypal", body, signed).json()["status"] == "accepted"
    assert site.post(None, "paypal", body, paypal.sign(body, WEBHOOK_ID)).json()["status"] == "duplicate"  # resent

    kept = paypal.donate("30.00", "grace@example.org", "Grace", "Hopper")
    kept_body = paypal.event("PAYMENT.CAPTURE.COMPLETED", kept)
    assert post(kept_body, paypal.sign(kept_body, WEBHOOK_ID)) == 200
    lost = paypal.donate("20.00", "ada@example.org", "Ada", "Lovelace")  # its webhook never came
    for amount in ("15.00", "35.00"):  # a partial refund, then the rest
        refund = paypal.event("PAYMENT.CAPTURE.REFUNDED", paypal.refund(capture["id"], amount), resource_type="refund")
        assert post(refund, {}) == 401  # unsigned
        assert post(refund, paypal.sign(refund, WEBHOOK_ID)) == 200
    # a monthly donor: the subscription, its payment (a recurring gift), then its cancellation
    assert in_process(site, "mappings", "plans", "set", "--group", "704", "--report-type", "2183").exit_code == 0
    subscription = paypal.subscribe("15.00", "kate@example.org", "Katherine", "Johnson")
    sale = paypal.charge(subscription["id"])
    later = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    cancelled = {**subscription, "status": "CANCELLED", "status_update_time": later, "update_time": later}
    for kind, resource, what in (("BILLING.SUBSCRIPTION.ACTIVATED", subscription, "subscription"),
                                 ("PAYMENT.SALE.COMPLETED", sale, "sale"),
                                 ("BILLING.SUBSCRIPTION.CANCELLED", cancelled, "subscription")):  # fmt: skip
        event = paypal.event(kind, resource, resource_type=what)
        assert post(event, paypal.sign(event, WEBHOOK_ID)) == 200
    polled = site.run("poll", "--source", "paypal", "--json")
    assert polled.returncode == 0, polled.stdout + polled.stderr
    assert json.loads(polled.stdout)["sources"]["paypal"]["queued"] == 1  # the lost donation; the rest seen already
    drained = site.run("drain", "--max-seconds", "8")
    assert drained.returncode == 0, drained.stdout + drained.stderr
    assert [g["received_amount"] for g in gifts(site, f"paypal_{capture['id']}")] == [0.0]
    # the policy (adjust) lowered it by each refund in turn: 50 -> 35 -> 0
    assert sorted(site.rows("SELECT amount_before, amount_after FROM refunds WHERE source = 'paypal'")) == [
        ("35.00", "0.00"), ("50.00", "35.00")
    ]  # fmt: skip
    assert len(gifts(site, f"paypal_{lost['id']}")) == 1 and len(gifts(site, f"paypal_{kept['id']}")) == 1

    [monthly] = gifts(site, f"paypal_{sale['id']}")
    memberships = [
        m for m in site.world.crm.group_memberships.values() if str(m["constituent_id"]) == str(monthly["constituent_id"])
    ]
    assert [(m["group_id"], m["is_current"]) for m in memberships] == [(704, False)]  # joined, then left when it ended
    [report] = [r for r in site.world.crm.contact_reports.values() if str(r["constituent_id"]) == str(monthly["constituent_id"])]
    assert report["text"].startswith(f"PayPal recurring plan {subscription['id']}") and "cancel" in report["text"]

    del site.world.crm.gifts[gifts(site, f"paypal_{kept['id']}")[0]["id"]]  # a person deleted it in the CRM
    reconciled = in_process(site, "reconcile", "--from", "30d", "--source", "paypal", "--json")  # no process needed
    items = {i["external_id"]: i["status"] for i in json.loads(reconciled.stdout)["items"]}
    assert items == {f"paypal_{capture['id']}": "matched", f"paypal_{lost['id']}": "matched", f"paypal_{sale['id']}": "matched",
                     f"paypal_{kept['id']}": "missing"}, reconciled.stdout  # fmt: skip
    assert reconciled.exit_code == 1
    if contracts.available():
        assert contracts.problems("paypal.json", site.world.recorders["paypal"].exchanges) == []
