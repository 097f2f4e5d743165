"""Bodies the platforms really sent or documented (tests/data/real_bodies: each one's source is in its README
and manifest.json) go in through the public surfaces, a signed webhook to the receiver or an item in the
platform fake's API listing that `synctool poll` reads, then drain runs, and each ends as its manifest says:
a gift of the amount under its external id, a skip with its reason, a hold, tags, or an event type that is
not synced. A failure names the body, what it should have become and what it became."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from synctool.platforms.signing import sign
from tests.conftest import POS_URL, TEST_SECRETS
from tests.flow_helpers import run_drain

HERE = Path(__file__).parent / "data" / "real_bodies"
MANIFEST = json.loads((HERE / "manifest.json").read_text())
BODIES: list[dict[str, Any]] = MANIFEST["bodies"]

#: what the mailing tests tag with (the cached CRM keyword ids the `coded` world knows)
UNSUBSCRIBED_TAG, CLEANED_TAG = 12222, 12223


def raw(body: dict[str, Any]) -> bytes:
    return (HERE / body["file"]).read_bytes()


def where(body: dict[str, Any]) -> str:
    source = MANIFEST["sources"][body["source"]]
    place = source.get("repository", source.get("url", ""))
    if "path" in source:
        place += f":{source['path']}"
    note = f"\n  reference: {body['reference_note']}" if body.get("reference_note") else ""
    return f"{body['file']} ({body['what']}; from {place}) should end as {body['end']!r}{note}"


# -- how each body goes in ------------------------------------------------------------------------


def post(receiver, role: str, content: bytes, headers: dict[str, str], query: str = "") -> dict[str, Any]:
    r = receiver.post(f"/webhooks/{role}{query}", content=content, headers=headers)
    assert r.status_code == 200, f"the receiver refused it: {r.status_code} {r.text}"
    return r.json()


def deliver(world, receiver, cli, body: dict[str, Any]) -> list[str]:
    """Put the body in; the ids of the jobs it made (none: the poll queued nothing)."""
    kind, role, *event = body["enters"].split(":")
    content = raw(body)
    if kind == "poll":
        return poll(world, cli, role, json.loads(content))
    if role == "donations":
        if body.get("with_listing"):  # the API knows the purchase the ticket belongs to
            world.givebutter.add_transaction(json.loads((HERE / body["with_listing"]).read_bytes()))
        if event:  # an API resource, sent as that event's data in Givebutter's envelope {event, id, data}
            resource = json.loads(content)
            content = json.dumps({"event": event[0], "id": f"real-body-{resource['id']}", "data": resource}).encode()
        reply = post(receiver, "donations", content, {"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]})
    elif role == "pos":
        if body.get("fake_order"):
            made = square_order(json.loads(content), body["fake_order"])
            if "payment" in made:
                world.square.payments[made["payment"]["id"]] = made["payment"]
            else:
                world.square.orders[made["id"]] = made
        from synctool.fakes.samples import square_signature

        signature = square_signature(TEST_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"], POS_URL, content)
        reply = post(receiver, "pos", content, {"x-square-hmacsha256-signature": signature})
    elif role == "mailing":
        reply = post(
            receiver,
            "mailing",
            content,
            {"content-type": "application/x-www-form-urlencoded"},
            f"?secret={TEST_SECRETS['MAILING_WEBHOOK_SECRET']}",
        )
    elif role == "payments":
        reply = post(receiver, "payments", content, {"Stripe-Signature": sign(content, TEST_SECRETS["PAYMENTS_WEBHOOK_SECRET"])})
    else:
        raise AssertionError(f"unknown way in: {body['enters']}")
    assert reply.get("status") == "accepted", f"the receiver did not queue it: {reply}"
    return [reply["job_id"]]


def square_order(notice: dict[str, Any], how: str) -> dict[str, Any]:
    """The order a Square example names, which Square publishes no example of: made from the notice itself."""
    obj = notice["data"]["object"]
    if how == "refund_payment":  # the refunded payment, naming as its order the one the refund names
        refund = obj["refund"]
        return {
            "payment": {
                "id": refund["payment_id"],
                "order_id": refund["order_id"],
                "location_id": refund["location_id"],
                "status": "COMPLETED",
                "amount_money": refund["amount_money"],
                "total_money": refund["amount_money"],
                "created_at": refund["created_at"],
            }
        }
    if how == "from_payment":
        payment = obj["payment"]
        return {
            "id": payment["order_id"],
            "location_id": payment["location_id"],
            "state": "COMPLETED",
            "created_at": payment["created_at"],
            "total_money": payment["total_money"],
            "tenders": [{"type": payment["source_type"], "payment_id": payment["id"]}],
        }
    summary = obj.get("order_created") or obj.get("order_updated")
    return {k: summary[k] for k in ("location_id", "state", "created_at")} | {"id": summary["order_id"]}


def pos_setup(cli) -> None:
    """A sale with no customer is credited to the POS default constituent, as an operator sets it."""
    assert cli("settings", "pos-default-constituent", "--email", "walk-in@example.org", "--last-name", "Walk-in").exit_code == 0


def poll(world, cli, role: str, item: dict[str, Any]) -> list[str]:
    if role == "donations":
        world.givebutter.add_transaction(item)
    else:
        location = item["location_id"]
        world.square.locations.setdefault(
            location, {"id": location, "name": "Recorded location", "status": "ACTIVE", "currency": "USD", "timezone": "UTC"}
        )
        world.square.orders[item["id"]] = item
    result = cli("poll", "--source", role, "--lookback", "3650d", "--json")
    assert result.exit_code == 0, f"poll failed: {result.stdout}{result.stderr}"
    from synctool import store
    from tests.helpers import CURRENT

    with store.connect(CURRENT["env"]["SYNCTOOL_DB"]) as conn:
        return [r["id"] for r in conn.execute("SELECT id FROM jobs WHERE source = ? ORDER BY created_at", (role,))]


def mailing_setup(world, cli, body: dict[str, Any]) -> int | None:
    """Audience mapped, tag rules set, and the person in the CRM, as an operator has it; the constituent's id."""
    from urllib.parse import parse_qs

    form = {k: v[0] for k, v in parse_qs(raw(body).decode(), keep_blank_values=True).items()}
    list_id = form["data[list_id]"]
    assert cli("mailing", "mappings", "set", list_id, "--label", "Newsletter").exit_code == 0
    assert cli("mailing", "tag-rules", "set", "*", "unsubscribe", "--add", str(UNSUBSCRIBED_TAG)).exit_code == 0
    assert cli("mailing", "tag-rules", "set", "*", "cleaned", "--add", str(CLEANED_TAG)).exit_code == 0
    if not body.get("email"):
        return None
    lgl = world.client("crm", headers={"Authorization": "Bearer " + world.env()["CRM_API_KEY"]})
    person = {"first_name": form.get("data[merges][FNAME]"), "last_name": form.get("data[merges][LNAME]") or "Sample"}
    made = lgl.post("/constituents", json={**person, "email_addresses": [{"address": body["email"]}]}).json()
    return made["id"]


# -- the test ---------------------------------------------------------------------------------------


def served_by_a_fake(body: dict[str, Any]) -> bool:
    """A body the platform's fake answers with (a listing item, or the purchase a ticket names): what the platform
    really returned, which its published API description does not always allow (the contract check would fail on
    the recording, not on synctool), so those cases are exempt from it (``off_contract``)."""
    return body["enters"].startswith("poll:") or bool(body.get("with_listing"))


#: a platform in use only when named (``enters: test:<role>:...``) puts its bodies in from its own test file
CASES = [pytest.param(b, id=b["file"], marks=[pytest.mark.off_contract] if served_by_a_fake(b) else [])
         for b in BODIES if not b["enters"].startswith("test:")]  # fmt: skip


@pytest.mark.parametrize("body", CASES)
def test_a_real_body_ends_as_expected(body, coded, receiver, db, cli):
    world = coded
    constituent = mailing_setup(world, cli, body) if body["platform"] == "mailchimp" else None
    if body["platform"] == "square":
        pos_setup(cli)
    job_ids = deliver(world, receiver, cli, body)
    run_drain()
    rows = [db.execute("SELECT * FROM jobs WHERE id = ?", (i,)).fetchone() for i in job_ids]
    said = "; ".join(f"job {r['entity_type']} {r['status']}: {r['message'] or r['last_error'] or ''}" for r in rows) or "no job"
    gifts = {g["external_id"]: g for g in world.crm.gifts.values()}
    became = f"it became: {said}; CRM gifts {sorted((k, g['received_amount']) for k, g in gifts.items()) or 'none'}"
    why = f"{where(body)}\n  {became}"
    end: str = body["end"]
    kind, _, detail = end.partition(" ")

    if kind == "gift":
        gift = gifts.get(body["external_id"])
        assert gift is not None, why
        assert f"{gift['received_amount']:.2f}" == detail, why
        assert len(gifts) == 1, why  # one purchase, one gift
        assert any(r["status"] == "succeeded" for r in rows), why
    elif end.startswith("no gift: no money"):
        assert body["external_id"] not in gifts and not gifts, why
        assert rows and all(r["status"] == "skipped" for r in rows), why
        assert any("no money" in (r["message"] or "") for r in rows), why
    elif kind == "held:":
        assert not gifts, why
        assert rows and rows[-1]["status"] == "review" and f"held: {detail}" in (rows[-1]["message"] or ""), why
    elif kind in ("skipped:", "ignored"):
        words = end.partition(": ")[2]
        assert not gifts, why
        assert rows and all(r["status"] == "skipped" for r in rows), why
        assert any(words in (r["message"] or "") for r in rows), why
    elif kind == "succeeded:":
        assert rows and all(r["status"] == "succeeded" for r in rows) and not gifts, why
        assert any(detail in (r["message"] or "") for r in rows), why
    elif end in ("unsubscribed", "cleaned"):
        tag = UNSUBSCRIBED_TAG if end == "unsubscribed" else CLEANED_TAG
        assert rows and rows[0]["status"] == "succeeded", why
        assert tag in world.crm.keywords.get(constituent, set()), why
    elif kind == "waits:":  # a refund whose gift is not in the CRM (yet): queued again, saying so
        assert not gifts and rows and rows[0]["status"] == "queued" and detail in (rows[0]["message"] or ""), why
    elif kind == "failed:":  # the job failed, its error saying why; no gift
        assert not gifts and rows and all(r["status"] == "failed" for r in rows), why
        assert any(detail in (r["last_error"] or r["message"] or "") for r in rows), why
    elif kind == "not":  # not queued: the poll read it and left it
        assert not job_ids and not gifts, why
    else:
        raise AssertionError(f"{body['file']}: the manifest's end {end!r} is not one this test knows")


def test_the_corpus_is_what_the_readme_lists():
    """Every body file is in the manifest (and the README), every manifest entry has its file and its source."""
    files = {str(p.relative_to(HERE)) for p in HERE.rglob("*") if p.is_file() and p.suffix in (".json", ".txt")} - {
        "manifest.json"
    }
    listed = [b["file"] for b in BODIES]
    assert sorted(listed) == sorted(files) and len(set(listed)) == len(listed)
    readme = (HERE / "README.md").read_text()
    for b in BODIES:
        assert b["source"] in MANIFEST["sources"], b["file"]
        assert b["file"] in readme, f"{b['file']} is not in README.md"
    per_platform = {p: sum(b["platform"] == p for b in BODIES) for p in ("givebutter", "square", "mailchimp", "stripe")}
    assert len(BODIES) >= 30 and min(per_platform.values()) >= 5, per_platform
