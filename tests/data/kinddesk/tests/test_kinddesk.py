"""KindDesk, installed beside synctool, tested as its writer would: with ``synctool.testing`` alone (the contract
check and the fixtures), through the ways in an operator and KindDesk use (the CLI, the receiver, drain)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from synctool_kinddesk import PLATFORM
from synctool_kinddesk.fake import payout
from synctool_kinddesk.models import Gift, RefundData
from synctool_kinddesk.webhook import sign

from synctool.platform import strict_fields
from synctool.testing import check_platform, deliver

NOW = datetime.now(UTC)


def gift(gift_id: str, amount: str, *, at: datetime = NOW, **more: object) -> dict:
    return {"id": gift_id, "amount": amount, "currency": "USD", "email": "ida@example.org", "first_name": "Ida",
            "last_name": "Wells", "created_at": at.isoformat(timespec="seconds"), "method": "card", **more}  # fmt: skip


def made(crm, external_id: str) -> list[dict]:
    return [g for g in crm.gifts.values() if g["external_id"] == external_id]


def out(result) -> dict:
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_it_keeps_the_platform_contract():
    hooks = {"webhook.adapter", "client", "poll", "expected", "payouts", "missed", "refetch", "checks", "registration",
             "routes", "handlers", "commands.kind", "fake", "config"}  # fmt: skip
    assert hooks <= set(check_platform(PLATFORM))


def test_the_fields_that_decide_money_are_strict():
    """What fails a job by name when KindDesk sends it wrong; every other field takes its default."""
    assert strict_fields(Gift) == {"id", "amount", "email", "currency", "refunds", "refunds[].id", "refunds[].amount",
                                   "refunds[].currency"}  # fmt: skip
    assert strict_fields(RefundData) == {"id", "gift_id", "amount", "currency"}


def test_installed_it_is_not_in_use_until_platforms_names_it(synctool_site, cli):
    listed = {p["name"]: p for p in out(cli("platforms", "--json"))}
    assert listed["kinddesk"]["in_use"] is False and listed["givebutter"]["in_use"] is True
    synctool_site.use(PLATFORM)  # `platforms: [kinddesk]` in the site's config
    listed = {p["name"]: p for p in out(cli("platforms", "--json"))}
    assert listed["kinddesk"]["in_use"] is True and listed["kinddesk"]["credentials"] == "set"
    assert listed["kinddesk"]["can"].startswith("poll, heal, reconcile, payouts, backfill, webhook registration")


@pytest.fixture
def kind(synctool_site, crm, cli):
    """KindDesk in use with its fake, beside the CRM's fake, with its config section; the CRM's funds read (a
    mapping names a fund the CRM has: ``crm refresh`` fills the reference cache it is checked against)."""
    fake = synctool_site.use(PLATFORM)
    synctool_site.config("kind:\n  default_fund_id: 2398\n  timezone: America/Los_Angeles\n")
    assert cli("crm", "refresh").exit_code == 0
    return fake


def signed(synctool_site, event: dict) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(event).encode()
    return body, {"X-Kind-Signature": sign(synctool_site.env["KIND_WEBHOOK_SECRET"], body)}


def test_a_gift_by_webhook_is_one_crm_gift_coded_by_the_mappings(receiver, kind, synctool_site, crm, cli, drain):
    """The receiver asked for before ``kind`` put KindDesk in use: it reads the site when the delivery comes."""
    assert cli("mappings", "types", "set", "kind:default", "--fund-id", "2399").exit_code == 0
    assert cli("mappings", "payments", "set", "kind:card", "--payment-type-id", "1509").exit_code == 0
    kind.gifts.append(gift("K1", "25.00"))
    body, headers = signed(synctool_site, {"id": "evt_K1", "type": "gift.created", "gift": kind.gifts[0]})
    assert deliver(receiver, "kind", body, headers)["status"] == "accepted"
    assert deliver(receiver, "kind", body, headers)["status"] == "duplicate"
    assert receiver.post("/webhooks/kind", content=body, headers={"X-Kind-Signature": "0" * 64}).status_code == 401
    drain()
    [one] = made(crm, "kind_K1")
    assert (one["received_amount"], one["fund_id"], one["payment_type_id"]) == (25.0, 2399, 1509)
    checks = {c["check"]: c for c in out(cli("doctor", "--json"))}
    assert checks["kind fund"]["status"] == "ok" and checks["secret KIND_API_KEY"]["status"] == "ok"


def test_an_evening_gift_is_dated_where_it_was_given(kind, synctool_site, crm, receiver, drain):
    """8 p.m. in California on 31 December is 4 a.m. on 1 January in UTC: the gift belongs to the old year."""
    late = gift("K9", "100.00", at=datetime(2027, 1, 1, 4, 0, tzinfo=UTC))
    deliver(receiver, "kind", *signed(synctool_site, {"id": "evt_K9", "type": "gift.created", "gift": late}))
    drain()
    assert made(crm, "kind_K9")[0]["received_date"] == "2026-12-31"  # the account's time zone (kind.timezone)
    east = gift("K10", "10.00", at=datetime(2027, 1, 1, 4, 0, tzinfo=UTC), timezone="Asia/Tokyo")
    deliver(receiver, "kind", *signed(synctool_site, {"id": "evt_K10", "type": "gift.created", "gift": east}))
    drain()
    assert made(crm, "kind_K10")[0]["received_date"] == "2027-01-01"  # the gift's own time zone first


def test_a_refund_lowers_its_gift_once_and_reconcile_matches_what_is_left(kind, synctool_site, crm, cli, receiver, drain):
    kind.gifts.append(gift("K1", "25.00"))
    deliver(receiver, "kind", *signed(synctool_site, {"id": "evt_K1", "type": "gift.created", "gift": kind.gifts[0]}))
    refund = kind.refund("K1", "R1", "10.00", NOW.isoformat(timespec="seconds"))
    event = {"id": "evt_R1", "type": "gift.refunded", "refund": refund}
    deliver(receiver, "kind", *signed(synctool_site, event))
    drain()
    [one] = made(crm, "kind_K1")
    assert one["received_amount"] == 15.0 and "Refunded $10.00" in one["note"] and "via KindDesk, refund R1" in one["note"]
    # KindDesk sends it again under another event id: the refund's own id keys it, nothing changes
    deliver(receiver, "kind", *signed(synctool_site, {**event, "id": "evt_R1_again"}))
    drain()
    assert made(crm, "kind_K1")[0]["received_amount"] == 15.0
    applied = out(cli("refunds", "list", "--source", "kind", "--json"))["items"]
    assert [(r["refund_id"], r["state"], r["amount_after"]) for r in applied] == [("R1", "applied", "15.00")]
    report = out(cli("reconcile", "--from", "7d", "--source", "kind", "--json"))
    assert {i["external_id"]: i["status"] for i in report["items"]} == {"kind_K1": "matched"}


def test_the_backup_poll_backfill_and_reconcile_find_what_no_webhook_brought(kind, crm, cli, drain):
    kind.gifts += [gift("K1", "25.00"), gift("K2", "40.00", recurring=True)]
    kind.refund("K2", "R2", "5.00", NOW.isoformat(timespec="seconds"))
    assert cli("mappings", "types", "set", "kind:monthly", "--fund-id", "2400").exit_code == 0
    report = out(cli("reconcile", "--from", "7d", "--source", "kind", "--json"))
    assert {i["external_id"]: i["status"] for i in report["items"]} == {"kind_K1": "missing", "kind_K2": "missing"}
    dry = out(cli("backfill", "--since", "7d", "--source", "kind", "--dry-run", "--json"))
    assert dry["new"] == 2
    polled = out(cli("poll", "--source", "kind", "--json"))["sources"]["kind"]
    assert (polled["status"], polled["seen"], polled["queued"], polled["refunds_queued"]) == ("ok", 2, 3, 1)
    assert out(cli("poll", "--source", "kind", "--json"))["sources"]["kind"]["queued"] == 0  # seen: nothing again
    drain()
    assert made(crm, "kind_K2")[0]["fund_id"] == 2400 and made(crm, "kind_K1")[0]["fund_id"] == 2398
    assert made(crm, "kind_K2")[0]["received_amount"] == 35.0  # its refund, applied after its gift
    assert out(cli("backfill", "--since", "7d", "--source", "kind", "--dry-run", "--json"))["new"] == 0
    report = out(cli("reconcile", "--from", "7d", "--source", "kind", "--json"))
    assert {i["external_id"]: i["status"] for i in report["items"]} == {"kind_K1": "matched", "kind_K2": "matched"}


def test_payouts_heal_registration_and_its_own_command(kind, synctool_site, crm, cli, drain):
    kind.gifts.append(gift("K1", "25.00"))
    today = NOW.date().isoformat()
    kind.payouts.append(payout("PO1", today, [{"gift_id": "K1", "gross": "25.00", "fee": "1.00"}]))
    deposits = out(cli("reconcile", "payouts", "--from", "7d", "--source", "kind", "--json"))
    assert "PO1" in json.dumps(deposits)
    # a delivery KindDesk failed to make, replayed from its own record
    kind.failed.append({"event_id": "evt_K1", "type": "gift.created", "at": NOW.isoformat(timespec="seconds"),
                        "body": {"id": "evt_K1", "type": "gift.created", "gift": kind.gifts[0]}, "why": "503"})  # fmt: skip
    healed = out(cli("webhooks", "heal", "--source", "kind", "--json"))
    assert healed["replayed"] == 1, healed
    drain()
    assert len(made(crm, "kind_K1")) == 1
    # the webhook registered with KindDesk, its signing secret kept on this side
    registered = cli("webhooks", "register", "--url", "https://sync.example.org", "--source", "kind")
    assert registered.exit_code == 0, registered.output
    assert kind.webhooks[0]["url"] == "https://sync.example.org/webhooks/kind"
    listed = json.loads(cli("kind", "gifts").stdout)
    assert [g["id"] for g in listed] == ["K1"]


def subscription(sub_id: str, status: str = "active", **more: object) -> dict:
    return {"id": sub_id, "amount": "20.00", "currency": "USD", "email": "ida@example.org", "first_name": "Ida",
            "last_name": "Wells", "interval": "month", "status": status, "started_at": NOW.isoformat(timespec="seconds"),
            "next_payment_date": "2031-01-15", **more}  # fmt: skip


def test_a_subscription_is_a_plan_its_donor_in_the_monthly_group_and_a_failure_reported_once(
    kind, synctool_site, crm, cli, receiver, drain
):
    """The contract's recurring plans (``plans.apply``): the group and the follow-up report as for any platform."""
    group, call = 704, 2183  # LGL's fake: "Monthly Donors", the "Call" report type
    assert cli("mappings", "plans", "set", "--group", str(group), "--report-type", str(call)).exit_code == 0
    created = {"id": "evt_S1", "type": "subscription.created", "subscription": subscription("S1")}
    deliver(receiver, "kind", *signed(synctool_site, created))
    charge = gift("K1", "20.00", subscription_id="S1")
    deliver(receiver, "kind", *signed(synctool_site, {"id": "evt_K1", "type": "gift.created", "gift": charge}))
    drain()
    [plan] = out(cli("plans", "list", "--json"))["items"]
    assert (plan["ref"], plan["status"], plan["amount"], plan["frequency"]) == ("kind:S1", "active", "20.00", "monthly")
    cid = plan["constituent_id"]
    assert [m["is_current"] for m in crm.group_memberships.values() if str(m["constituent_id"]) == str(cid)] == [True]
    failed = {"id": "evt_S1_failed", "type": "subscription.payment_failed", "subscription": subscription("S1", "past_due")}
    deliver(receiver, "kind", *signed(synctool_site, failed))
    deliver(receiver, "kind", *signed(synctool_site, {**failed, "id": "evt_S1_failed"}))  # a replay: a duplicate
    drain()
    [report] = [r for r in crm.contact_reports.values() if str(r["constituent_id"]) == str(cid)]
    assert report["text"].startswith("KindDesk recurring plan S1 (20.00 USD monthly) failed to charge: Ida Wells")
    shown = out(cli("plans", "show", "kind:S1", "--json"))
    assert [c["external_id"] for c in shown["charges"]] == ["kind_K1"] and shown["charges"][0]["crm_gift_id"]
