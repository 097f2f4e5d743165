"""Preview mode: drain runs every rule and writes nothing to the CRM; each job's plan is what live then
writes; `synctool init` on a new database starts in preview."""

from __future__ import annotations

import copy
import json

import pytest

from synctool.fakes import samples
from tests.flow_helpers import CUSTOMER, add_order, give, pos_event, run_drain


def writes(world) -> list[dict]:
    return [r for r in world.crm.requests if r["method"] != "GET"]


def test_preview_writes_nothing_and_live_writes_the_plan(coded, receiver, cli, db):
    jane = coded.crm.create_constituent(
        {"first_name": "Jane", "last_name": "Doe", "email_addresses": [{"address": "jane.doe@example.org"}]}
    )
    assert cli("sync-mode", "preview").exit_code == 0
    new_donor = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    known = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    known.update(id="KNOWN1", first_name="Jane", last_name="Doe", email="jane.doe@example.org", amount=15)
    known["transactions"][0]["amount"] = 15
    give(receiver, new_donor)
    give(receiver, known)
    add_order(coded, "PRE1", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}])
    pos_event(receiver, samples.square_order_event("PRE1"))
    summary = run_drain()
    assert summary.mode == "preview" and summary.previewed == 3 and "[preview]" in summary.line()
    assert writes(coded) == [] and coded.crm.gifts == {}  # nothing reached the CRM
    assert db.execute("SELECT count(*) FROM crm_writes").fetchone()[0] == 0  # nor synctool's ledger
    plans = json.loads(cli("preview", "--json").stdout)["items"]
    by_what = {p["what"]: p for p in plans}
    ada = by_what["transaction QiN7blzUhiwXBVBr"]
    assert ada["decision"] == "would create Ada Lovelace <Ada.Lovelace@Example.org>" and ada["ends"] == "would be succeeded"
    assert (ada["amount"], ada["fund"], ada["date"]) == (10.0, "General", "2024-02-03")
    assert by_what["transaction KNOWN1"]["decision"] == f"matched #{jane['id']}"
    assert by_what["order PRE1"]["decision"].startswith("would create Grace Hopper")
    table = cli("preview").stdout
    assert "would create Ada Lovelace" in table and "General" in table
    doctor = cli("doctor", "--json").stdout
    assert "preview: drain writes nothing" in doctor

    shown = json.loads(cli("sync-mode", "live", "--json").stdout)
    assert shown == {"mode": "live", "queued_for_real": 3, "previewed": 0}
    run_drain()
    assert len(coded.crm.gifts) == 3
    sent = {r["body"]["external_id"]: r["body"] for r in writes(coded) if r["path"].endswith("/gifts")}
    planned = {w["body"]["external_id"]: w["body"] for p in plans for w in p["writes"] if w["path"].endswith("/gifts")}
    assert set(sent) == set(planned)
    for ext, body in sent.items():  # the same bodies, but for the constituent ids the CRM then gave
        assert body == planned[ext], ext
    made = [r["body"] for r in writes(coded) if r["path"] == "/api/v1/constituents"]
    would = [w["body"] for p in plans for w in p["writes"] if w["path"] == "/constituents"]
    assert sorted(json.dumps(b, sort_keys=True) for b in made) == sorted(json.dumps(b, sort_keys=True) for b in would)


@pytest.mark.no_database
def test_init_on_a_new_database_starts_in_preview(cli, env):
    result = cli("init")
    assert result.exit_code == 0 and "preview" in result.stdout
    assert json.loads(cli("sync-mode", "--json").stdout)["mode"] == "preview"
    assert cli("sync-mode", "paused").exit_code == 2


def test_a_sync_now_in_preview_writes_nothing(coded, cli, db):
    assert cli("sync-mode", "preview").exit_code == 0
    add_order(coded, "NOW1", "COMPLETED", customer=CUSTOMER, tenders=[{"id": "t", "type": "CARD"}])
    result = cli("pos", "resync", "NOW1", "--json")
    assert result.exit_code == 0 and writes(coded) == [], result.output
    assert db.execute("SELECT status FROM jobs WHERE entity_id = 'NOW1'").fetchone()[0] == "previewed"
