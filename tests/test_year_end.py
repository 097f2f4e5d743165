"""Year-end ready: on a seeded year of clean gifts with one planted instance of each blocker, `synctool year-end
check` names each blocker and nothing else, in the table, --json and the CSV; a reviewed difference is listed
as reviewed; soft credits are never money; the daily summary counts the blockers in December. Through the
receiver, drain and the CLI against the fakes."""

from __future__ import annotations

import copy
import csv
import json

import pytest

from synctool.fakes import samples
from tests.flow_helpers import give, run_drain

YEAR = 2025


def txn(txn_id: str, when: str, amount: float = 40, *, n: int = 0, **changes) -> dict:
    t = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    part = {**t["transactions"][0], "amount": amount, "donated": amount}
    t.update(id=txn_id, amount=amount, donated=amount, transacted_at=when, created_at=when, transactions=[part],
             email=f"donor{n}@example.org", first_name="Donor", last_name=f"Number{n}")  # fmt: skip
    t["address"] = {**t["address"], "address_1": f"{n} Analytical Way"}
    t.update(changes)
    return t


def crm_gift(world, external_id: str) -> dict:
    return next(g for g in world.crm.gifts.values() if g["external_id"] == external_id)


@pytest.fixture
def year(coded, receiver, cli, env, tmp_path):
    """2025 in Los Angeles with 6 clean gifts and one planted instance of each blocker (``seed``)."""
    return seed(coded, receiver, cli, tmp_path, clean=6)


def seed(coded, receiver, cli, tmp_path, *, clean: int):
    """2025 in Los Angeles: ``clean`` gifts (every donor with an address, acknowledged with do_not_ack), then one
    planted instance of each blocker. Returns the world and what was planted, by kind."""
    (tmp_path / "config.yaml").write_text("timezone: America/Los_Angeles\n")
    assert (
        cli("mappings", "types", "set", "donations:default", "--fund-id", "2398", "--campaign-id", "822", "--no-ack").exit_code
        == 0
    )
    world = coded
    for n in range(clean):
        t = txn(f"C{n:03d}", f"{YEAR}-{1 + n % 12:02d}-{1 + n % 27:02d}T18:00:00+00:00", 20 + n % 50, n=n)
        world.givebutter.add_transaction(t)
        give(receiver, t)
    # a donor over $250 in the year, with an address: clean
    for k in range(3):
        t = txn(f"BIG{k}", f"{YEAR}-05-0{k + 1}T18:00:00+00:00", 100, n=500)
        world.givebutter.add_transaction(t)
        give(receiver, t)
    planted: dict[str, str] = {}
    # wrong year: 23:30 on 31 December in Los Angeles, dated 1 January in the CRM
    late = txn("LATE", f"{YEAR + 1}-01-01T07:30:00+00:00", 50, n=601)
    # a ticket with a fair market value, counted fully deductible
    ticket = txn("TICKET", f"{YEAR}-06-10T18:00:00+00:00", 100, n=602, fair_market_value_amount=60)
    # a donor over $250 with no mailing address
    homeless = [txn(f"NOADDR{k}", f"{YEAR}-03-0{k + 1}T18:00:00+00:00", 100, n=603, address=None) for k in range(3)]
    # amount changed by hand, ack removed by hand, a difference a person accepted
    edited = txn("EDITED", f"{YEAR}-07-01T18:00:00+00:00", 80, n=604)
    unacked = txn("UNACKED", f"{YEAR}-08-01T18:00:00+00:00", 30, n=605)
    reviewed = txn("REVIEWED", f"{YEAR}-09-01T18:00:00+00:00", 45, n=606)
    # refunded on the platform, the refund never reached synctool
    refunded = txn("REFUNDED", f"{YEAR}-10-01T18:00:00+00:00", 60, n=607)
    for t in (late, ticket, *homeless, edited, unacked, reviewed, refunded):
        world.givebutter.add_transaction(t)
        give(receiver, t)
    run_drain()
    crm_gift(world, "donations_LATE")["received_date"] = f"{YEAR + 1}-01-01"
    crm_gift(world, "donations_TICKET")["deductible_amount"] = 100.0
    crm_gift(world, "donations_EDITED")["received_amount"] = 70.0
    crm_gift(world, "donations_UNACKED")["ack_template_name"] = None
    crm_gift(world, "donations_REVIEWED")["received_amount"] = 40.0
    world.givebutter.transactions["REFUNDED"]["transactions"][0].update(refunded=True, refunded_at=f"{YEAR}-10-05T00:00:00+00:00")
    # money never delivered, and a gift in the CRM with synctool's prefix that no platform explains
    missing = txn("MISSING", f"{YEAR}-11-11T18:00:00+00:00", 25, n=608)
    world.givebutter.add_transaction(missing)
    ghost = world.crm.create_constituent({"first_name": "Ghost", "last_name": "Giver"})
    gid = world.crm.new_id()
    world.crm.gifts[gid] = {"id": gid, "constituent_id": ghost["id"], "external_id": "donations_GHOST", "received_amount": 15.0,
                            "deductible_amount": 15.0, "received_date": f"{YEAR}-04-04", "gift_type_name": "Gift",
                            "ack_template_name": "do_not_ack"}  # fmt: skip
    planted.update(missing="donations_MISSING", amount_differs="donations_EDITED", refund_not_applied="donations_REFUNDED",
                   extra="donations_GHOST", wrong_year="donations_LATE", deductible="donations_TICKET",
                   no_acknowledgement="donations_UNACKED")  # fmt: skip
    return world, planted


def check(cli, *args):
    result = cli("year-end", "check", str(YEAR), *args)
    assert result.exit_code in (0, 1), result.output
    return result


def test_each_planted_blocker_is_named_and_nothing_else(coded, receiver, cli, db, tmp_path):
    world, planted = seed(coded, receiver, cli, tmp_path, clean=240)
    first = json.loads(check(cli, "--json").stdout)
    # a person reviews one difference with reconcile accept: it is listed as reviewed, not as a blocker
    assert cli("reconcile", "accept", "donations_REVIEWED", "--note", "the donor asked for $5 back by cheque").exit_code == 0
    result = check(cli, "--json", "--csv", str(tmp_path / "ye.csv"))
    assert result.exit_code == 1
    found = json.loads(result.stdout)
    named = {(b["kind"], b["external_id"]) for b in found["blockers"] if b["external_id"]}
    assert named == {(kind, ext) for kind, ext in planted.items()}, found["blockers"]
    homeless = [b for b in found["blockers"] if b["kind"] == "no_address"]
    assert len(homeless) == 1 and homeless[0]["crm_amount"] == "300.00" and homeless[0]["constituent"] == "Donor Number603"
    assert len(found["blockers"]) == len(planted) + 1
    assert {b["kind"] for b in first["blockers"]} >= {"amount_differs"} and "donations_REVIEWED" in {
        b["external_id"] for b in first["blockers"]
    }
    assert [r["external_id"] for r in found["reviewed"]] == ["donations_REVIEWED"]
    by_ext = {b["external_id"]: b for b in found["blockers"]}
    assert "31" not in by_ext["donations_LATE"]["crm_date"] and by_ext["donations_LATE"]["platform_date"] == f"{YEAR}-12-31"
    assert by_ext["donations_TICKET"]["allowed"] == "40.00" and "fair market value" in by_ext["donations_TICKET"]["detail"]
    assert "reconcile --from 2025-01-01 --to 2025-12-31 --fix" in by_ext["donations_MISSING"]["fix"]
    assert all(b["fix"] for b in found["blockers"]) and all(
        b["constituent_id"] for b in found["blockers"] if b["kind"] != "missing"
    )
    totals = found["totals"]["donations"]
    assert totals["platform_count"] == 240 + 3 + 1 + 1 + 3 + 4 + 1  # LATE counts in 2025 on the platform's side
    # the table names the same blockers
    table = check(cli).stdout
    for ext in planted.values():
        assert ext in table
    assert "the year is not ready" in table
    # the CSV: one row per blocker, then a totals row per platform
    rows = list(csv.DictReader(open(tmp_path / "ye.csv")))
    assert [r["kind"] for r in rows[:-1]] == [b["kind"] for b in found["blockers"]]
    assert (
        rows[-1]["kind"] == "total"
        and rows[-1]["source"] == "donations"
        and rows[-1]["platform_amount"] == totals["platform_dollars"]
    )
    # quiet: one line for cron
    quiet = check(cli, "--quiet").stdout.strip().splitlines()
    assert len(quiet) == 1 and quiet[0].startswith(f"year-end {YEAR}: {len(found['blockers'])} blocker(s)")


def test_fixing_the_blockers_makes_the_year_ready(year, cli, db):
    world, planted = year
    check(cli)
    assert cli("reconcile", "--from", f"{YEAR}-01-01", "--to", f"{YEAR}-12-31", "--fix").exit_code == 1
    run_drain()  # the missing gift is made, the refund applied
    crm_gift(world, "donations_LATE")["received_date"] = f"{YEAR}-12-31"
    crm_gift(world, "donations_TICKET")["deductible_amount"] = 40.0
    crm_gift(world, "donations_EDITED")["received_amount"] = 80.0
    crm_gift(world, "donations_UNACKED")["ack_template_name"] = "do_not_ack"
    for gift in [g for g in world.crm.gifts.values() if g["external_id"] == "donations_GHOST"]:
        del world.crm.gifts[gift["id"]]
    noaddr = next(c for c in world.crm.constituents.values() if c.get("last_name") == "Number603")
    world.crm.add_contact_row(noaddr["id"], "street_addresses", {"street": "1 New Home", "postal_code": "94607"})
    world.crm.touch(noaddr["id"])
    assert cli("reconcile", "accept", "donations_REVIEWED", "--note", "cheque").exit_code in (0, 3)
    result = check(cli, "--json")
    found = json.loads(result.stdout)
    assert [b["kind"] for b in found["blockers"] if b["external_id"] != "donations_REVIEWED"] == []


def test_soft_credits_are_never_money_and_the_cost_is_said_first(coded, receiver, cli, env):
    from tests.test_donor_record import known_fundraiser, transaction

    known_fundraiser(coded)
    t = transaction(
        txn_id="P2PYE", amount=50, transacted_at=f"{YEAR}-05-05T18:00:00+00:00", created_at=f"{YEAR}-05-05T18:00:00+00:00"
    )
    coded.givebutter.add_transaction(t)
    give(receiver, t)
    run_drain()
    dry = cli("year-end", "check", str(YEAR), "--dry-run")
    assert dry.exit_code == 0 and "about 3 CRM requests" in dry.stdout and "minute" in dry.stdout
    found = json.loads(check(cli, "--json").stdout)
    assert found["soft_credits"] == 1 and found["totals"]["donations"]["crm_dollars"] == "50.00"
    said = cli("year-end", "check", str(YEAR))
    assert "year-end check 2025: about" in said.stderr


def test_a_year_to_come_or_long_gone_is_a_usage_error(cli, db):
    assert cli("year-end", "check", "2099").exit_code == 2
    assert cli("year-end", "check", "1999").exit_code == 2


def test_the_daily_summary_counts_the_years_blockers_from_december(year, cli, db):
    from datetime import UTC, datetime

    from synctool.ops.alerts import summary
    from tests.helpers import runtime

    def report(day: datetime) -> dict:
        return summary(db, runtime(clock=lambda: day), send=False)

    assert report(datetime(YEAR, 11, 20, tzinfo=UTC))["year_end"] is None
    unchecked = report(datetime(YEAR, 12, 1, 18, tzinfo=UTC))["year_end"]
    assert unchecked == {"year": YEAR, "checked_at": None, "blockers": None, "by_kind": None}
    check(cli)
    counted = report(datetime(YEAR, 12, 5, 18, tzinfo=UTC))["year_end"]
    assert counted["blockers"] == 9 and counted["by_kind"]["wrong_year"] == 1
    assert report(datetime(YEAR + 1, 1, 4, 18, tzinfo=UTC))["year_end"]["year"] == YEAR  # January: the statements' year
    text = cli("alerts", "summary", "--dry-run").stdout
    assert "Year-end" not in text or str(YEAR + 1) in text  # today (2026-11) is out of season


def test_the_staff_page_and_the_api_show_the_last_check(year, cli, db, env):
    from starlette.testclient import TestClient

    from synctool.web.admin_api import routes as api_routes
    from synctool.web.receiver import create_app
    from synctool.web.staff_page import routes as page_routes
    from tests.helpers import runtime
    from tests.test_admin import JWT_SECRET

    check(cli)
    env["ADMIN_JWT_SECRET"] = JWT_SECRET
    assert cli("users", "invite", "books@example.org", "--role", "admin").exit_code == 0
    rt = runtime()
    with TestClient(create_app(rt, routes=api_routes(rt) + page_routes(rt)), follow_redirects=False) as client:
        url = json.loads(cli("users", "login-link", "books@example.org", "--json").stdout)["url"]
        assert client.post("/admin/" + url.split("/admin/", 1)[1]).status_code == 303
        shown = client.get("/admin/year-end", params={"year": YEAR}).text
        assert "9 blocker(s)" in shown and "donations_TICKET" in shown and "wrong year" in shown
        token = next(
            line.split()[1] for line in cli("users", "token", "books@example.org").stdout.splitlines() if line.startswith("token")
        )
        stored = client.get(f"/api/year-end/{YEAR}", headers={"Authorization": f"Bearer {token}"}).json()
        assert stored["blockers"] == 9 and len(stored["items"]) == 9
        assert client.get(f"/api/year-end/{YEAR - 1}", headers={"Authorization": f"Bearer {token}"}).status_code == 404
