"""Donorbox's documented bodies (tests/data/real_bodies/donorbox, manifest.json names each one's source) go in as
Donorbox sends them, a signed delivery or an item of its API's listing that `synctool poll` reads, then drain runs,
and each ends as the manifest says; each API body is also what the API description (tests/specs/donorbox.json)
describes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from starlette.testclient import TestClient

from synctool import platforms
from synctool.platforms.donorbox.webhook import sign
from tests import contracts
from tests.flow_helpers import run_drain
from tests.helpers import runtime
from tests.test_real_bodies import BODIES, HERE

SECRET = "donorbox-test-signature-secret"
OURS = [pytest.param(b, id=b["file"]) for b in BODIES if b["platform"] == "donorbox"]
SCHEMAS = {"poll": "Donation", "plan": "Plan"}


@pytest.fixture
def site(coded, env, isolated, cli) -> Iterator:
    used = ", ".join([*platforms.DEFAULT_PLATFORMS, "donorbox"])
    (isolated / "config.yaml").write_text(f"platforms: [{used}]\n")
    env.update(DONORBOX_WEBHOOK_SECRET=SECRET, DONORBOX_ACCOUNT_EMAIL="treasurer@example.org")
    yield coded


def test_donorboxs_bodies_are_listed():
    assert len(OURS) >= 4


@pytest.mark.parametrize("body", OURS)
def test_a_documented_donorbox_body_ends_as_expected(body, site, cli, db):
    content = (HERE / body["file"]).read_bytes()
    how = body["enters"].split(":")[2]
    if how in SCHEMAS:  # an API item: the description describes it
        spec = contracts.load("donorbox.json")
        assert spec is not None
        assert contracts._errors("donorbox.json", {"$ref": f"#/$defs/{SCHEMAS[how]}"}, json.loads(content)) == []
    if how == "webhook":
        from synctool.web.receiver import create_app

        with TestClient(create_app(runtime())) as client:
            r = client.post("/webhooks/donorbox", content=content, headers={"Donorbox-Signature": sign(SECRET, content)})
        assert r.status_code == 200 and r.json()["status"] == "accepted", r.text
    elif how == "poll":
        donation = json.loads(content)
        site.donorbox.donations.append(donation)
        made = datetime.fromisoformat(donation["donation_date"].replace("Z", "+00:00"))
        days = (datetime.now(UTC) - made).days + 2  # back to the documented donation's day, whatever today is
        result = cli("poll", "--source", "donorbox", "--lookback", f"{days}d", "--json")
        assert result.exit_code == 0 and json.loads(result.stdout)["sources"]["donorbox"]["queued"] == 1, result.stdout
    elif how == "plan":
        site.donorbox.plans.append(json.loads(content))
        result = cli("poll", "--source", "donorbox", "--json")
        assert json.loads(result.stdout)["sources"]["donorbox"]["plans_queued"] == 1, result.stdout
    run_drain()
    if how == "plan":
        plan = json.loads(content)
        row = db.execute(
            "SELECT status, amount FROM plans WHERE source = 'donorbox' AND plan_id = ?", (str(plan["id"]),)
        ).fetchone()
        assert f"plan {row['status']}" == body["end"] and row["amount"] == "10.00", dict(row)
        return
    rows = db.execute("SELECT * FROM jobs WHERE source = 'donorbox'").fetchall()
    gifts = {g["external_id"]: g for g in site.crm.gifts.values()}
    kind, _, amount = body["end"].partition(" ")
    assert kind == "gift" and [r["status"] for r in rows] == ["succeeded"], [dict(r) for r in rows]
    assert f"{gifts[body['external_id']]['received_amount']:.2f}" == amount
