"""The platform operations from the CLI against the fakes, and `synctool demo`."""

from __future__ import annotations

import json


def out(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_pos_locations_orders_enrich(world, cli):
    locations = out(cli("pos", "locations", "--json"))
    assert [loc["name"] for loc in locations] == ["Front Desk", "Gift Shop"]
    world.square.customers["C1"] = {"id": "C1", "given_name": "Grace", "family_name": "Hopper", "email_address": "g@example.org"}
    for n in range(3):
        world.square.orders[f"O{n}"] = {
            "id": f"O{n}",
            "location_id": "FPYCBCHYMXFK1",
            "state": "COMPLETED",
            "created_at": f"2026-11-2{n}T10:00:00Z",
            "customer_id": "C1",
            "total_money": {"amount": 100 * (n + 1), "currency": "USD"},
            "tenders": [],
        }
    page1 = out(cli("pos", "orders", "--limit", "2", "--json"))
    assert [o["id"] for o in page1["orders"]] == ["O2", "O1"] and page1["cursor"]
    page2 = out(cli("pos", "orders", "--limit", "2", "--cursor", page1["cursor"], "--json"))
    assert [o["id"] for o in page2["orders"]] == ["O0"] and page2["cursor"] is None
    enriched = out(cli("pos", "enrich", "O0", "O1", "--json"))
    assert {e["email"] for e in enriched} == {"g@example.org"}
    assert cli("pos", "enrich", "NOPE").exit_code == 1  # Square's 404, as one line


def test_location_overrides_replace_and_validation(world, cli, tmp_path):
    assert cli("crm", "refresh").exit_code == 0
    path = tmp_path / "overrides.json"
    path.write_text(json.dumps([{"location_id": "L2GIFTSHOP001", "fund_id": 2402}, {"location_id": "FPYCBCHYMXFK1"}]))
    rows = out(cli("pos", "location-overrides", "replace", str(path)))
    assert {r["location_id"] for r in rows} == {"L2GIFTSHOP001", "FPYCBCHYMXFK1"}
    bad = cli("pos", "location-overrides", "set", "X", "--fund-id", "1")
    assert bad.exit_code == 2 and "valid:" in bad.output


def test_donation_campaigns_refresh(world, cli):
    world.givebutter.campaigns[1] = {"id": 1, "code": "ABC", "title": "Annual", "type": "fundraise", "status": "active"}
    assert out(cli("donations", "campaigns", "--json")) == []
    rows = out(cli("donations", "campaigns", "--refresh", "--json"))
    assert rows[0]["title"] == "Annual" and out(cli("donations", "campaigns", "--json")) == rows


def test_mailing_account_lists_test(world, cli, env):
    assert out(cli("mailing", "account", "--json"))["account_name"] == "Friends of the Library"
    assert [m["id"] for m in out(cli("mailing", "lists", "--json"))] == ["b7e21c0d94", "c0ffee1234"]
    assert out(cli("mailing", "test", "--json"))["ok"] is True
    env["MAILING_API_KEY"] = "wrong-us14"
    result = cli("mailing", "test", "--json")
    assert result.exit_code == 1 and "401" in json.loads(result.stdout)["error"]


def test_settings_validate(cli):
    assert cli("settings", "pos-default-constituent", "--email", "nope").exit_code == 2
    assert cli("settings", "mailing-sync-enabled", "maybe").exit_code == 2
    assert out(cli("settings", "alert-recipients", "a@example.org", "--json")) == {"emails": ["a@example.org"]}
    assert cli("settings", "alert-recipients", "not-an-email").exit_code == 2


def test_missing_platform_key_is_one_clear_line(cli, monkeypatch):
    result = cli("pos", "locations")
    assert result.exit_code == 2 and "POS_ACCESS_TOKEN" in result.output and "Traceback" not in result.output


def test_demo_runs_the_whole_path(cli, monkeypatch):
    from synctool.fakes import demo
    from synctool.fakes import world as fake_world
    from tests import contracts

    world = fake_world.FakeWorld()  # the demo's own world, kept to read its traffic afterwards
    monkeypatch.setattr(fake_world, "FakeWorld", lambda: world)
    monkeypatch.setattr(demo, "FakeWorld", lambda: world)
    # what the demo shows is not its pace: no gap between CRM requests here (a person watching gets 110 ms)
    monkeypatch.setattr(demo, "DEMO_ENV", {**demo.DEMO_ENV, "CRM_MIN_INTERVAL_MS": "0"})
    report = out(cli("demo", "--json"))
    if contracts.available():  # one demo run for both (it takes 7 s): its traffic, held to the platforms' descriptions
        from tests.test_contracts import demo_problems

        assert not demo_problems(world), "\n".join(demo_problems(world))
    answers = {d["delivery"]: d["status"] for d in report["deliveries"]}
    assert answers["Square order.updated, FORGED signature"] == 401
    assert report["deliveries"][1]["answer"] == {"status": "duplicate"}
    assert sorted(g["external_id"] for g in report["crm_gifts"]) == [
        "donations_AdaMoved5Lp",
        "donations_Monthly4Rt9x",
        "donations_PeerPage8Zt",
        "donations_PeerPage8Zt_sc_501",  # Jane Doe's soft credit for the gift made on her page
        "donations_Planted10dAgo",
        "donations_PollOnly7Kq2",
        "donations_QiN7blzUhiwXBVBr",
        "donations_Unreached3Xy",  # replayed by webhooks heal from Givebutter's record
        "donorbox_90001",  # Donorbox's donation (Donorbox in use beside the built-ins)
        "pay-100",
        "paypal_5CDEMO7PAYPAL0001",  # PayPal's donation, signed with its certificate
        "pos_order_ORDER-DONE-1",
        "pos_order_ORDER-LOST-4",  # found by the POS backup poll
        "pos_order_POSAPP-3",
        "stripe_pi_demo_donation",  # a Payment Link donation on Stripe (stripe-donations)
    ]
    assert {r["status"] for r in report["sync_log"]} <= {"succeeded", "skipped"}
    # a refund from each platform, each applied to its gift
    assert {(r["source"], r["state"]) for r in report["refunds"]} == {
        ("donations", "applied"),
        ("pos", "applied"),
        ("payments", "applied"),
    }
    amounts = {g["external_id"]: g["amount"] for g in report["crm_gifts"]}
    assert (amounts["donations_QiN7blzUhiwXBVBr"], amounts["pos_order_POSAPP-3"], amounts["pay-100"]) == (6.0, 5.0, 0.0)
    assert "recurring plan pln_old_weekly canceled" in report["summary_mail"]
    # the Square refund named its return order; the payout holding it adds up and has its gift
    [payout] = report["payouts"]
    assert (payout["gross"], payout["fees"], payout["refunds"], payout["net"], payout["stated_net"]) == (
        "7.50", "0.14", "2.50", "4.86", "4.86",
    )  # fmt: skip
    assert payout["problem"] is None and payout["with_gift"] == 1
    # the planted difference: found, fixed through the queue, then reconciled clean
    assert report["reconcile"]["before"]["missing"] == 1 and report["reconcile"]["after"]["missing"] == 0
    assert [f["external_id"] for f in report["reconcile"]["fixed"] if f["action"] != "nothing"] == ["donations_Planted10dAgo"]
    assert report["crm_requests"]["rejected_429"] == 0 and report["seconds"] < 60
