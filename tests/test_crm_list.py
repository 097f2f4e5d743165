"""`synctool crm list KIND`: one command for every cached CRM reference list; the older `synctool crm funds`
and the like still answer, unlisted."""

from __future__ import annotations

import json

import typer

from synctool import settings
from synctool.cli.crm import KINDS

FUNDS = {
    "000000002398": {"id": 2398, "name": "General", "code": "GEN"},
    "000000002399": {"id": 2399, "name": "Events", "code": "EVT"},
}
FIELD = {"id": 31, "name": "Referral Source", "key": "referral_source", "keywords": [{"name": "Friend"}, {"name": "Radio"}]}


def test_a_cached_list_as_a_table_and_as_json(db, cli):
    settings.cache_replace(db, "crm:funds", FUNDS)
    table = cli("crm", "list", "funds")
    assert table.exit_code == 0, table.output
    assert "CRM funds (cached " in table.stdout and "never" not in table.stdout
    assert "General" in table.stdout and "EVT" in table.stdout and "2398" in table.stdout
    shown = cli("crm", "list", "funds", "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout) == list(FUNDS.values())


def test_gift_fields_show_their_values_and_an_empty_list_says_to_refresh(db, cli):
    settings.cache_replace(db, "crm:gift-fields", {"000000000031": FIELD})
    table = cli("crm", "list", "gift-fields").stdout
    assert "values" in table and "Friend, Radio" in table and "referral_source" in table
    empty = cli("crm", "list", "appeals")
    assert empty.exit_code == 0 and "never: run synctool crm refresh" in " ".join(empty.stdout.split())
    assert json.loads(cli("crm", "list", "appeals", "--json").stdout) == []


def test_an_unknown_kind_is_a_usage_error_naming_every_kind(db, cli):
    wrong = cli("crm", "list", "pledges")
    assert wrong.exit_code == 2
    assert "pledges" in wrong.output and all(kind in wrong.output for kind in KINDS)


def test_the_older_names_answer_the_same_and_are_not_listed(db, cli):
    settings.cache_replace(db, "crm:funds", FUNDS)
    for args in ((), ("--json",)):
        assert cli("crm", "funds", *args).stdout == cli("crm", "list", "funds", *args).stdout
    from synctool.cli.crm import app

    group = typer.main.get_command(app)
    ctx = typer.Context(group)
    older = (
        "funds campaigns appeals gift-types gift-categories payment-types membership-levels relationship-types groups"
        " tags gift-fields events"
    ).split()
    assert set(older) <= set(KINDS)
    for name in older:
        command = group.get_command(ctx, name)
        assert command is not None and command.hidden, name
    assert not group.get_command(ctx, "list").hidden
    help_ = cli("crm", "--help").stdout
    assert " list " in help_ and "gift-categories" not in help_.split("Commands:")[-1]
