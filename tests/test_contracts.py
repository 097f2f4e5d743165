"""The fakes held to the platforms' own API descriptions (tests/contracts.py; ``../shared/reference/specs/``).

Every test that uses the ``world`` fixture checks its traffic with each fake on the way out. Here: the whole demo
path's traffic (``demo_problems``, run by the demo's test), the webhook bodies the fakes and samples produce, and the fields synctool's payload models read,
each against the platform's description.
"""

from __future__ import annotations

import importlib

import pytest

from synctool import platforms
from synctool.fakes import samples
from tests import contracts

SPECS = {role: hook.contract for role, hook in platforms.fakes().items() if hook.contract}
pytestmark = pytest.mark.skipif(not contracts.available(), reason=contracts.ABSENT)


def demo_problems(world) -> list[str]:
    """The demo path's traffic against each platform's description (``tests/test_operations.py`` runs the demo once
    for both its own checks and these: it takes 7 s)."""
    found, exercised = [], {}
    for role, name in SPECS.items():
        exchanges = world.recorders[role].exchanges
        found += contracts.problems(name, exchanges)
        exercised[name] = contracts.counted(name, exchanges)["operations"]
    # each platform's fake was exercised: its webhook registration, and its money where it has some
    if not (exercised["square.json"] >= 6 and exercised["givebutter.json"] >= 3):
        found.append(f"the demo exercised too little of Square or Givebutter: {exercised}")
    if not (exercised["stripe.json"] >= 2 and exercised["mailchimp.json"] >= 2):
        found.append(f"the demo exercised too little of Stripe or Mailchimp: {exercised}")
    return found


#: synctool's payload models -> the description's schema for the object they read (every field a model reads must
#: be described, or its reference named here)
MODELS = {
    "square.json": {
        "synctool.platforms.square.webhook:Order": "Order",
        "synctool.platforms.square.webhook:OrderReturn": "OrderReturn",
        "synctool.platforms.square.webhook:PaymentRefund": "PaymentRefund",
        "synctool.platforms.square.webhook:Tender": "Tender",
        "synctool.platforms.square.webhook:LineItem": "OrderLineItem",
        "synctool.platforms.square.webhook:Money": "Money",
        "synctool.platforms.square.webhook:Customer": "Customer",
        "synctool.platforms.square.webhook:CustomerAddress": "Address",
        "synctool.platforms.square.webhook:CustomerPreferences": "CustomerPreferences",
    },
    "givebutter.json": {"synctool.platforms.givebutter.webhook:Transaction": "TransactionResource"},
}


@pytest.mark.parametrize("name", list(MODELS))
def test_every_field_synctool_reads_is_described(name):
    spec = contracts.load(name)
    assert spec is not None
    undescribed = []
    for model_path, schema_name in MODELS[name].items():
        module, _, attr = model_path.partition(":")
        model = getattr(importlib.import_module(module), attr)
        schema = spec["$defs"][schema_name]
        described = {k for branch in schema.get("anyOf", [schema]) for k in branch.get("properties", {})}
        # the key a field is read under: its name, or the platform's own (``PostalAddress.named``)
        read = {
            f: info.validation_alias if isinstance(info.validation_alias, str) else f for f, info in model.model_fields.items()
        }
        undescribed += [f"{model_path}.{f} ({schema_name})" for f, key in read.items() if key not in described]
    assert not undescribed, undescribed


def test_webhook_bodies_are_the_described_objects():
    """The objects inside Square's notifications (a refund, as the fake makes one) and Givebutter's webhook
    data (a TransactionResource) validate against the described schemas."""
    from synctool.platforms.square.fake import FakeSquare

    square = FakeSquare()
    square.payments["P1"] = {
        "id": "P1",
        "order_id": "O1",
        "location_id": "L1",
        "total_money": {"amount": 1000, "currency": "USD"},
    }
    refund = square.refund_payment("P1", 400)
    checks = [
        ("square.json", "PaymentRefund", refund),
        ("square.json", "Order", square.orders[refund["order_id"]]),
        ("givebutter.json", "TransactionResource", samples.GIVEBUTTER_TRANSACTION),
    ]
    found = []
    for name, schema_name, instance in checks:
        found += [f"{schema_name}: {e}" for e in contracts._errors(name, {"$ref": f"#/$defs/{schema_name}"}, instance)]
    assert not found, found


def test_the_lgl_fakes_groups_memberships_contact_reports_and_types_answer_as_documented():
    """Monthly donors' LGL operations (issue 53) through synctool's CRM client over the fake: every request is one
    lgl-openapi.json documents, and every answer has exactly the keys of its documented example."""
    import json
    from pathlib import Path

    from synctool.crm.client import CrmClient
    from synctool.fakes.crm import FakeCrm, create_app
    from synctool.fakes.transport import AppTransport
    from tests.helpers import validate_against_openapi

    spec = json.loads((Path(__file__).parent / "data/lgl-openapi.json").read_text())

    def keys(path: str, method: str, item: bool = False) -> list[str]:
        answer = spec["paths"][path][method]["responses"]["200"]["content"]["application/json"]["examples"]["Example"]["value"]
        return list(answer["items"][0]) if item else [k for k in answer if k != "api_version"]

    crm = FakeCrm("contract-key")
    client = CrmClient("http://crm.fake.invalid/api/v1", "contract-key", transport=AppTransport(create_app(crm)))
    try:
        cid = crm.create_constituent({"first_name": "Larry", "last_name": "Appleton"})["id"]
        assert [list(g) for g in client.reference_list("/groups")] == [keys("/groups", "get", item=True)] * 4
        assert {tuple(m) for m in client.reference_list("/team_members")} == {tuple(keys("/team_members", "get", True))}
        assert [list(t) for t in client.reference_list("/types/contact_report_types")][0] == keys("/types/{type}", "get", True)
        made = client.add_to_group(cid, {"group_id": 704, "date_start": "2026-01-15", "is_current": True})
        assert list(made)[1:] == keys("/group_memberships/{id}", "get")
        listed = client.list_group_memberships(cid)
        assert [list(m) for m in listed] == [keys("/constituents/{constituent_id}/group_memberships", "get", item=True)]
        ended = client.update_group_membership(made["id"], {"group_id": 704, "date_end": "2026-06-30", "is_current": False})
        assert list(ended)[1:] == keys("/group_memberships/{id}", "patch") and ended["is_current"] is False
        assert list(client.get(f"/group_memberships/{made['id']}"))[1:] == keys("/group_memberships/{id}", "get")
        body = {
            "contact_report_type_id": 2183,
            "original_date": "2026-03-02",
            "text": "Follow up.",
            "team_member": "Nick Bicknell",
        }
        report = client.add_contact_report(cid, body)
        assert list(report)[1:] == keys("/constituents/{constituent_id}/contact_reports", "post")
        assert report["team_member"] == "Nick Bicknell" and report["team_member_email"] == "nick@example.org"
        path = "/constituents/{constituent_id}/contact_reports"
        assert [list(r) for r in client.contact_reports(cid)] == [keys(path, "get", item=True)]
        assert list(client.get(f"/contact_reports/{report['id']}"))[1:] == keys("/contact_reports/{id}", "get")
        validate_against_openapi(crm.requests)
    finally:
        client.close()
