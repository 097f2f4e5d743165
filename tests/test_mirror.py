"""The local CRM constituent mirror: matching reads it, drain refreshes it at most once per run and always
before a create, and the CRM fake answers the incremental search it needs."""

from __future__ import annotations

import copy
import json

import httpx

from synctool.fakes import samples
from tests import helpers
from tests.flow_helpers import give, run_drain


def give_as(receiver, txn_id: str, email: str, first: str = "Pat", last: str = "Jones") -> str:
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn.update(id=txn_id, email=email, first_name=first, last_name=last, phone=None, address=None)
    return give(receiver, txn)["job_id"]


def crm_api(world):
    """A person working in the CRM directly, beside synctool."""
    return world.client("crm", headers={"Authorization": "Bearer " + world.env()["CRM_API_KEY"]})


def requests_since(world, start: int) -> list[tuple[str, str]]:
    return [(r["method"], r["path"].removeprefix("/api/v1")) for r in world.crm.requests[start:]]


def test_one_refresh_per_run_and_known_donors_cost_only_their_gift(world, receiver, db):
    with crm_api(world) as api:
        known = api.post(
            "/constituents",
            json={"first_name": "Rosa", "last_name": "Smith", "email_addresses": [{"address": "Rosa.Smith@Example.org"}]},
        ).json()
    start = len(world.crm.requests)
    give_as(receiver, "T-known", "rosa.smith@example.org", "Rosa", "Smith")
    for n in range(3):
        give_as(receiver, f"T-new{n}", f"new{n}@example.org", "New", f"Donor{n}")
    summary = run_drain()
    assert summary.succeeded == 4
    sent = requests_since(world, start)
    # one mirror load for the whole run, then a gift each and a create for each new donor: the floor + 1
    assert sent.count(("GET", "/constituents/search")) == 1 and sent[0] == ("GET", "/constituents/search")
    assert sent.count(("POST", "/constituents")) == 3 and len(sent) == 1 + 3 + 4
    assert [g["constituent_id"] for g in world.crm.gifts.values() if g["external_id"] == "donations_T-known"] == [known["id"]]
    assert len(world.crm.constituents) == 4


def test_constituent_added_or_changed_in_the_crm_between_drains_is_matched(world, receiver, db):
    give_as(receiver, "T-1", "first@example.org", "Fay", "First")
    run_drain()
    assert db.execute("SELECT watermark FROM crm_mirror_state").fetchone()[0] is not None
    with crm_api(world) as api:  # someone adds one donor in the CRM, and gives another a second e-mail
        added = api.post(
            "/constituents", json={"first_name": "Gil", "last_name": "Added", "email_addresses": [{"address": "gil@example.org"}]}
        ).json()
        changed = api.post(
            "/constituents",
            json={"first_name": "Hal", "last_name": "Changed", "email_addresses": [{"address": "hal.old@example.org"}]},
        ).json()
    run_drain()  # a run with nothing to match: no refresh, no request
    start = len(world.crm.requests)
    with crm_api(world) as api:
        api.post(f"/constituents/{changed['id']}/email_addresses", json={"address": "Hal.New@example.org"})
    give_as(receiver, "T-2", "GIL@example.org", "Gil", "Added")
    give_as(receiver, "T-3", "hal.new@example.org", "Hal", "Changed")
    summary = run_drain()
    assert summary.succeeded == 2
    sent = requests_since(world, start)[1:]  # after the e-mail the test itself added
    assert sent.count(("GET", "/constituents/search")) == 1 and ("POST", "/constituents") not in sent
    search = next(r for r in world.crm.requests[start:] if r["path"].endswith("/constituents/search"))
    assert dict(search["query"])["sort"] == "date_updated"
    assert dict(search["query"])["q[]"].startswith("updated_from=") and "1970" not in dict(search["query"])["q[]"]
    by_ext = {g["external_id"]: g["constituent_id"] for g in world.crm.gifts.values()}
    assert by_ext["donations_T-2"] == added["id"] and by_ext["donations_T-3"] == changed["id"]
    assert len(world.crm.constituents) == 3


def test_a_stale_mirror_is_refreshed_before_any_create(world, receiver, db):
    give_as(receiver, "T-1", "first@example.org", "Fay", "First")
    run_drain()
    start = len(world.crm.requests)
    give_as(receiver, "T-2", "brand.new@example.org", "Bo", "New")
    run_drain()
    sent = requests_since(world, start)
    # the mirror was refreshed in an earlier run: this run refreshes it before it creates anyone
    assert sent.index(("GET", "/constituents/search")) < sent.index(("POST", "/constituents"))


def test_the_mirror_holds_what_synctool_created_and_forgets_what_the_crm_deleted(world, receiver, db, cli):
    give_as(receiver, "T-1", "Ivy.Created@example.org", "Ivy", "Created")
    run_drain()
    found = json.loads(cli("crm", "find", "ivy.created", "--json").stdout)
    assert [c["last_name"] for c in found] == ["Created"]
    ivy = found[0]["id"]
    assert json.loads(cli("crm", "find", "Creat", "--json").stdout)[0]["id"] == ivy
    # without the local e-mail link, the mirror still answers in a new run: only the gift is sent
    db.execute("DELETE FROM caches WHERE kind = 'email_link'")
    start = len(world.crm.requests)
    give_as(receiver, "T-2", "ivy.created@example.org", "Ivy", "Created")
    run_drain()
    assert requests_since(world, start) == [("POST", f"/constituents/{ivy}/gifts")]
    # deleted in the CRM: the gift's 404 drops her from the mirror, and she is matched (created) anew
    del world.crm.constituents[ivy]
    give_as(receiver, "T-3", "ivy.created@example.org", "Ivy", "Created")
    assert run_drain().succeeded == 1
    [again] = json.loads(cli("crm", "find", "ivy.created", "--json").stdout)
    assert again["id"] != ivy and {g["constituent_id"] for g in world.crm.gifts.values()} == {ivy, again["id"]}


def test_mirror_and_find_commands_budget_and_doctor(world, cli, db):
    with crm_api(world) as api:
        for n in range(7):
            api.post(
                "/constituents",
                json={
                    "first_name": "Kim",
                    "last_name": f"Page{n}",
                    "email_addresses": [{"address": f"kim{n}@example.org"}],
                    "phone_numbers": [{"number": f"(415) 555-010{n}"}],
                },
            )
    status = json.loads(cli("crm", "mirror", "--json").stdout)
    assert status["constituents"] == 0 and status["watermark"] is None
    loaded = json.loads(cli("crm", "mirror", "--full", "--json").stdout)
    assert loaded["refresh"]["kind"] == "full" and loaded["constituents"] == 7
    assert loaded["last_refresh"]["requests"] == loaded["refresh"]["requests"] == 1
    again = json.loads(cli("crm", "mirror", "--refresh", "--json").stdout)
    assert again["refresh"]["kind"] == "incremental" and again["refresh"]["requests"] == 1
    assert [c["last_name"] for c in json.loads(cli("crm", "find", "555-0103", "--json").stdout)] == ["Page3"]
    assert "Page5" in cli("crm", "find", "kim5@").stdout
    assert cli("crm", "find", " ").exit_code == 2
    budget = json.loads(cli("crm", "budget", "--json").stdout)
    assert budget["account_limit"] == 10000 and budget["mirror_age_s"] is not None
    doctor = json.loads(cli("doctor", "--json").stdout)
    rows = {c["check"]: c for c in doctor}
    assert rows["crm mirror"]["status"] == "ok" and "7 constituents" in rows["crm mirror"]["detail"]
    assert "share_requests" in rows["crm budget"]["detail"]


def test_mirror_pages_through_a_large_crm(world, cli, isolated):
    with crm_api(world) as api:
        for n in range(5):
            api.post("/constituents", json={"last_name": f"Paged{n}", "email_addresses": []})
    (isolated / "config.yaml").write_text("crm:\n  mirror_page_size: 2\n")
    loaded = json.loads(cli("crm", "mirror", "--full", "--json").stdout)
    assert loaded["constituents"] == 5 and loaded["refresh"]["requests"] == 3


def test_fake_crm_filters_sorts_and_pages_by_update_time(fake_crm, crm_client):
    ids = [crm_client.create_constituent({"last_name": f"N{n}", "email_addresses": []})["id"] for n in range(3)]
    fake_crm.constituents[ids[0]]["updated_at"] = "2026-01-02T00:00:00Z"
    fake_crm.constituents[ids[1]]["updated_at"] = "2026-01-01T00:00:00Z"
    fake_crm.constituents[ids[2]]["updated_at"] = "2025-12-31T23:59:59Z"
    pages = list(crm_client.constituents_updated_since("2026-01-01T00:00:00Z", page_size=1))
    assert [[c["id"] for c in p] for p in pages] == [[ids[1]], [ids[0]]]  # inclusive, oldest change first
    assert "email_addresses" in pages[0][0]
    newest_first = crm_client.request(
        "GET", "/constituents/search", params=[("q[]", "updated_to=2026-01-01T00:00:00Z"), ("sort", "date_updated!")]
    )
    assert [c["id"] for c in newest_first["items"]] == [ids[1], ids[2]]
    bad = httpx.Client(transport=helpers.CURRENT["transports"]["crm"]).get(
        fake_crm.url + "/api/v1/constituents/search",
        params={"q[]": "updated_from=yesterday"},
        headers={"Authorization": "Bearer " + fake_crm.api_key},
    )
    assert bad.status_code == 400 and bad.json()["error"] == "Parameter Error"
    before = fake_crm.constituents[ids[2]]["updated_at"]
    crm_client.add_contact(ids[2], "email_addresses", {"address": "late@example.org"})
    assert fake_crm.constituents[ids[2]]["updated_at"] > before  # a nested change moves updated_at
