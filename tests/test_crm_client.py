"""The CRM client: pacing across processes, retries, uncertain writes, errors, and matching."""

from __future__ import annotations

import json

import httpx
import pytest

from synctool import store
from synctool.config import ProfileDefaults
from synctool.crm import constituents, gifts
from synctool.crm import environment as crm
from synctool.crm.client import CrmClient, search_params
from synctool.crm.constituents import Matching, Person
from synctool.errors import ConfigError, RemoteError, TransientError, UncertainWrite, Wait
from synctool.queue.unit import Unit
from tests.conftest import CRM_KEY
from tests.helpers import mock_transport, runtime, validate_against_openapi


def mock_client(responses: list, sleeps: list, **kw) -> CrmClient:
    transport = mock_transport(responses)
    client = CrmClient("https://lgl.test/api/v1", "k", transport=transport, sleep=sleeps.append, **kw)
    client.seen = transport.seen
    return client


def test_retries_only_retryable_statuses_with_doubling_delay():
    sleeps: list[float] = []
    client = mock_client([httpx.Response(500), httpx.Response(503), httpx.Response(200, json={"ok": 1})], sleeps)
    assert client.request("GET", "/funds") == {"ok": 1}
    assert sleeps == [1.0, 2.0] and len(client.seen) == 3

    sleeps.clear()
    client = mock_client([httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(200, json={})], sleeps)
    client.request("GET", "/funds")
    assert sleeps == [7.0]

    sleeps.clear()
    client = mock_client([httpx.Response(404, json={"error": "Not Found"})], sleeps)
    with pytest.raises(RemoteError):
        client.request("GET", "/constituents/1")
    assert sleeps == []

    client = mock_client([httpx.Response(502)] * 4, sleeps := [])
    with pytest.raises(TransientError) as info:
        client.request("GET", "/funds")
    assert sleeps == [1.0, 2.0, 4.0] and "502" in str(info.value)

    client = mock_client([httpx.ConnectError("refused"), httpx.Response(200, json={})], sleeps := [])
    client.request("POST", "/constituents/1/gifts", json={})  # never reached the CRM: safe to resend
    assert len(client.seen) == 2


def test_post_with_unknown_outcome_is_not_resent():
    client = mock_client([httpx.ReadTimeout("slow"), httpx.Response(200, json={})], [])
    with pytest.raises(UncertainWrite):
        client.request("POST", "/constituents/1/gifts", json={})
    assert len(client.seen) == 1
    client = mock_client([httpx.Response(503)], [])
    with pytest.raises(UncertainWrite):
        client.request("POST", "/constituents", json={})


@pytest.mark.parametrize(
    "status,body,ctype,expected",
    [
        (
            400,
            b'{"api_version":"1.0","error":"Parameter Error","description":"Unknown query parameter: badterm"}',
            "application/json",
            "CRM answered 400: Parameter Error: Unknown query parameter: badterm",
        ),
        (
            401,
            b'{"error":"invalid_token","error_description":"The access token provided is expired"}',
            "application/json",
            "CRM answered 401: invalid_token: The access token provided is expired",
        ),
        (401, b"HTTP Basic: Access denied.\n", "text/html", "CRM answered 401: HTTP Basic: Access denied."),
        (422, b"<html><body><p>Unprocessable &amp; odd</p></body></html>", "text/html", "CRM answered 422: Unprocessable & odd"),
        (422, b'{"something":"else"}', "application/json", 'CRM answered 422: {"something":"else"}'),
    ],
)
def test_error_normalisation(status, body, ctype, expected):
    client = mock_client([httpx.Response(status, content=body, headers={"content-type": ctype})], [])
    with pytest.raises(RemoteError) as info:
        client.request("GET", "/constituents")
    assert str(info.value) == expected and info.value.status == status


def test_bad_key_and_missing_config(fake_crm, env, db):
    env["CRM_API_KEY"] = "wrong"
    client = crm.open_client(db, runtime())
    with pytest.raises(RemoteError, match="401: invalid_token"):
        client.request("GET", "/funds")
    env.pop("CRM_API_KEY", None)
    with pytest.raises(ConfigError, match="CRM_API_KEY"):
        crm.open_client(db, runtime())
    env["CRM_API_KEY"] = "x"
    env["CRM_API_BASE_URL"] = "not a url"
    with pytest.raises(ConfigError, match="not a usable URL"):
        crm.open_client(db, runtime())


def test_search_clauses():
    assert search_params({"name": "Smith", "external_gift_ids": "donations_1"}) == [
        ("q[]", "name=Smith"),
        ("q[]", "external_gift_ids=donations_1"),
    ]
    for bad in ({"": "x"}, {"name": ""}, {}):
        with pytest.raises(ValueError):
            search_params(bad)


def test_list_envelope_is_walked_lazily(fake_crm, crm_client):
    for n in range(5):
        crm_client.create_constituent({"first_name": f"P{n}", "last_name": "Pager", "email_addresses": []})
    before = fake_crm.stats()["requests"]
    it = crm_client.iter_items("/constituents", page_size=2)
    first = next(it)
    assert first["last_name"] == "Pager" and fake_crm.stats()["requests"] == before + 1
    assert len(list(it)) == 4 and fake_crm.stats()["requests"] == before + 3


def test_gift_post_that_times_out_after_commit_leaves_one_gift(fake_crm, crm_client, db):
    c = crm_client.create_constituent({"first_name": "Ada", "last_name": "Lovelace", "email_addresses": []})
    fake_crm.faults.append({"mode": "commit_timeout", "count": 1, "method": "POST", "path": "/gifts"})
    body = {"external_id": "donations_T1", "received_amount": 10.0, "received_date": "2026-11-20"}
    with pytest.raises(Wait, match="sent, waiting to confirm"):  # the answer was lost: no second POST now
        gifts.create_once(crm_client, Unit(db), str(c["id"]), body)
    with pytest.raises(Wait):  # nor on a retry before the grace period is over
        gifts.create_once(crm_client, Unit(db), str(c["id"]), body)
    assert len(fake_crm.gifts) == 1 and gifts.recorded(db, "donations_T1")["state"] == "unconfirmed"
    gift_id, created = gifts.create_once(crm_client, Unit(db), str(c["id"]), body, confirm_after_s=0)
    assert created is False and len(fake_crm.gifts) == 1 and str(next(iter(fake_crm.gifts))) == gift_id
    # and again, from a later job: recorded, so no request at all
    before = fake_crm.stats()["requests"]
    assert gifts.create_once(crm_client, Unit(db), str(c["id"]), body)[0] == gift_id
    assert fake_crm.stats()["requests"] == before


def test_gift_after_a_crash_mid_post_is_looked_up_first(fake_crm, crm_client, db):
    c = crm_client.create_constituent({"first_name": "Ada", "last_name": "Lovelace", "email_addresses": []})
    body = {"external_id": "pos_order_9", "received_amount": 5.0, "received_date": "2026-11-20"}
    crm_client.create_gift(c["id"], body)  # the CRM has it ...
    with store.atomic(db):  # ... but the process died before recording it
        db.execute("INSERT INTO crm_writes (key, kind, state, updated_at) VALUES ('pos_order_9', 'gift', 'pending', 'x')")
    gift_id, created = gifts.create_once(crm_client, Unit(db), str(c["id"]), body, confirm_after_s=0)
    assert created is False and len(fake_crm.gifts) == 1
    # the CRM's own duplicate guard (422) is also treated as "already there"
    db.execute("DELETE FROM crm_writes")
    assert gifts.create_once(crm_client, Unit(db), str(c["id"]), body) == (gift_id, False)
    assert len(fake_crm.gifts) == 1


def test_constituent_post_that_times_out_after_commit_leaves_one(fake_crm, crm_client, db):
    fake_crm.faults.append({"mode": "commit_timeout", "count": 1, "method": "POST", "path": "/constituents"})
    person = Person("Grace", "Hopper", "grace@navy.example")
    cid, created = constituents.match_or_create(crm_client, Unit(db), person, Matching(ProfileDefaults()))
    assert len(fake_crm.constituents) == 1 and str(next(iter(fake_crm.constituents))) == cid


def test_matching_normalises_email_and_creates_once(fake_crm, crm_client, db):
    person = Person(
        "Ada",
        "Lovelace",
        "  Ada.Lovelace@Example.ORG ",
        phone="+14155551212",
        address={"street": "12 Analytical Way", "city": "Oakland", "state": "CA", "postal_code": "94607", "country": "US"},
    )
    cid, created = constituents.match_or_create(crm_client, Unit(db), person, Matching(ProfileDefaults()))
    assert created
    record = fake_crm.constituents[int(cid)]
    assert record["addressee"] == "Ada Lovelace" and record["salutation"] == "Ada"
    assert [r["address"] for r in fake_crm.contacts["email_addresses"].values()] == ["Ada.Lovelace@Example.ORG"]
    assert len(fake_crm.contacts["street_addresses"]) == 1 and len(fake_crm.contacts["phone_numbers"]) == 1
    # a returning donor: the link answers, no request
    before = fake_crm.stats()["requests"]
    assert constituents.match_or_create(
        crm_client, Unit(db), Person("Ada", "Lovelace", "ada.lovelace@example.org"), Matching(ProfileDefaults())
    ) == (cid, False)
    assert fake_crm.stats()["requests"] == before
    # without the link: the mirror (written at the create) finds her despite case and spaces, no request
    db.execute("DELETE FROM caches")
    assert constituents.match_or_create(
        crm_client, Unit(db), Person("Ada", "Lovelace", "ADA.LOVELACE@example.org "), Matching(ProfileDefaults())
    ) == (cid, False)
    assert fake_crm.stats()["requests"] == before and len(fake_crm.constituents) == 1


def test_two_constituents_with_one_name(fake_crm, crm_client, db):
    a = crm_client.create_constituent(
        {"first_name": "John", "last_name": "Smith", "email_addresses": [{"address": "js1@example.org"}]}
    )
    b = crm_client.create_constituent(
        {"first_name": "John", "last_name": "Smith", "email_addresses": [{"address": "js2@example.org"}]}
    )
    assert constituents.match_or_create(
        crm_client, Unit(db), Person("John", "Smith", "js2@example.org"), Matching(ProfileDefaults())
    ) == (
        str(b["id"]),
        False,
    )
    assert constituents.match_or_create(
        crm_client, Unit(db), Person("John", "Smith", "js1@example.org"), Matching(ProfileDefaults())
    ) == (
        str(a["id"]),
        False,
    )
    cid, created = constituents.match_or_create(
        crm_client, Unit(db), Person("John", "Smith", "js3@example.org"), Matching(ProfileDefaults())
    )
    assert created and len(fake_crm.constituents) == 3


def test_link_dropped_when_constituent_gone_or_email_changed(fake_crm, crm_client, db):
    person = Person("Mary", "Shelley", "mary@example.org")
    cid, _ = constituents.match_or_create(crm_client, Unit(db), person, Matching(ProfileDefaults()))
    assert constituents.revalidate(crm_client, Unit(db), cid, person.email) is True
    row_id = next(iter(fake_crm.contacts["email_addresses"]))
    fake_crm.contacts["email_addresses"][row_id]["address"] = "mary.new@example.org"
    assert constituents.revalidate(crm_client, Unit(db), cid, person.email) is False
    assert constituents.linked(db, person.email) is None
    cid2, created = constituents.match_or_create(crm_client, Unit(db), person, Matching(ProfileDefaults()))
    assert created and cid2 != cid  # her old record no longer has that address: a new match
    del fake_crm.constituents[int(cid2)]
    assert constituents.revalidate(crm_client, Unit(db), cid2, person.email) is False


def test_reference_refresh_and_lists(fake_crm, cli, db):
    result = cli("crm", "refresh", "--json")
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)
    assert counts["funds"] == 5 and counts["tags"] == 4 and counts["relationship-types"] == 4
    funds = json.loads(cli("crm", "funds", "--json").stdout)
    assert {f["name"] for f in funds} >= {"General", "Events"}
    assert "Credit Card" in cli("crm", "payment-types").stdout
    status = json.loads(cli("crm", "test-connection", "--json").stdout)
    assert status["ok"] is True and status["api_key"] == "set" and CRM_KEY not in json.dumps(status)


def test_environment_and_config_commands(fake_crm, cli):
    assert json.loads(cli("crm", "environment", "--json").stdout)["environment"] == "production"
    result = cli("crm", "environment", "staging")
    assert result.exit_code == 2
    cli("crm", "environment", "sandbox")
    moving = ("crm", "config", "--base-url", "http://127.0.0.1:9/api/v1", "--json")
    assert "needs the API key in the same request" in cli(*moving).output  # the key would go to the new host
    said = cli(*moving, "--api-key", input=CRM_KEY + "\n").stdout  # the key synctool holds (no keyring here)
    out = json.loads(said[said.index("{") :])
    assert out["environment"] == "sandbox" and out["base_url"] == "http://127.0.0.1:9/api/v1" and CRM_KEY not in said
    refused = cli("crm", "config", "--api-key", input="secret-value\n")
    assert refused.exit_code == 2 and "no keyring backend" in refused.output and "secret-value" not in refused.output
    cli("crm", "environment", "production")
    assert json.loads(cli("crm", "environment", "--json").stdout)["base_url"] == fake_crm.url + "/api/v1"


def test_requests_match_the_lgl_openapi(fake_crm, crm_client, db):
    """Everything synctool sent in the CRM tests' flows is a documented path, parameter and body field."""
    person = Person("Ada", "Lovelace", "ada@example.org", phone="+1415", address={"street": "1 A St", "city": "Oakland"})
    cid, _ = constituents.match_or_create(crm_client, Unit(db), person, Matching(ProfileDefaults()))
    gifts.create_once(
        crm_client,
        Unit(db),
        cid,
        {
            "external_id": "donations_1",
            "received_amount": 1.0,
            "received_date": "2026-01-01",
            "fund_id": 2398,
            "payment_type_id": 1509,
            "gift_type_name": "Gift",
            "note": "n",
        },
    )
    crm_client.replace_contacts(cid, "email_addresses", [{"address": "ada2@example.org"}])
    crm_client.add_keyword(cid, 12222)
    crm_client.remove_keyword(cid, 12222)
    crm_client.create_membership(
        cid, {"membership_level_id": 41, "date_start": "2026-01-01", "finish_date": "2026-12-31", "note": "x"}
    )
    crm_client.add_to_group(cid, {"group_id": 701, "date_start": "2026-01-01", "is_current": True})
    crm_client.create_relationship(cid, {"related_constituent_id": cid, "relationship_type_id": 9})
    from synctool.ops.crm import refresh

    refresh(db, runtime(), client=crm_client)
    validate_against_openapi(fake_crm.requests)
