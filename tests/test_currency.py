"""One currency (``organisation.currency``): money a platform reports in another currency is held as ``review``
("held: 74.16 CAD in a USD organisation"), never written as the organisation's; it shows on the overview and in
reconcile as held, and is written once, at the amount the bank credited, when a person releases it."""

from __future__ import annotations

import json

from synctool.fakes import samples
from tests.flow_helpers import CUSTOMER, add_order, give, job, pos_event, run_drain
from tests.test_portal import checkout, portal, push, seed_user, stripe  # noqa: F401 (portal: a fixture)
from tests.test_staff_page import page, team  # noqa: F401 (fixtures)

HELD = "held: 74.16 CAD in a USD organisation"


def gifts_of(world, external_id: str) -> list[dict]:
    return [g for g in world.crm.gifts.values() if g["external_id"] == external_id]


def cad_order(world, order_id: str, cents: int = 7416, day: str = "2026-11-20T18:30:00Z") -> None:
    add_order(world, order_id, "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}], cents=cents)
    world.square.orders[order_id]["total_money"]["currency"] = "CAD"
    world.square.orders[order_id]["created_at"] = day


def test_a_cad_square_sale_is_held_then_written_once_at_the_released_amount(coded, receiver, cli, db):
    cad_order(coded, "SQCAD")
    add_order(coded, "SQUSD", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}], cents=2500)
    held = pos_event(receiver, samples.square_order_event("SQCAD"))["job_id"]
    usd = pos_event(receiver, samples.square_order_event("SQUSD"))["job_id"]
    posts = len([r for r in coded.crm.requests if r["method"] == "POST"])
    run_drain()
    row = job(db, held)
    assert row["status"] == "review" and row["message"].startswith(HELD), row["message"]
    assert f"synctool jobs release {held[:8]} --amount" in row["message"]
    assert gifts_of(coded, "pos_order_SQCAD") == []
    # the USD sale went on untouched, and the held one cost no constituent (its check comes before the match)
    assert job(db, usd)["status"] == "succeeded" and [g["received_amount"] for g in gifts_of(coded, "pos_order_SQUSD")] == [25.0]
    assert len([r for r in coded.crm.requests if r["method"] == "POST"]) - posts == 2  # the USD sale: constituent + gift

    overview = json.loads(cli("overview", "--json").stdout)
    [line] = [a for a in overview["attention"] if "another currency" in a["what"]]
    assert line["count"] == 1 and line["page"] == "failed"
    assert job(db, held)["status"] == "review"  # neither failed nor retried by another drain
    run_drain()
    assert job(db, held)["status"] == "review"

    refused = cli("jobs", "release", held, "--amount", "nothing")
    assert refused.exit_code != 0 and gifts_of(coded, "pos_order_SQCAD") == []
    released = cli("jobs", "release", held[:8], "--amount", "54.12", "--json")
    assert released.exit_code == 0, released.output
    said = json.loads(released.stdout)
    assert (said["held"], said["released"], said["jobs_queued"]) == ("74.16 CAD", "54.12 USD", 1)
    run_drain()
    [gift] = gifts_of(coded, "pos_order_SQCAD")
    assert gift["received_amount"] == 54.12 and "74.16 CAD received, written as 54.12 USD" in gift["note"]
    assert job(db, held)["status"] == "succeeded"
    # a second release finds nothing held; another delivery for the sale finds its gift: still one gift
    again = cli("jobs", "release", held, "--amount", "60.00")
    assert again.exit_code != 0 and "holds no money any more" in again.output
    other = pos_event(receiver, samples.square_payment_event("PCAD", "SQCAD", 7416, event_type="payment.updated"))["job_id"]
    run_drain()
    assert job(db, other)["status"] == "skipped"
    assert [g["received_amount"] for g in gifts_of(coded, "pos_order_SQCAD")] == [54.12]
    assert not [a for a in json.loads(cli("overview", "--json").stdout)["attention"] if "another currency" in a["what"]]


def test_a_held_sale_resolved_writes_nothing(coded, receiver, cli, db):
    cad_order(coded, "SQRES")
    held = pos_event(receiver, samples.square_order_event("SQRES"))["job_id"]
    run_drain()
    assert job(db, held)["status"] == "review"
    assert cli("syncs", "resolve", held, "--notes", "entered by hand", "--by", "sam").exit_code == 0
    assert job(db, held)["resolved_at"] and job(db, held)["resolved_by"] == "sam"
    assert cli("jobs", "release", held, "--amount", "54.12").exit_code != 0
    later = pos_event(receiver, samples.square_order_event("SQRES"))["job_id"]
    run_drain()
    assert job(db, later)["status"] == "skipped" and "resolved by sam" in job(db, later)["message"]
    assert gifts_of(coded, "pos_order_SQRES") == []


def test_a_stripe_charge_in_lower_case_cad_is_held_and_released(portal, db, cli):  # noqa: F811
    seed_user(portal)
    push(portal, "payment", {"id": "payc", "user_id": "u1", "type": "donation", "status": "pending", "gateway": "stripe",
                             "amount_cents": 7416})  # fmt: skip
    session = samples.stripe_session("payc", "u1", 7416)
    session["currency"] = "cad"  # Stripe's currencies are lower case
    stripe(portal, "checkout.session.completed", session)
    run_drain()
    [held] = db.execute("SELECT * FROM jobs WHERE entity_type = 'payment' AND entity_id = 'payc'").fetchall()
    assert held["status"] == "review" and held["message"].startswith(HELD), held["message"]
    assert gifts_of(portal.world, "payc") == []
    # the portal's own push of the same payment, naming no currency, keeps the one Stripe named
    push(portal, "payment", {"id": "payc", "user_id": "u1", "type": "donation", "status": "succeeded", "gateway": "stripe",
                             "amount_cents": 7416}, push_id="again")  # fmt: skip
    assert cli("jobs", "release", held["id"], "--amount", "54.12").exit_code == 0
    run_drain()
    [gift] = gifts_of(portal.world, "payc")
    assert gift["received_amount"] == 54.12 and "74.16 CAD" in gift["note"]
    # a USD checkout passes untouched
    push(portal, "payment", {"id": "payu", "user_id": "u1", "type": "donation", "status": "pending", "gateway": "stripe",
                             "amount_cents": 2000})  # fmt: skip
    checkout(portal, "payu", "u1", 2000)
    run_drain()
    assert [g["received_amount"] for g in gifts_of(portal.world, "payu")] == [20.0]


def test_a_givebutter_gift_in_usd_passes_and_one_in_eur_is_held(coded, receiver, db):
    usd = dict(samples.GIVEBUTTER_TRANSACTION, id="GBUSD", currency="USD", email="usd@example.org")
    eur = dict(samples.GIVEBUTTER_TRANSACTION, id="GBEUR", currency="eur", email="eur@example.org")
    jobs = [give(receiver, t)["job_id"] for t in (usd, eur)]
    run_drain()
    assert job(db, jobs[0])["status"] == "succeeded" and len(gifts_of(coded, "donations_GBUSD")) == 1
    assert job(db, jobs[1])["status"] == "review" and " EUR in a USD organisation" in job(db, jobs[1])["message"]
    assert gifts_of(coded, "donations_GBEUR") == []


def test_init_writes_the_currency_and_a_cad_organisation_takes_cad(coded, receiver, cli, db, isolated):
    (isolated / "config.yaml").write_text("# mine\ntimezone: America/Toronto\n")
    result = cli("init", "--currency", "CAD")
    assert result.exit_code == 0, result.output
    text = (isolated / "config.yaml").read_text()
    assert text.startswith("# mine\ntimezone: America/Toronto\n") and "organisation:\n  currency: CAD" in text
    assert cli("init", "--currency", "cad").exit_code == 0
    assert (isolated / "config.yaml").read_text().count("organisation:") == 1
    refused = cli("init", "--currency", "dollars")
    assert refused.exit_code == 2 and "currency" in refused.stderr
    cad_order(coded, "SQCA")
    ok = pos_event(receiver, samples.square_order_event("SQCA"))["job_id"]
    run_drain()
    assert job(db, ok)["status"] == "succeeded"
    assert [g["received_amount"] for g in gifts_of(coded, "pos_order_SQCA")] == [74.16]


def test_reconcile_lists_a_held_sale_as_held_then_matched_once_released(coded, receiver, cli, db):
    cad_order(coded, "SQR", day="2026-10-20T18:00:00Z")
    coded.square.payments["PR"] = {"id": "PR", "order_id": "SQR", "status": "COMPLETED", "location_id": "FPYCBCHYMXFK1",
                                   "created_at": "2026-10-20T18:00:00Z", "total_money": {"amount": 7416, "currency": "CAD"}}  # fmt: skip
    held = pos_event(receiver, samples.square_order_event("SQR"))["job_id"]
    run_drain()

    def report() -> dict:
        result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "pos", "--json")
        return {i["external_id"]: i for i in json.loads(result.stdout)["items"]}

    item = report()["pos_order_SQR"]
    assert item["status"] == "held" and item["reason"].startswith(HELD), item
    year = json.loads(cli("year-end", "check", "2026", "--json").stdout)
    [blocker] = [b for b in year["blockers"] if b["external_id"] == "pos_order_SQR"]
    assert blocker["kind"] == "held" and f"synctool jobs release {held[:8]}" in blocker["fix"]
    fixed = json.loads(
        cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "pos", "--json", "--fix").stdout
    )
    assert [(f["action"], f["status"]) for f in fixed["fixed"]] == [("nothing", "held")]  # --fix queues no second job
    assert cli("jobs", "release", held, "--amount", "54.12").exit_code == 0
    run_drain()
    item = report()["pos_order_SQR"]
    assert (item["status"], item["crm_amount"]) == ("matched", "54.12") and "released at 54.12" in item["reason"]


def test_an_admin_releases_a_held_sale_from_the_failed_page(page, db, cli):  # noqa: F811
    from tests.test_admin import seed_currency_hold
    from tests.test_staff_page import csrf

    held = seed_currency_hold(db)
    assert "74.16 CAD in a USD organisation" in page("viewer").get("/admin/failed").text
    admin = page("admin")
    shown = admin.get("/admin/failed").text
    token = csrf(shown, f"/admin/syncs/{held}/release")
    done = admin.post(f"/admin/syncs/{held}/release", data={"csrf": token, "amount": "54.12", "back": "/admin/failed"})
    assert done.status_code == 303
    assert "74.16 CAD is released at 54.12 USD" in admin.get("/admin/failed").text
    assert db.execute("SELECT status FROM jobs WHERE id = ?", (held,)).fetchone()[0] == "queued"
    [action] = json.loads(cli("syncs", "actions", "--who", "admin@example.org", "--json").stdout)["items"][:1]
    assert (action["action"], action["target"], action["outcome"]) == ("release held money", held, "done")
