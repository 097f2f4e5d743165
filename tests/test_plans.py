"""Monthly donors (issue 53): a Givebutter plan recorded, its donor in the mapped CRM group while they give, and a
failed, paused or canceled plan followed up by one contact report; through the receiver, drain and the poll, against
the Givebutter and LGL fakes. Dates come from the clock (a test passes on any day)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from synctool import mappings, settings
from synctool.crm import gifts
from synctool.platforms.givebutter import plans
from tests.conftest import TEST_SECRETS
from tests.flow_helpers import run_drain
from tests.helpers import runtime

GROUP = 704  # the LGL fake's "Monthly Donors"
CALL = 2183  # its "Call" contact report type


@pytest.fixture
def monthly(coded, receiver, cli, db):
    """The organisation's set-up: charges coded recurring, the plans group, report type and team member mapped;
    Givebutter's webhooks handed to the receiver as they happen."""
    assert (
        cli("mappings", "types", "set", "donations:recurring", "--fund-id", "2398", "--gift-category-id", "5940").exit_code == 0
    )
    mappings.put(db, "plans", "*", {"group_id": GROUP, "contact_report_type_id": CALL, "team_member": "tom@example.org"})

    def deliver(body: bytes) -> None:
        r = receiver.post("/webhooks/donations", content=body, headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]})
        assert r.status_code == 200, r.text

    coded.givebutter.deliver = deliver
    return coded


def ago(days: float) -> datetime:
    return datetime.now(UTC) - timedelta(days=days)


def record(db, plan_id: str):
    return db.execute("SELECT * FROM plans WHERE plan_id = ?", (plan_id,)).fetchone()


def memberships(world, cid: str) -> list[dict]:
    return [m for m in world.crm.group_memberships.values() if str(m["constituent_id"]) == str(cid) and m["group_id"] == GROUP]


def reports(world, cid: str) -> list[dict]:
    return sorted((r for r in world.crm.contact_reports.values() if str(r["constituent_id"]) == str(cid)), key=lambda r: r["id"])


def plan_requests(world) -> list[dict]:
    return [r for r in world.crm.requests if "group_memberships" in r["path"] or "contact_reports" in r["path"]]


def start_day(plan: dict) -> str:
    return gifts.gift_date(plans.moment(plan["start_at"]), runtime().config.timezone)


def test_a_plan_is_recorded_its_donor_grouped_and_its_charges_coded_recurring(monthly, db):
    gb = monthly.givebutter
    plan = gb.create_plan("ada@example.org", "Ada", "Lovelace", 10, at=ago(40))
    run_drain()
    row = record(db, plan["id"])
    assert (row["status"], row["amount"], row["frequency"], row["currency"]) == ("active", "10.00", "monthly", "USD")
    [first] = [t for t in gb.transactions.values() if t["plan_id"] == plan["id"]]
    assert row["last_charge_transaction"] == first["id"] and row["constituent_id"]
    [member] = memberships(monthly, row["constituent_id"])
    assert member["is_current"] and member["date_start"] == start_day(plan)

    asked = len(plan_requests(monthly))
    charge = gb.charge_plan(plan["id"], at=ago(10))
    run_drain()
    by_ext = {g["external_id"]: g for g in monthly.crm.gifts.values()}
    gift = by_ext[f"donations_{charge['id']}"]
    assert gift["gift_category_name"] == "Recurring" and f"recurring plan {plan['id']}, charge {charge['id']}" in gift["note"]
    assert len(plan_requests(monthly)) == asked  # a charge of a donor already in the group: no membership request
    row = record(db, plan["id"])
    assert row["last_charge_transaction"] == charge["id"] and row["last_charge_amount"] == "10.00"
    made = plans.charges(db, plan["id"])
    assert [c["transaction_id"] for c in made] == [first["id"], charge["id"]]
    assert all(c["crm_gift_id"] and c["status"] == "done" for c in made)
    assert len(memberships(monthly, row["constituent_id"])) == 1


def test_a_failure_is_followed_up_once_and_the_next_report_says_it_resumed(monthly, db, receiver):
    gb = monthly.givebutter
    settings.put(db, "plans_chat_webhook", "https://chat.invalid/hooks/T000/B000")
    plan = gb.create_plan("grace@example.org", "Grace", "Hopper", 25, at=ago(70))
    run_drain()
    gb.fail_plan(plan["id"])
    run_drain()
    cid = record(db, plan["id"])["constituent_id"]
    [report] = reports(monthly, cid)
    assert report["contact_report_type_id"] == CALL and plan["id"] in report["text"] and "25.00 USD monthly" in report["text"]
    assert "failed" in report["text"] and "status past_due" in report["text"]
    assert record(db, plan["id"])["status"] == "failed" and record(db, plan["id"])["failures"] == 1
    assert memberships(monthly, cid)[0]["is_current"]  # a failed plan is retried: its donor stays in the group

    failed = gb.announced[-1]
    r = receiver.post(
        "/webhooks/donations",
        content=json.dumps(failed).encode(),
        headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]},
    )
    assert r.status_code == 200
    run_drain()
    assert len(reports(monthly, cid)) == 1  # the replay wrote nothing

    gb.resume_plan(plan["id"])
    run_drain()
    gb.fail_plan(plan["id"])
    run_drain()
    first, second = reports(monthly, cid)
    assert "resumed" in second["text"] and "resumed" not in first["text"]
    chats = db.execute("SELECT key FROM chat_notices WHERE key LIKE ?", (f"plan:{plan['id']}:%",)).fetchall()
    assert len(chats) == 2  # one line per failure, whatever the replays


def test_the_last_plan_canceled_ends_the_membership_a_second_active_plan_keeps_it(monthly, db):
    gb = monthly.givebutter
    one = gb.create_plan("alan@example.org", "Alan", "Turing", 10, at=ago(100))
    run_drain()
    two = gb.create_plan("alan@example.org", "Alan", "Turing", 50, "yearly", at=ago(50))
    run_drain()
    cid = record(db, one["id"])["constituent_id"]
    assert record(db, two["id"])["constituent_id"] == cid
    [member] = memberships(monthly, cid)
    assert member["date_start"] == start_day(one)  # the earliest giving plan's start

    gb.cancel_plan(two["id"])
    run_drain()
    assert record(db, two["id"])["status"] == "canceled" and record(db, two["id"])["ended_at"]
    [member] = memberships(monthly, cid)
    assert member["is_current"]  # the monthly plan still gives
    assert len(reports(monthly, cid)) == 1  # the cancellation followed up

    gb.cancel_plan(one["id"])
    run_drain()
    [member] = memberships(monthly, cid)
    assert not member["is_current"] and member["date_end"]
    assert len(reports(monthly, cid)) == 2


def test_a_changed_amount_is_recorded_and_reported_only_when_asked(monthly, db):
    gb = monthly.givebutter
    plan = gb.create_plan("emmy@example.org", "Emmy", "Noether", 10, at=ago(30))
    run_drain()
    gb.change_plan(plan["id"], amount=15)
    run_drain()
    row = record(db, plan["id"])
    assert row["amount"] == "15.00" and row["changed"] == "amount 10.00 -> 15.00"
    asked = len(plan_requests(monthly))
    gb.pause_plan(plan["id"])
    run_drain()
    [report] = reports(monthly, row["constituent_id"])
    assert "paused" in report["text"] and "Changed" not in report["text"]  # plans_report_changes is off
    assert record(db, plan["id"])["changed"] is None
    assert len(plan_requests(monthly)) == asked + 2  # the report, and the paused donor's membership ended

    settings.put(db, settings.PLANS_REPORT_CHANGES, "on")
    gb.resume_plan(plan["id"])
    run_drain()
    gb.change_plan(plan["id"], amount=20, frequency="quarterly")
    run_drain()
    gb.cancel_plan(plan["id"])
    run_drain()
    last = reports(monthly, row["constituent_id"])[-1]
    assert "Changed: amount 15.00 -> 20.00, frequency monthly -> quarterly" in last["text"] and "resumed" in last["text"]


def test_a_donor_who_changes_e_mail_stays_with_their_constituent(monthly, db):
    gb = monthly.givebutter
    plan = gb.create_plan("kat@example.org", "Katherine", "Johnson", 10, at=ago(20))
    run_drain()
    cid = record(db, plan["id"])["constituent_id"]
    people = len(monthly.crm.constituents)
    gb.change_plan(plan["id"], email="katherine.johnson@example.net")
    run_drain()
    gb.fail_plan(plan["id"])
    run_drain()
    row = record(db, plan["id"])
    assert row["email"] == "katherine.johnson@example.net" and row["constituent_id"] == cid
    assert len(monthly.crm.constituents) == people and len(reports(monthly, cid)) == 1


def test_the_poll_finds_a_plan_change_whose_webhook_was_lost(monthly, db):
    from synctool.platforms.givebutter.poll import poll

    gb = monthly.givebutter
    plan = gb.create_plan("mary@example.org", "Mary", "Somerville", 10, at=ago(60))
    run_drain()
    gb.fail_plan(plan["id"], lost=True)
    result = poll(db, runtime())
    assert result["plans_seen"] == 1 and result["plans_queued"] == 1
    assert poll(db, runtime())["plans_queued"] == 0  # its job waits: a replayed poll queues nothing
    run_drain()
    row = record(db, plan["id"])
    assert row["status"] == "failed" and row["platform_status"] == "past_due"
    [report] = reports(monthly, row["constituent_id"])
    assert "failed" in report["text"]
    assert poll(db, runtime())["plans_queued"] == 0  # the record agrees with Givebutter now


def test_a_failure_the_poll_found_is_not_reported_again_when_its_webhook_comes_late(monthly, db, receiver):
    from synctool.platforms.givebutter.poll import poll

    gb = monthly.givebutter
    plan = gb.create_plan("emmy@example.org", "Emmy", "Noether", 20, at=ago(40))
    run_drain()
    gb.fail_plan(plan["id"], lost=True)  # Givebutter could not deliver it: the poll finds the failure
    assert poll(db, runtime())["plans_queued"] == 1
    run_drain()
    cid = record(db, plan["id"])["constituent_id"]
    assert len(reports(monthly, cid)) == 1
    late = gb.announced[-1]  # then Givebutter's retry of the webhook gets through
    assert late["event"] == "plan.failed"
    r = receiver.post("/webhooks/donations", content=json.dumps(late).encode(),
                      headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]})  # fmt: skip
    assert r.status_code == 200
    run_drain()
    assert len(reports(monthly, cid)) == 1 and record(db, plan["id"])["failures"] == 1
    r = receiver.post("/webhooks/donations", content=json.dumps({**late, "id": late["id"]}).encode(),
                      headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]})  # fmt: skip
    run_drain()  # and again (a replay of the same delivery is refused by its event id; the job would follow the poll's key)
    assert len(reports(monthly, cid)) == 1
    gb.fail_plan(plan["id"])  # a later failure is its own
    run_drain()
    assert len(reports(monthly, cid)) == 2


def test_backfill_brings_in_the_plans_that_began_before_synctool(monthly, db, cli):
    gb = monthly.givebutter
    before = [gb.create_plan(f"early{n}@example.org", "Early", f"Donor{n}", 15, at=ago(200 + n), lost=True) for n in range(3)]
    result = json.loads(cli("backfill", "--since", "365d", "--source", "donations", "--json").stdout)
    assert result["plans"]["donations"]["plans_seen"] == 3 and result["plans"]["donations"]["plans_queued"] == 3
    run_drain()
    for plan in before:
        row = record(db, plan["id"])
        assert row["status"] == "active" and len(memberships(monthly, row["constituent_id"])) == 1
    again = json.loads(cli("backfill", "--since", "365d", "--source", "donations", "--json").stdout)
    assert again["plans"]["donations"]["plans_queued"] == 0  # known and unchanged: nothing queued twice


# -- issue 57: a plan known only from its charges ------------------------------------------------------------------


def plan_reads(world, plan_id: str) -> list[dict]:
    """Givebutter's ``GET /v1/plans/{id}`` requests for one plan."""
    return [r for r in world.givebutter.requests if r["method"] == "GET" and r["path"] == f"/v1/plans/{plan_id}"]


def gifts_of(world, charges: list[dict]) -> list[str]:
    wanted = {f"donations_{c['id']}" for c in charges}
    return sorted(g["external_id"] for g in world.crm.gifts.values() if g["external_id"] in wanted)


def charge_job(db, transaction_id: str):
    return db.execute(
        "SELECT status, message FROM jobs WHERE entity_type = 'transaction' AND entity_id = ?", (transaction_id,)
    ).fetchone()


def test_a_plan_known_only_from_its_charges_is_read_once_and_its_donor_joins_the_group(monthly, db):
    from synctool.platforms.givebutter.poll import poll

    gb = monthly.givebutter
    # its plan.created and first charge never arrived, long before the poll's window
    plan = gb.create_plan("lise@example.org", "Lise", "Meitner", 12, at=ago(90), lost=True)
    charge = gb.charge_plan(plan["id"], at=ago(1))
    run_drain()
    assert gifts_of(monthly, [charge]) == [f"donations_{charge['id']}"]
    row = record(db, plan["id"])
    assert (row["status"], row["amount"], row["last_charge_transaction"]) == ("active", "12.00", charge["id"])
    [member] = memberships(monthly, row["constituent_id"])
    assert member["is_current"] and member["date_start"] == start_day(plan)
    assert len(plan_reads(monthly, plan["id"])) == 1
    assert f"recurring plan {plan['id']} read and recorded" in charge_job(db, charge["id"])["message"]
    assert poll(db, runtime())["plans_queued"] == 0  # the poll finds the record as Givebutter holds the plan

    asked = len(plan_requests(monthly))
    later = gb.charge_plan(plan["id"], at=ago(0))
    run_drain()
    assert gifts_of(monthly, [charge, later]) == sorted([f"donations_{charge['id']}", f"donations_{later['id']}"])
    assert len(plan_reads(monthly, plan["id"])) == 1  # recorded: its next charge reads it no more
    assert len(plan_requests(monthly)) == asked and "read" not in charge_job(db, later["id"])["message"]


def test_a_first_charge_whose_plan_job_waits_reads_nothing(monthly, db):
    gb = monthly.givebutter
    plan = gb.create_plan("chien@example.org", "Chien-Shiung", "Wu", 10, at=ago(3))  # its charge, then plan.created
    run_drain()
    assert plan_reads(monthly, plan["id"]) == []
    assert len(memberships(monthly, record(db, plan["id"])["constituent_id"])) == 1


def test_a_plan_that_cannot_be_read_costs_its_charge_nothing_and_is_read_at_the_next(monthly, db):
    gb = monthly.givebutter
    plan = gb.create_plan("rosalind@example.org", "Rosalind", "Franklin", 20, at=ago(120), lost=True)
    first = gb.charge_plan(plan["id"], at=ago(2))
    kept = gb.plans.pop(plan["id"])  # Givebutter answers 404 for it
    run_drain()
    assert gifts_of(monthly, [first]) == [f"donations_{first['id']}"]  # the gift as before
    done = charge_job(db, first["id"])
    assert done["status"] == "succeeded" and f"recurring plan {plan['id']} not read" in done["message"]
    assert record(db, plan["id"]) is None and len(plan_reads(monthly, plan["id"])) == 1

    gb.plans[plan["id"]] = kept
    second = gb.charge_plan(plan["id"], at=ago(1))
    run_drain()
    assert len(plan_reads(monthly, plan["id"])) == 2  # read again at its next charge
    assert gifts_of(monthly, [first, second]) == sorted([f"donations_{first['id']}", f"donations_{second['id']}"])
    row = record(db, plan["id"])
    assert row["status"] == "active" and [m["is_current"] for m in memberships(monthly, row["constituent_id"])] == [True]
    assert [c["transaction_id"] for c in plans.charges(db, plan["id"])] == [first["id"], second["id"]]


def test_reconcile_plans_fix_puts_back_a_donor_removed_from_the_group_by_hand(monthly, db, cli):
    gb = monthly.givebutter
    plan = gb.create_plan("hedy@example.org", "Hedy", "Lamarr", 15, at=ago(30))
    run_drain()
    cid = record(db, plan["id"])["constituent_id"]
    [member] = memberships(monthly, cid)
    del monthly.crm.group_memberships[member["id"]]  # a person removed Hedy from the group in the CRM

    assert json.loads(cli("reconcile", "--json").stdout)["plans"]["differences"] == 0  # the ledger alone cannot see it
    seen = cli("reconcile", "--plans", "--json")
    [item] = json.loads(seen.stdout)["plans"]["items"]
    assert seen.exit_code == 1 and (item["status"], item["constituent_id"]) == ("not_in_group", cid)
    fixed = cli("reconcile", "--plans", "--fix")
    assert f"--fix plan {plan['id']}: queued" in fixed.stdout
    run_drain()
    [again] = memberships(monthly, cid)
    assert again["is_current"] and again["id"] != member["id"]
    after = cli("reconcile", "--plans", "--json")
    assert json.loads(after.stdout)["plans"]["items"] == [] and after.exit_code == 0, after.stdout
