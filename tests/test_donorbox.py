"""Donorbox as a platform package (issue 60), through the receiver, drain, poll, reconcile and the CLI against its
fake and LGL's: signed deliveries verified as Donorbox documents them, a donation -> one gift, refunds by its running
refunded total, recurring coding, the backup poll, reconcile, bad bodies, the fake held to its description, and an
organisation that does not name it seeing nothing of it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from synctool import platforms
from synctool.platform import strict_fields
from synctool.platforms.donorbox import PLATFORM
from synctool.platforms.donorbox.fake import signed
from synctool.platforms.donorbox.models import Donation
from synctool.platforms.donorbox.webhook import sign
from synctool.testing import check_platform, hook_problems
from tests import contracts
from tests.flow_helpers import job, run_drain
from tests.helpers import runtime

SECRET = "donorbox-test-signature-secret"
#: the poll reads this far back: the donations here are dated in October 2026, whenever the suite runs
LOOKBACK = ("--lookback", "3650d")
USED = ", ".join([*platforms.DEFAULT_PLATFORMS, "donorbox"])


@pytest.fixture
def box(coded, env, isolated, cli):
    """Donorbox in use beside the built-ins, its secrets set, a campaign override and a payment type mapped."""
    (isolated / "config.yaml").write_text(
        f"platforms: [{USED}]\ndonorbox:\n  default_fund_id: 2398\n  timezone: America/Los_Angeles\n"
    )
    env.update(DONORBOX_WEBHOOK_SECRET=SECRET, DONORBOX_ACCOUNT_EMAIL="treasurer@example.org")
    assert cli("mappings", "overrides", "set", "donorbox:1", "--fund-id", "2399", "--campaign-id", "823").exit_code == 0
    assert cli("mappings", "payments", "set", "donorbox:stripe", "--payment-type-id", "1509").exit_code == 0
    return coded.donorbox


@pytest.fixture
def post(box) -> Iterator:
    from synctool.web.receiver import create_app

    with TestClient(create_app(runtime())) as client:

        def send(body: bytes, headers: dict[str, str]):
            return client.post("/webhooks/donorbox", content=body, headers=headers)

        yield send


def gifts_of(world, donation_id: int) -> list[dict]:
    return [g for g in world.crm.gifts.values() if g["external_id"] == f"donorbox_{donation_id}"]


def deliver(post, record: dict, event: str | None = "donation.created") -> dict:
    response = post(*signed(record, SECRET, event=event))
    assert response.status_code == 200, response.text
    return response.json()


def test_the_platform_keeps_the_contract():
    assert hook_problems(PLATFORM) == []
    called = check_platform(PLATFORM)
    assert {"webhook.adapter", "client", "poll", "expected", "refetch", "registration", "handlers", "fake", "plans",
            "checks"} <= set(called), called  # fmt: skip
    # widening what stays strict is a visible decision
    assert strict_fields(Donation) == {"id", "amount", "amount_refunded", "currency", "status", "donor", "donor.email"}


def test_a_signed_donation_becomes_one_gift_coded_dated_and_described(box, post, coded, db):
    donation = box.donate(
        501, "100.0", "2026-10-06T03:30:00.000Z",  # 8:30 pm on the 5th in California: the 5th on its calendar
        donor={"email": "ada@example.org", "first_name": "Ada", "last_name": "Byron", "phone": "5551234567"},
        designation="Building", comment="for the roof", tax_deductible_amount="80.0",
        dedication={"type": "in_memory_of", "name": "Grace Hopper", "email": "family@example.org"},
    )  # fmt: skip
    answer = deliver(post, donation)
    assert answer["status"] == "accepted"
    run_drain()
    row = job(db, answer["job_id"])
    assert row["status"] == "succeeded", row["last_error"]
    [gift] = gifts_of(coded, 501)
    assert gift["received_amount"] == 100.0 and gift["received_date"] == "2026-10-05"
    assert (gift["fund_id"], gift["campaign_id"], gift["payment_type_id"]) == (2399, 823, 1509)  # donorbox:1, donorbox:stripe
    assert gift["deductible_amount"] == 80.0
    assert gift["tribute_name"] == "Memorial - General" and gift["tributee_name"] == "Grace Hopper"
    assert "processing fee 3.20, net 96.80" in gift["note"] and "designation Building" in gift["note"]
    person = coded.crm.constituents[int(row["crm_constituent_id"])]
    assert person["first_name"] == "Ada" and person["last_name"] == "Byron"


def test_repeat_delivery_and_a_poll_of_the_same_donation_make_no_second_gift(box, post, coded, cli):
    donation = box.donate(502, "25.0", "2026-10-06T15:00:00.000Z")
    assert deliver(post, donation)["status"] == "accepted"
    assert deliver(post, donation)["status"] == "duplicate"  # the same body: Donorbox's retry
    run_drain()
    polled = json.loads(cli("poll", "--source", "donorbox", *LOOKBACK, "--json").stdout)
    assert polled["sources"]["donorbox"]["seen"] == 1 and polled["sources"]["donorbox"]["queued"] == 0
    run_drain()
    assert len(gifts_of(coded, 502)) == 1


def test_forged_stale_unsigned_and_other_platforms_signatures_are_refused_and_nothing_stored(box, post, db):
    donation = box.donate(503, "10.0", "2026-10-06T15:00:00.000Z")
    body, headers = signed(donation, SECRET, event="donation.created")
    forged = sign("not-the-secret", body)
    stale = sign(SECRET, body, at=1_700_000_000)  # a captured delivery replayed years later
    refused = [
        post(body, {"Donorbox-Signature": forged}),
        post(body, {"Donorbox-Signature": stale}),
        post(body, {}),
        post(body, {"Signature": SECRET}),  # Givebutter's header and scheme
        post(body + b" ", headers),  # the body changed after signing
    ]
    assert [r.status_code for r in refused] == [401] * 5
    assert db.execute("SELECT COUNT(*) FROM jobs WHERE source = 'donorbox'").fetchone()[0] == 0


def test_without_its_secret_deliveries_are_refused_for_a_retry(box, env, coded):
    from synctool.web.receiver import create_app

    del env["DONORBOX_WEBHOOK_SECRET"]
    with TestClient(create_app(runtime())) as client:
        body, headers = signed(box.donate(504, "10.0", "2026-10-06T15:00:00.000Z"), SECRET)
        assert client.post("/webhooks/donorbox", content=body, headers=headers).status_code == 503


#: bodies that are no Donorbox record (one site for all: each is refused before anything is stored)
NOT_RECORDS = [b"not json", b"[]", b"[1]", b'[{"id": 1, "donation_date": "x"}, {"id": 2, "donation_date": "y"}]',
               b'[{"event_name": "donation.created"}]', b'[{"event_name": "donation.created", "donation": {"amount": "5"}}]',
               b'[{"hello": "world"}]', b"[" * 5000 + b"]" * 5000]  # fmt: skip


def test_bodies_that_are_no_donorbox_record_are_refused_clearly(box, post, db):
    for body in NOT_RECORDS:
        response = post(body, {"Donorbox-Signature": sign(SECRET, body)})
        assert response.status_code == 400 and response.json()["error"], (body[:80], response.text)
    assert db.execute("SELECT COUNT(*) FROM jobs WHERE source = 'donorbox'").fetchone()[0] == 0


#: a donation's field made bad -> the words its job's failure (or hold) says
BAD = [
    ({"amount": "lots"}, "amount"),
    ({"amount": "1" * 40}, "amount"),
    ({"currency": 12}, "currency"),
    ({"donor": {"email": None, "first_name": None, "last_name": None}}, "no donor e-mail or name"),
    ({"donor": "someone"}, "donor"),
    ({"currency": "EUR"}, "EUR"),
]


def test_bad_donations_end_as_clear_failures_in_the_sync_log(box, post, coded, db):
    answers = []
    for n, (changes, _) in enumerate(BAD):
        donation = box.donate(540 + n, "10.0", "2026-10-06T15:00:00.000Z", donor={"email": f"bad{n}@example.org"})
        donation.update(changes)
        answers.append(deliver(post, donation))
    run_drain()
    for n, ((changes, words), answer) in enumerate(zip(BAD, answers, strict=True)):
        row = job(db, answer["job_id"])
        said = " ".join(str(row[k] or "") for k in row.keys() if k in ("last_error", "message", "review_reason"))
        assert row["status"] in ("failed", "review") and words in said, (changes, dict(row))
        assert not gifts_of(coded, 540 + n)


def test_an_event_donorbox_may_add_is_logged_not_synced(box, post, db):
    answer = deliver(post, {"id": 5, "email": "someone@example.org"}, "donor.created")
    row = job(db, answer["job_id"])
    assert row["status"] == "skipped" and "donor.created: not synced" in row["message"]


def test_a_donation_not_paid_is_skipped(box, post, db, coded):
    answer = deliver(post, box.donate(506, "10.0", "2026-10-06T15:00:00.000Z", status="failed"))
    run_drain()
    assert job(db, answer["job_id"])["status"] == "skipped" and not gifts_of(coded, 506)


def test_partial_then_full_refund_lower_the_gift_once_each(box, post, coded, db, cli):
    deliver(post, box.donate(507, "100.0", "2026-10-06T15:00:00.000Z"))
    run_drain()
    [gift] = gifts_of(coded, 507)
    first = deliver(post, box.refund(507, "30.0"), "donation.updated")
    run_drain()
    assert job(db, first["job_id"])["status"] == "succeeded" and gift["received_amount"] == 70.0
    assert deliver(post, box.donations[-1], "donation.updated")["status"] == "duplicate"
    deliver(post, box.refund(507, "70.0"), "donation.updated")
    run_drain()
    assert gift["received_amount"] == 0.0 and "via Donorbox" in gift["note"]
    polled = json.loads(cli("poll", "--source", "donorbox", *LOOKBACK, "--json").stdout)["sources"]["donorbox"]
    assert polled["queued"] == 0  # its refunded total is applied: the poll queues nothing again
    listed = json.loads(cli("refunds", "list", "--json").stdout)
    assert listed["totals"]["applied"] == 2 and listed["totals"]["amount_applied"] == "100.00"


def test_a_refund_before_its_gift_waits_and_the_delete_policy_removes_a_whole_refund(box, post, coded, db, cli):
    assert cli("settings", "refund-policy", "delete").exit_code == 0
    donation = box.donate(508, "40.0", "2026-10-06T15:00:00.000Z")
    deliver(post, box.refund(508, "40.0"), "donation.updated")  # the refund came first
    deliver(post, {**donation, "action": "new", "amount_refunded": "0.0", "status": "paid"})
    run_drain()
    assert gifts_of(coded, 508) == []  # made, then deleted by the policy


def test_a_recurring_donation_is_coded_recurring(box, post, coded, cli):
    assert cli("mappings", "types", "set", "donorbox:recurring", "--fund-id", "2400").exit_code == 0
    monthly = {"id": 2, "name": "Monthly givers"}  # no override: the recurring type default codes it
    deliver(post, box.donate(509, "15.0", "2026-10-06T15:00:00.000Z", recurring=True, plan_id=77, campaign=monthly))
    run_drain()
    [gift] = gifts_of(coded, 509)
    assert gift["fund_id"] == 2400 and "recurring plan 77" in gift["note"]


def test_a_lost_webhook_is_found_by_the_poll_and_reconcile_lists_a_deleted_gift(box, post, coded, cli):
    deliver(post, box.donate(510, "20.0", "2026-10-04T15:00:00.000Z"))
    box.donate(511, "35.0", "2026-10-05T15:00:00.000Z")  # its webhook never came
    run_drain()
    polled = json.loads(cli("poll", "--source", "donorbox", *LOOKBACK, "--json").stdout)["sources"]["donorbox"]
    assert polled["queued"] == 1
    run_drain()
    assert len(gifts_of(coded, 511)) == 1
    report = json.loads(cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "donorbox", "--json").stdout)
    assert {i["external_id"]: i["status"] for i in report["items"]} == {"donorbox_510": "matched", "donorbox_511": "matched"}
    [gone] = gifts_of(coded, 510)
    del coded.crm.gifts[gone["id"]]
    result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "donorbox", "--json")
    statuses = {i["external_id"]: i["status"] for i in json.loads(result.stdout)["items"]}
    assert statuses["donorbox_510"] != "matched" and statuses["donorbox_511"] == "matched" and result.exit_code == 1


def test_backfill_queues_the_donations_and_plans_synctool_never_saw(box, coded, cli):
    box.donate(514, "12.0", "2026-09-10T15:00:00.000Z")
    box.plan(91, "10.0")
    period = ("--since", "2026-09-01", "--until", "2026-09-30", "--source", "donorbox")
    dry = json.loads(cli("backfill", *period, "--dry-run", "--json").stdout)
    assert dry["new"] == 1, dry
    done = json.loads(cli("backfill", *period, "--json").stdout)
    assert done["new"] == 1 and done["plans"]["donorbox"]["plans_queued"] == 1, done
    run_drain()
    assert [g["received_amount"] for g in gifts_of(coded, 514)] == [12.0]
    assert cli("plans", "show", "donorbox:91", "--json").exit_code == 0
    again = json.loads(cli("backfill", *period, "--dry-run", "--json").stdout)
    assert again["new"] == 0, again


def test_the_fakes_exchanges_are_described_by_donorboxs_documentation(box, post, coded, cli):
    box.donate(512, "20.0", "2026-10-05T15:00:00.000Z")
    box.plan(90, "10.0")
    assert cli("poll", "--source", "donorbox", *LOOKBACK, "--json").exit_code == 0
    assert cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "donorbox", "--json").exit_code == 1
    connections = {r["name"]: r for r in json.loads(cli("test-connections", "--json").stdout)}
    assert connections["donorbox"]["state"] == "ok", connections["donorbox"]
    exchanges = coded.recorders["donorbox"].exchanges
    assert len(exchanges) >= 3
    assert contracts.problems("donorbox.json", exchanges) == []
    # and a body the description does not have is caught
    bad = [{**exchanges[0], "response": json.dumps([{"id": "x", "amount": 5}]).encode()}]
    assert contracts.problems("donorbox.json", bad)


def test_doctor_says_whether_a_donation_has_a_fund(box, cli, isolated):
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert checks["donorbox fund"]["status"] == "ok" and "donorbox.default_fund_id" in checks["donorbox fund"]["detail"]
    (isolated / "config.yaml").write_text(f"platforms: [{USED}]\n")
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert checks["donorbox fund"]["status"] == "warn" and "donorbox:default" in checks["donorbox fund"]["fix"]


def test_webhooks_register_prints_the_dashboard_steps(box, cli):
    result = cli("webhooks", "register", "--url", "https://sync.example.org", "--source", "donorbox", "--json")
    [done] = json.loads(result.stdout)["registered"]
    assert done["action"] == "dashboard steps" and "https://sync.example.org/webhooks/donorbox" in done["detail"]
    assert "Signature Secret" in done["detail"] and "DONORBOX_WEBHOOK_SECRET" in done["detail"]
    status = json.loads(cli("webhooks", "status", "--source", "donorbox", "--json").stdout)
    [line] = status["sources"]
    assert line["state"] == "ok" and line["where"] == "https://sync.example.org/webhooks/donorbox", line


def test_an_organisation_not_naming_donorbox_sees_nothing_of_it(coded, env):
    from synctool.web.receiver import create_app

    env.update(DONORBOX_WEBHOOK_SECRET=SECRET)
    assert [p.name for p in platforms.in_use(runtime().config)] == list(platforms.DEFAULT_PLATFORMS)
    with TestClient(create_app(runtime())) as client:
        body, headers = signed(coded.donorbox.donate(513, "10.0", "2026-10-06T15:00:00.000Z"), SECRET)
        assert client.post("/webhooks/donorbox", content=body, headers=headers).status_code == 404


GROUP = 704  # the LGL fake's "Monthly Donors"


@pytest.fixture
def grouped(box, cli):
    assert cli("mappings", "plans", "set", "--group", str(GROUP), "--report-type", "2183").exit_code == 0
    return box


def test_a_plan_joins_the_monthly_group_and_its_cancellation_is_followed_up_once(grouped, post, coded, db, cli):
    plan = grouped.plan(77, "15.0", donor={"id": 9, "name": "Ada Byron", "first_name": "Ada", "last_name": "Byron",
                                           "email": "ada@example.org"})  # fmt: skip
    first = deliver(post, plan, "plan.created")
    run_drain()
    assert job(db, first["job_id"])["status"] == "succeeded", job(db, first["job_id"])["last_error"]
    cid = job(db, first["job_id"])["crm_constituent_id"]
    [member] = [m for m in coded.crm.group_memberships.values() if str(m["constituent_id"]) == str(cid)]
    assert member["group_id"] == GROUP and member["is_current"]
    # a charge of the plan: its gift, coded recurring, noted on the plan
    charge = deliver(post, grouped.donate(520, "15.0", "2026-10-06T15:00:00.000Z", recurring=True, plan_id=77,
                                 donor={"email": "ada@example.org", "first_name": "Ada", "last_name": "Byron"}))  # fmt: skip
    run_drain()
    assert job(db, charge["job_id"])["status"] == "succeeded", dict(job(db, charge["job_id"]))
    shown = json.loads(cli("plans", "show", "donorbox:77", "--json").stdout)
    assert [c["external_id"] for c in shown["charges"]] == ["donorbox_520"]
    cancelled = {**plan, "status": "cancelled"}
    for _ in range(2):  # Donorbox's retry of the same body is a duplicate: one report
        deliver(post, cancelled, "plan.updated")
    run_drain()
    reports = [r for r in coded.crm.contact_reports.values() if str(r["constituent_id"]) == str(cid)]
    assert len(reports) == 1 and reports[0]["text"].startswith("Donorbox recurring plan"), reports
    assert not [m for m in coded.crm.group_memberships.values() if str(m["constituent_id"]) == str(cid) and m["is_current"]]
    listed = json.loads(cli("plans", "list", "--json").stdout)
    assert [(p["source"], p["ref"], p["status"]) for p in listed["items"]] == [("donorbox", "donorbox:77", "canceled")]


def test_the_poll_records_a_plan_whose_webhooks_were_lost_and_a_failure_it_finds(grouped, coded, db, cli):
    grouped.plan(78, "20.0", donor={"id": 10, "name": "Bea Lost", "first_name": "Bea", "last_name": "Lost",
                                    "email": "bea@example.org"})  # fmt: skip
    polled = json.loads(cli("poll", "--source", "donorbox", *LOOKBACK, "--json").stdout)["sources"]["donorbox"]
    assert (polled["plans_seen"], polled["plans_queued"]) == (1, 1)
    run_drain()
    assert json.loads(cli("poll", "--source", "donorbox", *LOOKBACK, "--json").stdout)["sources"]["donorbox"]["plans_queued"] == 0
    grouped.plans[-1]["status"] = "failed"
    assert json.loads(cli("poll", "--source", "donorbox", *LOOKBACK, "--json").stdout)["sources"]["donorbox"]["plans_queued"] == 1
    run_drain()
    row = db.execute("SELECT status, constituent_id FROM plans WHERE source = 'donorbox' AND plan_id = '78'").fetchone()
    assert row["status"] == "failed"
    reports = [r for r in coded.crm.contact_reports.values() if str(r["constituent_id"]) == str(row["constituent_id"])]
    assert len(reports) == 1 and "failed to charge" in reports[0]["text"]


def test_a_donor_who_joined_the_mailing_list_is_pushed_to_it(box, post, coded, db, cli):
    assert cli("mailing", "mappings", "set", "b7e21c0d94", "--label", "Newsletter", "--push-donors").exit_code == 0
    deliver(post, box.donate(530, "10.0", "2026-10-06T15:00:00.000Z", join_mailing_list=True,
                             donor={"email": "joiner@example.org", "name": "Joan Joiner", "first_name": None, "last_name": None}))  # fmt: skip
    deliver(post, box.donate(531, "10.0", "2026-10-06T15:00:00.000Z", donor={"email": "quiet@example.org"}))
    run_drain()
    pushed = [r["email"] for r in db.execute("SELECT email FROM jobs WHERE target = 'mailing' ORDER BY email")]
    assert pushed == ["joiner@example.org"]
    [gift] = gifts_of(coded, 530)
    person = coded.crm.constituents[int(gift["constituent_id"])]
    assert (person["first_name"], person["last_name"]) == ("Joan", "Joiner")  # only the full name: split
