"""A plan known from its charges (issue 57), drilled with the real processes: a Givebutter plan whose ``plan.created``
(and first charge) never arrived, started long before the poll's window. Its next charge, delivered to `synctool
serve` and run by `synctool drain`, makes one gift and puts the donor in the monthly donors' group, reading the plan
once (``GET /v1/plans/{id}``); the charge after it reads the plan no more."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import httpx

from synctool.fakes.world import WEBHOOK_SECRETS
from tests.drills.conftest import Site, coded
from tests.drills.test_invitation_drills import run, settled
from tests.drills.test_plan_drills import GROUP, in_process


def test_a_plan_whose_created_event_was_lost_is_read_once_at_its_charge_and_its_donor_joins_the_group(site: Site):
    gb, crm = site.world.givebutter, site.world.crm
    coded(site)
    in_process(site, "mappings", "types", "set", "donations:recurring", "--fund-id", "2398", "--gift-category-id", "5940")
    in_process(site, "mappings", "plans", "set", "--group", str(GROUP))
    site.serve()
    signature = {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"], "Content-Type": "application/json"}
    with httpx.Client(timeout=30) as hook:

        def deliver(body: bytes) -> None:
            r = hook.post(f"{site.url}/webhooks/donations", content=body, headers=signature)
            assert r.status_code == 200, r.text

        gb.deliver = deliver
        now = datetime.now(UTC).replace(microsecond=0)
        # started four months ago; its plan.created and first charge never reached synctool
        plan = gb.create_plan("marie@example.org", "Marie", "Curie", 25, at=now - timedelta(days=120), lost=True)
        reads = lambda: [r for r in list(gb.requests) if r["path"] == f"/v1/plans/{plan['id']}"]  # noqa: E731
        first = gb.charge_plan(plan["id"], at=now - timedelta(hours=2))
        run(site, "drain", "--max-seconds", "20")
        settled(site)

        def gifts() -> list[str]:
            return sorted(g["external_id"] for g in list(crm.gifts.values()))

        assert gifts() == [f"donations_{first['id']}"]  # one gift for the charge that arrived
        [cid] = {str(g["constituent_id"]) for g in list(crm.gifts.values())}
        members = [m for m in list(crm.group_memberships.values()) if m["group_id"] == GROUP]
        assert [(str(m["constituent_id"]), m["is_current"]) for m in members] == [(cid, True)]
        assert len(reads()) == 1

        second = gb.charge_plan(plan["id"], at=now - timedelta(hours=1))
        run(site, "drain", "--max-seconds", "20")
        settled(site)
        assert gifts() == sorted([f"donations_{first['id']}", f"donations_{second['id']}"])
        assert len(reads()) == 1  # recorded: the plan is read no more
        assert len([m for m in list(crm.group_memberships.values()) if m["group_id"] == GROUP]) == 1
    listed = json.loads(run(site, "plans", "list", "--json"))
    assert [(p["plan_id"], p["status"], p["constituent_id"]) for p in listed["items"]] == [(plan["id"], "active", cid)]
