"""Reconciliation (invariant 9: it reads; --fix only queues jobs that take the normal path), against the
fakes: each status, a month bigger than one CRM page, other tools' gifts, a refund not applied, --fix."""

from __future__ import annotations

import copy
import json

from synctool.fakes import samples
from tests.flow_helpers import give, run_drain


def txn(txn_id: str, amount: float = 50, day: str = "2026-10-15", **changes) -> dict:
    t = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    part = {**t["transactions"][0], "amount": amount}
    t.update({"id": txn_id, "amount": amount, "transacted_at": f"{day}T15:00:00+00:00", "created_at": f"{day}T15:00:00+00:00",
              "transactions": [part], "email": f"{txn_id.lower()}@example.org", **changes})  # fmt: skip
    return t


def reconcile(cli, *args):
    result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "donations", "--json", *args)
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def by_ext(report) -> dict:
    return {i["external_id"]: i for i in report["items"]}


def test_each_status_and_fix_then_clean(coded, receiver, cli, db, env):
    gb = coded.givebutter
    for t in (txn("OK1"), txn("LATE1", 30), txn("REF1", 80), txn("EDIT1", 40), txn("DATE1", 20)):
        gb.add_transaction(t)
        give(receiver, t)
    run_drain()
    gb.add_transaction(txn("LOST1", 25))  # its webhook never came
    # refunded on Givebutter; the refund webhook was lost
    gb.transactions["REF1"]["transactions"][0].update(refunded=True, amount=80)
    gifts = {g["external_id"]: g for g in coded.crm.gifts.values()}
    gifts["donations_EDIT1"]["received_amount"] = 45.0  # a person changed it
    gifts["donations_DATE1"]["received_date"] = "2026-10-02"
    other = coded.crm.create_constituent({"first_name": "Other", "last_name": "Tool"})
    coded.crm.gifts[1] = {
        "id": 1,
        "constituent_id": other["id"],
        "external_id": None,
        "received_amount": 99.0,
        "received_date": "2026-10-09",
    }
    coded.crm.gifts[2] = {
        "id": 2,
        "constituent_id": other["id"],
        "external_id": "donations_GHOSTX",
        "received_amount": 5.0,
        "received_date": "2026-10-09",
    }
    code, report = reconcile(cli)
    assert code == 1
    statuses = {k: v["status"] for k, v in by_ext(report).items()}
    assert statuses == {
        "donations_OK1": "matched",
        "donations_LATE1": "matched",
        "donations_LOST1": "missing",
        "donations_REF1": "refund_not_applied",
        "donations_EDIT1": "amount_differs",
        "donations_DATE1": "date_differs",
        "donations_GHOSTX": "extra",
    }
    assert "never arrived" in by_ext(report)["donations_LOST1"]["reason"]
    assert report["totals"]["other_tools"] == {"count": 1, "dollars": "99.00"}
    assert [i["status"] for i in report["items"]][:2] == ["missing", "refund_not_applied"]  # differences first
    assert report["crm_requests"] == 1
    writes = [r for r in coded.crm.requests if r["method"] != "GET"]
    env["COLUMNS"] = "100"  # the table, the totals and the summary line fit a 100-column terminal
    shown = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "donations").stdout
    assert max(len(line) for line in shown.splitlines()) <= 100, shown
    assert "2026-10-01..2026-10-31: 5 difference(s)" in shown
    code, fixed = reconcile(cli, "--fix")
    assert {f["external_id"] for f in fixed["fixed"] if f["action"] != "nothing"} == {"donations_LOST1", "donations_REF1"}
    left = {f["external_id"]: f["why"] for f in fixed["fixed"] if f["action"] == "nothing"}
    assert set(left) == {"donations_EDIT1", "donations_GHOSTX", "donations_DATE1"} and all(left.values())  # each says why
    assert [r for r in coded.crm.requests if r["method"] != "GET"] == writes  # --fix wrote nothing to the CRM
    run_drain()
    code, after = reconcile(cli)
    statuses = {k: v["status"] for k, v in by_ext(after).items()}
    assert statuses["donations_LOST1"] == statuses["donations_REF1"] == "matched"
    assert statuses["donations_EDIT1"] == "amount_differs" and statuses["donations_GHOSTX"] == "extra"  # for a person
    assert by_ext(after)["donations_REF1"]["crm_amount"] == "0.00"
    # the lost refund webhook arrives after all: Givebutter's refunded total shows it is already applied
    late = give(receiver, {"id": "rf_late", "transaction_id": "REF1", "amount": 80}, event="refund.created")
    run_drain()
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (late["job_id"],)).fetchone()[0] == "skipped"
    assert [g for g in coded.crm.gifts.values() if g["external_id"] == "donations_REF1"][0]["received_amount"] == 0.0
    quiet = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--quiet")
    assert quiet.exit_code == 1 and quiet.stdout.count("\n") == 1 and "amount_differs" in quiet.stdout


def test_a_month_bigger_than_one_crm_page_costs_a_few_requests(coded, receiver, cli, db):
    other = coded.crm.create_constituent({"first_name": "Many", "last_name": "Gifts"})
    for n in range(620):
        t = txn(f"M{n:04d}", 10, day=f"2026-10-{1 + n % 28:02d}")
        coded.givebutter.add_transaction(t)
        gid = 500000 + n
        coded.crm.gifts[gid] = {"id": gid, "constituent_id": other["id"], "external_id": f"donations_M{n:04d}",
                                "received_amount": 10.0, "received_date": t["transacted_at"][:10]}  # fmt: skip
    code, report = reconcile(cli)
    assert code == 0 and report["totals"]["by_status"]["matched"] == 620 and report["differences"] == 0
    assert report["crm_requests"] == 3  # 620 gifts, 250 a page
    assert report["platform_requests"]["donations"] == 7  # 100 a page
    assert cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--quiet").stdout == ""


def test_square_and_portal_money_reconciled(coded, receiver, cli):
    from tests.flow_helpers import CUSTOMER, add_order, pos_event

    add_order(coded, "SQ1", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}], cents=3000)
    coded.square.orders["SQ1"]["created_at"] = "2026-10-20T18:00:00Z"
    coded.square.payments["P1"] = {"id": "P1", "order_id": "SQ1", "status": "COMPLETED", "location_id": "FPYCBCHYMXFK1",
                                   "created_at": "2026-10-20T18:00:00Z", "total_money": {"amount": 3000, "currency": "USD"},
                                   "refunded_money": {"amount": 1000, "currency": "USD"}, "refund_ids": ["R1"]}  # fmt: skip
    coded.square.refunds["R1"] = {"id": "R1", "status": "COMPLETED", "amount_money": {"amount": 1000}, "payment_id": "P1",
                                  "order_id": "SQ1", "location_id": "FPYCBCHYMXFK1", "created_at": "2026-10-21T10:00:00Z"}  # fmt: skip
    pos_event(receiver, samples.square_order_event("SQ1"))
    run_drain()
    result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "pos", "--json", "--fix")
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and by_ext(report)["pos_order_SQ1"]["status"] == "refund_not_applied"
    run_drain()
    result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "pos", "--json")
    assert result.exit_code == 0, result.stdout
    assert by_ext(json.loads(result.stdout))["pos_order_SQ1"]["crm_amount"] == "20.00"
    # a second --fix after the refund came in by webhook too changes nothing: the refund's own id is its key
    pos_event(receiver, samples.square_refund_event("R1", "P1", 1000, order_id="SQ1", event_type="refund.updated"))
    run_drain()
    assert [g for g in coded.crm.gifts.values() if g["external_id"] == "pos_order_SQ1"][0]["received_amount"] == 20.0


def test_bad_periods_are_usage_errors(cli, db):
    bad = cli("reconcile", "--from", "2026-10-31", "--to", "2026-10-01")
    assert bad.exit_code == 2 and "before" in bad.output
    assert cli("reconcile", "--from", "yesterday").exit_code == 2
    assert cli("reconcile", "--source", "mailing").exit_code == 2


def test_payouts_show_each_deposit_and_write_deposit_fields(coded, receiver, cli, db):
    gb = coded.givebutter
    for n, amount in enumerate((50, 30, 20)):
        t = txn(f"PO{n}", amount, payout_id="po_gb_1", payout=amount - 1.5, fee=1.5, fee_covered=0)
        gb.add_transaction(t)
        if n < 2:
            give(receiver, t)  # the third never synced
    gb.payouts["po_gb_1"] = {"id": "po_gb_1", "amount": 95.5, "status": "paid", "paid_at": "2026-10-18T00:00:00+00:00"}
    run_drain()
    result = cli("reconcile", "payouts", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "donations", "--json")
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)["payouts"]
    assert (row["payout_id"], row["date"], row["gross"], row["fees"], row["net"]) == (
        "po_gb_1",
        "2026-10-18",
        "100.00",
        "4.50",
        "95.50",
    )
    assert (row["with_gift"], row["transactions"], row["without_gift"]) == (2, 3, ["donations_PO2"])
    assert row["problem"] is None and row["difference"] == "0.00"
    assert "po_gb_1" in cli("reconcile", "payouts", "--from", "2026-10-01", "--to", "2026-10-31").stdout
    mark = len(coded.crm.requests)
    assert cli("reconcile", "payouts", "--from", "2026-10-01", "--to", "2026-10-31", "--write-deposits").exit_code == 0
    # queued, not written: one search read whether the CRM still holds the two gifts
    assert [(r["method"], r["path"]) for r in coded.crm.requests[mark:]] == [("GET", "/api/v1/gifts/search")]
    run_drain()
    patched = [r for r in coded.crm.requests[mark:] if r["method"] == "PATCH"]
    assert len(patched) == 2
    assert {"deposit_date": "2026-10-18", "deposited_amount": 48.5} in [p["body"] for p in patched]
    gift = [g for g in coded.crm.gifts.values() if g["external_id"] == "donations_PO0"][0]
    assert (gift["deposit_date"], gift["deposited_amount"]) == ("2026-10-18", 48.5)
    # again: nothing new to write
    cli("reconcile", "payouts", "--from", "2026-10-01", "--to", "2026-10-31", "--write-deposits")
    run_drain()
    assert len([r for r in coded.crm.requests[mark:] if r["method"] == "PATCH"]) == 2


def test_square_payout_entries_add_up_with_a_refund_whose_fee_came_back(coded, cli):
    """Reference B7: for every entry net = gross - fee; a REFUND's amounts are negative, its fee too when the
    processing fee is returned. The row's gross - fees - refunds is its net, and the payout's own amount."""
    sq = coded.square
    sq.payments["P9"] = {"id": "P9", "order_id": "O9", "status": "COMPLETED", "location_id": "FPYCBCHYMXFK1",
                         "created_at": "2026-10-10T18:00:00Z", "total_money": {"amount": 21849}}  # fmt: skip
    sq.payouts["po_sq_1"] = {"id": "po_sq_1", "location_id": "FPYCBCHYMXFK1", "status": "PAID", "created_at": "2026-10-12T08:00:00Z",
                             "arrival_date": "2026-10-13", "amount_money": {"amount": 19731}}  # fmt: skip
    sq.payout_entries["po_sq_1"] = [
        {"id": "e1", "payout_id": "po_sq_1", "type": "CHARGE", "gross_amount_money": {"amount": 21849}, "fee_amount_money": {"amount": 662},
         "net_amount_money": {"amount": 21187}, "type_charge_details": {"payment_id": "P9"}},
        {"id": "e2", "payout_id": "po_sq_1", "type": "REFUND", "gross_amount_money": {"amount": -1500}, "fee_amount_money": {"amount": -44},
         "net_amount_money": {"amount": -1456}, "type_refund_details": {"payment_id": "P9", "refund_id": "R9"}},
    ]  # fmt: skip
    result = cli("reconcile", "payouts", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "pos", "--json")
    [row] = json.loads(result.stdout)["payouts"]
    assert (row["date"], row["gross"], row["fees"], row["refunds"], row["net"], row["stated_net"]) == (
        "2026-10-13", "218.49", "6.18", "15.00", "197.31", "197.31",
    )  # fmt: skip
    assert row["problem"] is None and row["without_gift"] == ["pos_order_O9"]
    # a payout whose own amount is not what its entries add up to is flagged with the difference
    sq.payouts["po_sq_1"]["amount_money"] = {"amount": 19775}
    [row] = json.loads(
        cli("reconcile", "payouts", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "pos", "--json").stdout
    )["payouts"]
    assert row["difference"] == "0.44" and "the payout is 197.75, its entries 197.31" in row["problem"]
    assert "197.75" in cli("reconcile", "payouts", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "pos").stdout


def test_a_payout_counts_only_the_gifts_the_crm_still_holds(coded, receiver, cli, db):
    gb = coded.givebutter
    for n in range(3):
        t = txn(f"PD{n}", 20, payout_id="po_gb_2", payout=19, fee=1, fee_covered=0)
        gb.add_transaction(t)
        give(receiver, t)
    gb.payouts["po_gb_2"] = {"id": "po_gb_2", "amount": 57, "status": "paid", "paid_at": "2026-10-20T00:00:00+00:00"}
    run_drain()
    deleted = [g for g in coded.crm.gifts.values() if g["external_id"] == "donations_PD1"][0]
    del coded.crm.gifts[deleted["id"]]  # a person deleted it in the CRM
    result = cli("reconcile", "payouts", "--from", "2026-10-01", "--to", "2026-10-31", "--write-deposits", "--json")
    [row] = json.loads(result.stdout)["payouts"]
    assert (row["with_gift"], row["transactions"], row["not_in_crm"]) == (2, 3, ["donations_PD1"])
    assert json.loads(result.stdout)["deposits_queued"] == 2
    mark = len(coded.crm.requests)
    run_drain()
    patched = [r["path"] for r in coded.crm.requests[mark:] if r["method"] == "PATCH"]
    assert len(patched) == 2 and f"/api/v1/gifts/{deleted['id']}" not in patched


def test_a_failed_sync_is_missing_with_its_error_and_fix_retries_it(coded, receiver, cli, db, tmp_path):
    fields = [{"id": 1, "field_id": 77, "title": "How did you hear about us?", "type": "text", "value": "A billboard"}]
    t = txn("FAIL1", 60, custom_fields=fields)
    coded.givebutter.add_transaction(t)
    give(receiver, t)
    run_drain()
    out = tmp_path / "october.csv"
    code, report = reconcile(cli, "--csv", str(out))
    item = by_ext(report)["donations_FAIL1"]
    assert code == 1 and item["status"] == "missing" and item["reason"].startswith("failed: ") and "A billboard" in item["reason"]
    assert "donations_FAIL1,FAIL1,missing,60.00" in out.read_text()
    assert cli("mappings", "remove", "custom_field", "77").exit_code == 0  # the cause, fixed by a person
    code, fixed = reconcile(cli, "--fix")
    assert [(f["external_id"], f["action"]) for f in fixed["fixed"]] == [("donations_FAIL1", "retried")]
    run_drain()
    code, after = reconcile(cli)
    assert code == 0 and by_ext(after)["donations_FAIL1"]["status"] == "matched"


def test_fix_remakes_a_vanished_gift_and_says_why_it_leaves_the_rest(coded, receiver, cli, db):
    for name in ("VA", "VB"):
        t = txn(name, 40)
        coded.givebutter.add_transaction(t)
        give(receiver, t)
    run_drain()
    gone = [g for g in coded.crm.gifts.values() if g["external_id"] == "donations_VA"][0]
    del coded.crm.gifts[gone["id"]]  # deleted in the CRM by mistake
    edited = [g for g in coded.crm.gifts.values() if g["external_id"] == "donations_VB"][0]
    edited["received_amount"] = 35.0  # a person's edit
    result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "donations", "--fix")
    said = " ".join(result.stdout.split())  # the lines wrap at the terminal's width
    assert result.exit_code == 1
    assert "--fix donations_VA: re-made (job " in said and f"CRM gift {gone['id']}" in said
    assert "--fix donations_VB: nothing: the gift is in the CRM as a person or a rule left it" in said
    run_drain()
    code, report = reconcile(cli)
    assert by_ext(report)["donations_VA"]["status"] == "matched" and code == 1
    remade = [j for j in json.loads(cli("syncs", "list", "--json").stdout)["items"] if j["external_id"] == "donations_VA"]
    assert remade[0]["status"] == "succeeded"
    assert len([g for g in coded.crm.gifts.values() if g["external_id"] == "donations_VA"]) == 1


def edited_by_hand(world, receiver, txn_id: str = "AC", amount: float = 40, in_crm: float = 30) -> dict:
    """A gift synced, then its amount changed by hand in the CRM: an ``amount_differs``. Returns the CRM gift."""
    t = txn(txn_id, amount)
    world.givebutter.add_transaction(t)
    give(receiver, t)
    run_drain()
    gift = [g for g in world.crm.gifts.values() if g["external_id"] == f"donations_{txn_id}"][0]
    gift["received_amount"] = float(in_crm)
    return gift


def test_an_accepted_difference_stays_accepted_until_it_changes(coded, receiver, cli, db):
    gift = edited_by_hand(coded, receiver)
    assert reconcile(cli)[0] == 1
    missing = cli("reconcile", "accept", "donations_NOPE", "--note", "x")
    assert missing.exit_code == 3 and "not among the last reconcile's differences" in missing.output
    accepted = cli("reconcile", "accept", "donations_AC", "--note", "the donor asked for $10 back by cheque", "--by", "Ana")
    assert accepted.exit_code == 0, accepted.output
    code, report = reconcile(cli)
    assert code == 0 and report["differences"] == 0
    row = by_ext(report)["donations_AC"]
    assert row["status"] == "accepted" and "Ana" in row["reason"] and "cheque" in row["reason"]
    listed = json.loads(cli("reconcile", "accepted", "--json").stdout)["items"]
    assert [(r["external_id"], r["status"], r["crm_amount"], r["accepted_by"]) for r in listed] == [
        ("donations_AC", "amount_differs", "30.00", "Ana")
    ]
    assert "donations_AC" in cli("reconcile", "accepted").stdout
    gift["received_amount"] = 25.0  # a new difference on the same item is reported again
    code, report = reconcile(cli)
    assert code == 1 and by_ext(report)["donations_AC"]["status"] == "amount_differs"
