"""KindDesk, installed beside synctool, tested as its writer would with synctool.testing alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from synctool_kinddesk import PLATFORM
from synctool_kinddesk.webhook import sign

from synctool.testing import check_platform, deliver

NOW = datetime.now(UTC).isoformat(timespec="seconds")
GIFTS = [
    {"id": "K1", "amount": "25.00", "email": "ida@example.org", "first_name": "Ida", "last_name": "Wells", "created_at": NOW},
    {"id": "K2", "amount": "40.00", "email": "ida@example.org", "first_name": "Ida", "last_name": "Wells", "created_at": NOW},
]


def test_it_keeps_the_platform_contract():
    assert {"webhook.adapter", "client", "poll", "expected", "handlers"} <= set(check_platform(PLATFORM))


def test_it_works_through_every_command(synctool_site, crm, cli):
    # registered by its entry point, like any installed platform: synctool lists it and reads its section
    listed = {p["name"]: p for p in json.loads(cli("platforms", "--json").stdout)}
    assert listed["kinddesk"]["role"] == "kind" and listed["kinddesk"]["can"] == "poll, reconcile, backfill, connection test"
    fake = synctool_site.use(PLATFORM)
    fake.gifts += GIFTS
    synctool_site.config("kind:\n  default_fund_id: 2398\n")
    assert cli("sync-mode", "live").exit_code == 0
    assert cli("crm", "refresh").exit_code == 0
    assert cli("mappings", "types", "set", "kind:default", "--fund-id", "2399").exit_code == 0
    assert cli("mappings", "payments", "set", "kind:CARD", "--payment-type-id", "1509").exit_code == 0

    from starlette.testclient import TestClient

    from synctool.web.receiver import build

    with TestClient(build(synctool_site.runtime())) as receiver:
        body = json.dumps({"id": "evt_K1", "gift": GIFTS[0]}).encode()
        secret = synctool_site.env["KIND_WEBHOOK_SECRET"]
        assert deliver(receiver, "kind", body, {"X-Kind-Signature": sign(secret, body)})["status"] == "accepted"
        assert receiver.post("/webhooks/kind", content=body, headers={"X-Kind-Signature": "0" * 64}).status_code == 401
    assert cli("drain", "--max-seconds", "10").exit_code == 0
    made = [g for g in crm.gifts.values() if g["external_id"] == "kind_K1"]
    assert len(made) == 1 and made[0]["fund_id"] == 2399 and made[0]["payment_type_id"] == 1509

    dry = json.loads(cli("backfill", "--since", "7d", "--source", "kind", "--dry-run", "--json").stdout)
    assert dry["new"] == 1  # K2 never arrived by webhook
    polled = json.loads(cli("poll", "--source", "kind", "--json").stdout)["sources"]["kind"]
    assert (polled["status"], polled["seen"], polled["queued"]) == ("ok", 2, 1)
    assert cli("drain", "--max-seconds", "10").exit_code == 0
    report = json.loads(cli("reconcile", "--from", "7d", "--source", "kind", "--json").stdout)
    assert {i["external_id"]: i["status"] for i in report["items"]} == {"kind_K1": "matched", "kind_K2": "matched"}
    connections = {r["name"]: r for r in json.loads(cli("test-connections", "--json").stdout)}
    assert connections["kind"]["ok"] and connections["kind"]["detail"] == "2 gift(s) listed"
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert checks["secret KIND_API_KEY"]["status"] == "ok"
