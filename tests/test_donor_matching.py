"""No duplicate donors: a known donor giving under a new e-mail is found on the mirror by name (nicknames, small
typos) and street address or phone, and held for review, matched, or (``email``) made anew, never doubled; a
name alone, a same-name stranger and a household's other member never match. Through the receiver, drain and
the CLI against the fakes."""

from __future__ import annotations

import copy
import json

import pytest

from synctool.crm import matching
from synctool.fakes import samples
from tests.flow_helpers import give, job, run_drain

ROBERT = {
    "first_name": "Robert",
    "last_name": "Smith",
    "email_addresses": [{"address": "robert@work.org"}],
    "phone_numbers": [{"number": "(510) 555-0100"}],
    "street_addresses": [{"street": "14 Elm Street", "city": "Oakland", "state": "CA", "postal_code": "94607-1234"}],
}


def gift(txn_id: str, first: str, last: str, email: str, *, street: str = "14 Elm St.", zipcode: str = "94607",
         phone: str | None = None, company: str | None = None, amount: float = 25) -> dict:  # fmt: skip
    t = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    part = {**t["transactions"][0], "amount": amount}
    t.update(id=txn_id, first_name=first, last_name=last, email=email, phone=phone, company=company, amount=amount,
             transactions=[part], address={**t["address"], "address_1": street, "zipcode": zipcode})  # fmt: skip
    return t


@pytest.fixture
def known(coded, env, cli):
    """The CRM holds Robert Smith (robert@work.org, 14 Elm Street 94607, (510) 555-0100) and the mirror is loaded."""
    robert = coded.crm.create_constituent(copy.deepcopy(ROBERT))["id"]
    assert cli("crm", "mirror", "--refresh").exit_code == 0
    return coded, str(robert)


def policy(env, how: str) -> None:
    env["DONORS_MATCHING"] = how


def constituents_named(world, last: str) -> list[dict]:
    return [c for c in world.crm.constituents.values() if c.get("last_name") == last]


def test_review_holds_a_known_donor_under_a_new_email_until_a_person_accepts_then_the_gift_is_made_once(
    known, receiver, cli, db, env
):
    world, robert = known
    policy(env, "review")
    held = give(receiver, gift("T1", "Bob", "Smith", "bob.smith@gmail.com"))["job_id"]
    summary = run_drain()
    assert job(db, held)["status"] == "review" and summary.review == 1
    assert "held for review (donor match" in job(db, held)["message"]
    assert run_drain().claimed == 0  # not retried
    listed = json.loads(cli("donors", "matches", "--json").stdout)
    assert listed["pending"] == 1
    match = listed["items"][0]
    assert match["donor"]["email"] == "bob.smith@gmail.com" and [c["constituent_id"] for c in match["candidates"]] == [robert]
    evidence = match["candidates"][0]["evidence"]
    assert "Bob and Robert are one name (nickname)" in evidence and "same last name" in evidence
    assert any(e.startswith("same street address (14 Elm Street") for e in evidence)
    assert f"candidate {robert} Robert Smith" in cli("donors", "matches").stdout
    doctor = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert doctor["donor matches"]["status"] == "warn" and "1 gift(s) held" in doctor["donor matches"]["detail"]
    assert json.loads(cli("alerts", "summary", "--dry-run", "--json").stdout)["donor_matches_pending"] == 1
    requests = len(world.crm.requests)
    assert cli("donors", "matches", "accept", str(match["id"])).exit_code == 0
    assert job(db, held)["status"] == "queued"
    run_drain()
    made = [g for g in world.crm.gifts.values() if g["external_id"] == "donations_T1"]
    assert len(made) == 1 and str(made[0]["constituent_id"]) == robert
    assert len(constituents_named(world, "Smith")) == 1  # no second Robert
    assert "matched to constituent" in job(db, held)["message"]
    changes = json.loads(cli("donors", "changes", "--json").stdout)["items"]
    assert [(c["constituent_id"], c["kind"], c["value"]) for c in changes] == [(robert, "email", "bob.smith@gmail.com")]
    assert len([r for r in world.crm.requests[requests:] if r["method"] == "POST"]) == 1  # the gift, once
    again = cli("donors", "matches", "accept", str(match["id"]))
    assert again.exit_code == 4 and "settled already" in again.output
    # his next gift from the new e-mail goes straight to him (the e-mail is linked)
    later = give(receiver, gift("T2", "Bob", "Smith", "bob.smith@gmail.com"))["job_id"]
    run_drain()
    assert job(db, later)["status"] == "succeeded" and str(job(db, later)["crm_constituent_id"]) == robert


def test_auto_gives_the_gift_to_the_one_candidate_and_says_why(known, receiver, cli, db, env):
    world, robert = known
    policy(env, "auto")
    held = give(receiver, gift("T1", "Rob", "Smith", "rob@home.net", street="99 Other Rd", phone="+1 510-555-0100"))["job_id"]
    run_drain()
    row = job(db, held)
    assert row["status"] == "succeeded" and str(row["crm_constituent_id"]) == robert
    assert "under a new e-mail" in row["message"] and "same phone ((510) 555-0100)" in row["message"]
    assert len(constituents_named(world, "Smith")) == 1
    assert json.loads(cli("donors", "changes", "--json").stdout)["pending"] >= 1


def test_email_policy_is_the_email_match_alone(known, receiver, db, env):
    world, robert = known
    policy(env, "email")
    held = give(receiver, gift("T1", "Bob", "Smith", "bob.smith@gmail.com"))["job_id"]
    run_drain()
    assert job(db, held)["status"] == "succeeded" and str(job(db, held)["crm_constituent_id"]) != robert
    assert len(constituents_named(world, "Smith")) == 2


@pytest.mark.parametrize("how", ["review", "auto"])
@pytest.mark.parametrize(
    "first, last, street, zipcode, phone",
    [
        ("Robert", "Smith", "7 Pine Ave", "10001", "+12125550199"),  # a stranger: same name, elsewhere
        ("Robert", "Smith", "14 Elm St", "10001", None),  # same street, another town
        ("Roberta", "Smith", "14 Elm St", "94607", "+15105550100"),  # his wife: same house, same phone
        ("Robin", "Smith", "14 Elm St", "94607", None),  # his son
        ("Robert", "Smythe-Jones", "14 Elm St", "94607", None),  # another family at the address
    ],
)
def test_a_stranger_or_a_household_member_is_never_given_robert(
    known, receiver, db, env, how, first, last, street, zipcode, phone
):
    world, robert = known
    policy(env, how)
    held = give(receiver, gift("T1", first, last, f"{first.lower()}@else.org", street=street, zipcode=zipcode, phone=phone))[
        "job_id"
    ]
    run_drain()
    row = job(db, held)
    assert row["status"] == "succeeded", row["message"]
    assert str(row["crm_constituent_id"]) != robert  # a new constituent, not Robert


def test_a_name_alone_never_matches(known, receiver, db, env):
    world, robert = known
    policy(env, "auto")
    t = gift("T1", "Robert", "Smith", "r.smith@else.org", phone=None)
    t["address"] = None
    held = give(receiver, t)["job_id"]
    run_drain()
    assert job(db, held)["status"] == "succeeded" and str(job(db, held)["crm_constituent_id"]) != robert


def test_two_candidates_never_match_automatically_and_the_person_chooses(known, receiver, cli, db, env):
    world, robert = known
    twin = world.crm.create_constituent(
        {**copy.deepcopy(ROBERT), "first_name": "Bob", "email_addresses": [{"address": "bob@old.org"}]}
    )
    assert cli("crm", "mirror", "--refresh").exit_code == 0
    policy(env, "auto")
    held = give(receiver, gift("T1", "Bobby", "Smith", "bobby@new.org"))["job_id"]
    run_drain()
    assert job(db, held)["status"] == "review"
    match = json.loads(cli("donors", "matches", "--json").stdout)["items"][0]
    assert sorted(c["constituent_id"] for c in match["candidates"]) == sorted([robert, str(twin["id"])])
    unsure = cli("donors", "matches", "accept", str(match["id"]))
    assert unsure.exit_code == 2 and "choose one" in unsure.output
    wrong = cli("donors", "matches", "accept", str(match["id"]), "--constituent", "1")
    assert wrong.exit_code == 2 and "not a candidate" in wrong.output
    assert cli("donors", "matches", "accept", str(match["id"]), "--constituent", str(twin["id"])).exit_code == 0
    run_drain()
    assert str(job(db, held)["crm_constituent_id"]) == str(twin["id"])


def test_new_makes_a_constituent_exactly_once_and_settles_every_gift_held_for_that_email(known, receiver, cli, db, env):
    world, robert = known
    policy(env, "review")
    first = give(receiver, gift("T1", "Bob", "Smith", "bob.smith@gmail.com"))["job_id"]
    second = give(receiver, gift("T2", "Bob", "Smith", "bob.smith@gmail.com", amount=40))["job_id"]
    run_drain()
    assert {job(db, first)["status"], job(db, second)["status"]} == {"review"}
    match = json.loads(cli("donors", "matches", "--json").stdout)["items"][-1]
    settled = json.loads(cli("donors", "matches", "new", str(match["id"]), "--json").stdout)
    assert settled["jobs_queued"] == 2
    run_drain()
    ids = {str(job(db, first)["crm_constituent_id"]), str(job(db, second)["crm_constituent_id"])}
    assert len(ids) == 1 and robert not in ids
    assert len(constituents_named(world, "Smith")) == 2
    assert len([g for g in world.crm.gifts.values() if g["external_id"] in ("donations_T1", "donations_T2")]) == 2


def test_an_organisation_matches_only_by_its_exact_name_and_address(coded, receiver, cli, db, env):
    acme = coded.crm.create_constituent({"is_org": True, "org_name": "Acme Tools", "last_name": "Acme Tools",
                                         "street_addresses": [{"street": "1 Forge Rd", "postal_code": "94607"}],
                                         "phone_numbers": [{"number": "5105550111"}]})  # fmt: skip
    assert cli("crm", "mirror", "--refresh").exit_code == 0
    policy(env, "auto")
    same = give(receiver, gift("T1", "Ann", "Lee", "ann@acme.example", street="1 Forge Road", company="Acme Tools"))["job_id"]
    other = give(receiver, gift("T2", "Ann", "Lee", "ann@acmeco.example", street="1 Forge Road", company="Acme Tools Inc"))[
        "job_id"
    ]
    phone_only = give(receiver, gift("T3", "Acme", "Tools", "x@y.example", street="5 Else St", phone="510 555 0111"))["job_id"]
    run_drain()
    assert str(job(db, same)["crm_constituent_id"]) == str(acme["id"])
    assert str(job(db, other)["crm_constituent_id"]) != str(acme["id"])
    assert str(job(db, phone_only)["crm_constituent_id"]) != str(acme["id"])  # an individual never becomes an organisation


def test_the_setting_through_the_cli_wins_over_the_config(cli, db, env):
    env["DONORS_MATCHING"] = "review"
    assert json.loads(cli("settings", "donor-matching", "--json").stdout)["policy"] == "review"
    assert cli("settings", "donor-matching", "auto").exit_code == 0
    assert json.loads(cli("settings", "donor-matching", "--json").stdout)["policy"] == "auto"
    assert cli("settings", "donor-matching", "sometimes").exit_code == 2


def test_crm_duplicates_lists_likely_pairs_from_the_mirror_without_a_crm_request(known, cli):
    world, robert = known
    bob = world.crm.create_constituent({"first_name": "Bob", "last_name": "Smith", "phone_numbers": [{"number": "510.555.0100"}]})
    world.crm.create_constituent({"first_name": "Roberta", "last_name": "Smith", "phone_numbers": [{"number": "510.555.0100"}]})
    world.crm.create_constituent({"first_name": "Robert", "last_name": "Smith", "phone_numbers": [{"number": "212.555.0199"}]})
    assert cli("crm", "mirror", "--refresh").exit_code == 0
    before = len(world.crm.requests)
    found = json.loads(cli("crm", "duplicates", "--json").stdout)
    assert len(world.crm.requests) == before
    assert [(p["constituent_id"], p["other_id"]) for p in found["pairs"]] == [(robert, str(bob["id"]))]
    assert "same phone" in "; ".join(found["pairs"][0]["evidence"])


@pytest.mark.parametrize(
    "given, known_as, same",
    [
        ("Bob", "Robert", True),
        ("Jon", "John", True),
        ("Kathryn", "Katherine", True),
        ("Bill", "William", True),
        ("Liz", "Elizabeth", True),
        ("Micheal", "Michael", True),  # a typo: two letters swapped
        ("Jeffery", "Jeffrey", True),
        ("Steven", "Stephen", True),
        ("ROBERT", "robert", True),
        ("José", "Jose", True),
        ("Robert", "Roberta", False),
        ("Paul", "Paula", False),  # the nickname data gives them one nickname (polly)
        ("Louis", "Louise", False),
        ("Ann", "Anne", True),
        ("John", "Joan", False),
        ("Alexander", "Alexandra", False),
        ("Patrick", "Patricia", False),
        ("Joseph", "Josephine", False),
        ("Francis", "Frances", False),
        ("Ronald", "Donald", False),
        ("Mary", "Marty", False),
        ("Robert", "", False),
    ],
)
def test_first_names(given, known_as, same):
    assert (matching.first_names(given, known_as) is not None) is same


def test_a_held_gift_is_missing_from_reconcile_with_why_and_retry_says_what_to_do(known, receiver, cli, db, env):
    world, robert = known
    policy(env, "review")
    t = gift("T1", "Bob", "Smith", "bob.smith@gmail.com")
    world.givebutter.add_transaction(t)
    held = give(receiver, t)["job_id"]
    run_drain()
    report = json.loads(
        cli("reconcile", "--from", "2024-02-01", "--to", "2024-02-28", "--source", "donations", "--fix", "--json").stdout
    )
    row = next(r for r in report["items"] if r["external_id"] == "donations_T1")
    assert row["status"] == "missing" and "held for review" in row["reason"]
    assert next(f for f in report["fixed"] if f["external_id"] == "donations_T1")["action"] == "nothing"
    retried = cli("jobs", "retry", held)
    assert retried.exit_code == 4 and "synctool donors matches" in retried.output


def test_in_preview_a_gift_that_would_be_held_says_so_and_holds_nothing(known, receiver, cli, db, env):
    world, robert = known
    policy(env, "review")
    assert cli("sync-mode", "preview").exit_code == 0
    held = give(receiver, gift("T1", "Bob", "Smith", "bob.smith@gmail.com"))["job_id"]
    run_drain()
    assert job(db, held)["status"] == "previewed" and "would wait for review" in job(db, held)["message"]
    assert json.loads(cli("donors", "matches", "--json").stdout)["pending"] == 0  # the preview wrote nothing
