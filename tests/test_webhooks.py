"""`synctool webhooks status|register` against the platforms' fakes: a blank account, registration, a
second registration that changes nothing, a wrong URL repaired, and a Square delivery signed with the key
that registration stored."""

from __future__ import annotations

import json
import re

from starlette.testclient import TestClient

from synctool.fakes import samples
from synctool.web.receiver import create_app
from tests import helpers

URL = "https://hooks.example.net"


def exported(result) -> dict[str, str]:
    return dict(re.findall(r"export (\w+)='([^']*)'", result.stderr))


def states(cli) -> tuple[int, dict[tuple[str, str], str]]:
    result = cli("webhooks", "status", "--json")
    data = json.loads(result.stdout)
    return result.exit_code, {(s["source"], s["where"]): s["state"] for s in data["sources"]}


def test_register_then_status_ok_then_idempotent_and_repaired(world, cli, env, tmp_path):
    for name in ("DONATIONS_WEBHOOK_SECRET", "POS_WEBHOOK_SIGNATURE_KEY", "MAILING_WEBHOOK_SECRET", "PAYMENTS_WEBHOOK_SECRET"):
        env.pop(name)  # a new install: no secrets yet
    assert cli("mailing", "mappings", "set", "b7e21c0d94").exit_code == 0
    code, before = states(cli)
    assert code == 1 and set(before.values()) == {"not configured"}  # no public URL yet
    (tmp_path / "config.yaml").write_text(f"receiver:\n  public_url: {URL}\n")
    code, blank = states(cli)
    assert code == 1 and set(blank.values()) == {"missing"} and len(blank) == 4  # a blank account
    bad = cli("webhooks", "register", "--url", "http://insecure.example.net")
    assert bad.exit_code == 2 and "https://" in bad.output

    first = cli("webhooks", "register", "--url", URL)
    assert first.exit_code == 0, first.output
    second = cli("webhooks", "register", "--url", URL, "--json")  # again, before the secrets were saved
    actions = {r["source"]: r["action"] for r in json.loads(second.stdout)["registered"]}
    secrets = {**exported(first), **exported(second)}  # Square's key was rotated to be learnt again
    assert set(secrets) == {
        "DONATIONS_WEBHOOK_SECRET",
        "POS_WEBHOOK_SIGNATURE_KEY",
        "MAILING_WEBHOOK_SECRET",
        "PAYMENTS_WEBHOOK_SECRET",
    }
    assert (
        "whsec_" in secrets["PAYMENTS_WEBHOOK_SECRET"]
        and secrets["PAYMENTS_WEBHOOK_SECRET"] not in cli("webhooks", "status", "--json").stdout
    )
    env.update(secrets)  # the operator puts the export lines in synctool's environment
    code, after = states(cli)
    assert code == 0 and set(after.values()) == {"ok"}, after
    doctor = json.loads(cli("doctor", "--json").stdout)
    checks = doctor["checks"] if isinstance(doctor, dict) else doctor
    assert {c["check"]: c["status"] for c in checks}["webhook pos"] == "ok"
    # the second register above created nothing new
    assert len(world.square.subscriptions) == len(world.stripe.endpoints) == len(world.givebutter.webhooks) == 1
    assert len(world.mailchimp.webhooks["b7e21c0d94"]) == 1 and set(actions.values()) <= {"unchanged", "secret renewed"}
    hook = world.mailchimp.webhooks["b7e21c0d94"][0]
    assert hook["url"] == f"{URL}/webhooks/mailing?secret={secrets['MAILING_WEBHOOK_SECRET']}"
    assert hook["sources"]["api"] is False and hook["events"]["unsubscribe"] and hook["events"]["cleaned"]
    sub = next(iter(world.square.subscriptions.values()))
    assert sub["notification_url"] == f"{URL}/webhooks/pos" and "refund.updated" in sub["event_types"]

    # someone points Square at an old host and drops an event: status says so, register repairs in place
    sub.update(notification_url="https://old.example.net/webhooks/pos", event_types=["order.updated"])
    code, broken = states(cli)
    assert code == 1 and broken[("pos", "")] == "wrong URL"
    assert cli("webhooks", "register", "--url", URL, "--source", "pos").exit_code == 0
    assert len(world.square.subscriptions) == 1 and sub["notification_url"] == f"{URL}/webhooks/pos"
    assert states(cli) == (0, after)

    # a Square delivery signed with the stored key, to the registered URL, verifies at the receiver
    body = samples.square_order_event("REG1")
    assert sub["signature_key"] == secrets["POS_WEBHOOK_SIGNATURE_KEY"]  # what Square signs with is what synctool holds
    signature = samples.square_signature(sub["signature_key"], f"{URL}/webhooks/pos", body)
    with TestClient(create_app(helpers.runtime())) as receiver:
        ok = receiver.post("/webhooks/pos", content=body, headers={"x-square-hmacsha256-signature": signature})
        assert ok.status_code == 200, ok.text
        forged = receiver.post(
            "/webhooks/pos",
            content=body,
            headers={"x-square-hmacsha256-signature": ("B" if signature[0] == "A" else "A") + signature[1:]},
        )
        assert forged.status_code == 401


def test_a_lost_stripe_secret_replaces_the_endpoint_not_doubles_it(world, cli, env):
    env.pop("PAYMENTS_WEBHOOK_SECRET")
    assert cli("webhooks", "register", "--url", URL, "--source", "payments").exit_code == 0
    [first] = world.stripe.endpoints
    env.pop("PAYMENTS_WEBHOOK_SECRET", None)  # the export line was never saved
    again = cli("webhooks", "register", "--url", URL, "--source", "payments", "--json")
    assert json.loads(again.stdout)["registered"][0]["action"] == "secret renewed"
    assert len(world.stripe.endpoints) == 1 and first not in world.stripe.endpoints


def test_status_names_what_is_not_configured(world, cli, env):
    env.pop("PAYMENTS_API_KEY")
    assert cli("webhooks", "register", "--url", URL, "--source", "donations").exit_code == 0
    code, found = states(cli)
    assert code == 1 and found[("payments", "")] == "not configured" and found[("mailing", "")] == "not configured"
    assert cli("webhooks", "status", "--source", "nope").exit_code == 2
