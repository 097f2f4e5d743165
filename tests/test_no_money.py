"""No money, no gift: a transaction that took nothing (a Givebutter ticket comped with a 100% discount code, a
$0 Square order, a $0 Stripe checkout of a portal payment that is no scholarship) writes no gift; its job ends
``skipped: no money (...)``, and reconcile and year end count it as matched, never missing. A $0 scholarship is
the portal's own rule and is still a gift (tests/test_portal.py)."""

from __future__ import annotations

import copy
import json

from synctool.fakes import samples
from tests.flow_helpers import CUSTOMER, add_order, give, job, pos_event, run_drain
from tests.test_portal import checkout, portal, push, seed_user  # noqa: F401  (portal: a fixture)


def comped(txn_id: str, day: str = "2026-10-15") -> dict:
    """A ticket bought with a 100% discount code, as Givebutter reports it: succeeded, amount 0, method none."""
    t = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    part = {**t["transactions"][0], "amount": 0, "fee": 0, "fee_covered": 0, "donated": 0, "payout": 0}
    t.update(id=txn_id, amount=0, fee=0, fee_covered=0, donated=0, payout=0, method="none", payment_method="none",
             transacted_at=f"{day}T15:00:00+00:00", created_at=f"{day}T15:00:00+00:00", transactions=[part],
             email=f"{txn_id.lower()}@example.org")  # fmt: skip
    return t


def paid(txn_id: str, amount: float = 50, day: str = "2026-10-15") -> dict:
    t = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    part = {**t["transactions"][0], "amount": amount}
    t.update(id=txn_id, amount=amount, transacted_at=f"{day}T15:00:00+00:00", created_at=f"{day}T15:00:00+00:00",
             transactions=[part], email=f"{txn_id.lower()}@example.org")  # fmt: skip
    return t


def reconcile(cli, source: str, *args: str) -> tuple[int, dict]:
    result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", source, "--json", *args)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def by_ext(report: dict) -> dict:
    return {i["external_id"]: i for i in report["items"]}


def test_a_comped_ticket_writes_no_gift_and_the_sync_log_says_why(coded, receiver, db, cli):
    first = give(receiver, comped("COMP1"))
    # a lone ticket of another comped purchase fetches its transaction: no gift either
    coded.givebutter.add_transaction(comped("COMP2"))
    ticket = give(receiver, {"id": "T-C2", "transaction_id": "COMP2", "email": "comp2@example.org", "price": 0},
                  event="ticket.created")  # fmt: skip
    summary = run_drain()
    assert summary.skipped == 2 and summary.failed == 0
    assert (job(db, first["job_id"])["status"], job(db, first["job_id"])["message"]) == ("skipped", "no money (comped ticket)")
    assert job(db, ticket["job_id"])["message"] == "no money (comped ticket)"
    assert not coded.crm.gifts and not coded.crm.constituents  # no gift, no donor record
    logged = json.loads(cli("syncs", "list", "--json", "--status", "skipped").stdout)
    assert {r["message"] for r in logged["items"]} == {"no money (comped ticket)"}


def test_reconcile_counts_a_comped_ticket_as_no_gift_not_missing(coded, receiver, cli):
    for t in (paid("PAID1"), comped("COMP3")):
        coded.givebutter.add_transaction(t)
        give(receiver, t)
    coded.givebutter.add_transaction(comped("COMP4"))  # never delivered: still no money, so nothing is missing
    run_drain()
    code, report = reconcile(cli, "donations")
    assert code == 0 and report["differences"] == 0, report
    found = by_ext(report)
    assert found["donations_PAID1"]["status"] == "matched"
    for ext in ("donations_COMP3", "donations_COMP4"):
        assert (found[ext]["status"], found[ext]["reason"]) == ("matched", "no gift: no money (comped ticket)")
    code, fixed = reconcile(cli, "donations", "--fix")
    assert fixed["fixed"] == []  # nothing to queue


def test_year_end_does_not_count_a_comped_ticket_as_missing(coded, receiver, cli):
    assert cli("mappings", "types", "set", "donations:default", "--fund-id", "2398", "--no-ack").exit_code == 0
    for t in (paid("YE1", 40, "2025-05-05"), comped("YECOMP", "2025-06-06")):
        coded.givebutter.add_transaction(t)
        give(receiver, t)
    coded.givebutter.add_transaction(comped("YECOMP2", "2025-07-07"))  # never delivered
    run_drain()
    result = cli("year-end", "check", "2025", "--json")
    assert result.exit_code == 0, result.output
    found = json.loads(result.stdout)
    assert found["blockers"] == [] and found["clean"]
    totals = found["totals"]["donations"]
    assert (totals["platform_count"], totals["platform_dollars"], totals["crm_count"]) == (1, "40.00", 1)


def test_a_zero_dollar_square_order_writes_no_gift_and_is_not_missing(coded, receiver, db, cli):
    add_order(coded, "SQFREE", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "OTHER"}], cents=0)
    coded.square.orders["SQFREE"]["created_at"] = "2026-10-20T18:00:00Z"
    coded.square.payments["PFREE"] = {"id": "PFREE", "order_id": "SQFREE", "status": "COMPLETED", "location_id": "FPYCBCHYMXFK1",
                                      "created_at": "2026-10-20T18:00:00Z",
                                      "total_money": {"amount": 0, "currency": "USD"}}  # fmt: skip
    by_order = pos_event(receiver, samples.square_order_event("SQFREE"))
    by_payment = pos_event(receiver, samples.square_payment_event("PFREE", "SQFREE", cents=0))
    run_drain()
    assert job(db, by_order["job_id"])["message"] == "no money ($0 order)"
    assert job(db, by_payment["job_id"])["status"] == "skipped"
    assert not coded.crm.gifts
    code, report = reconcile(cli, "pos")
    assert code == 0 and by_ext(report)["pos_order_SQFREE"] == {**by_ext(report)["pos_order_SQFREE"], "status": "matched",
                                                               "reason": "no gift: no money ($0 order)"}  # fmt: skip


def test_a_zero_dollar_stripe_checkout_that_is_no_scholarship_writes_no_gift_but_its_membership_syncs(portal, db, cli):  # noqa: F811
    seed_user(portal)
    push(portal, "membership", {"id": "mfree", "user_id": "u1", "status": "pending", "start_date": "2026-10-01",
                                "renewal_date": "2027-09-30"})  # fmt: skip
    push(portal, "payment", {"id": "payfree", "user_id": "u1", "type": "membership", "status": "pending", "gateway": "stripe",
                             "amount_cents": 0, "membership_id": "mfree", "created_at": "2026-10-02T10:00:00Z"})  # fmt: skip
    checkout(portal, "payfree", "u1", 0, portal_membership_id="mfree")  # a 100% promotion code
    run_drain()
    crm = portal.world.crm
    assert not crm.gifts and len(crm.memberships) == 1
    [row] = db.execute("SELECT status, message FROM jobs WHERE entity_type = 'payment' AND target = 'crm'").fetchall()
    assert row["status"] == "skipped" and row["message"].startswith("no money ($0 payment, no scholarship)")
    assert "membership mfree sync queued" in row["message"]
    code, report = reconcile(cli, "portal")
    assert code == 0 and by_ext(report)["payfree"]["reason"] == "no gift: no money ($0 payment, no scholarship)"
