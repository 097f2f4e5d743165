"""`synctool deliveries` and `synctool inject`."""

from __future__ import annotations

import json

from synctool.fakes import samples


def test_inject_then_list_and_show(cli, tmp_path, db):
    path = tmp_path / "txn.json"
    body = samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION, event_id="ev-77")
    path.write_bytes(body)
    result = cli("inject", str(path), "--source", "donations", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "accepted" and data["event_type"] == "transaction.succeeded"
    assert json.loads(cli("inject", str(path), "--source", "donations", "--json").stdout)["status"] == "duplicate"

    listed = json.loads(cli("deliveries", "list", "--source", "donations", "--since", "1h", "--json").stdout)
    assert len(listed) == 1 and listed[0]["verified"] is False and listed[0]["job_id"] == data["job_id"]
    shown = json.loads(cli("deliveries", "show", str(listed[0]["id"]), "--json").stdout)
    assert shown["body"] == body.decode() and "injected" in shown["note"]
    assert cli("deliveries", "list", "--source", "pos", "--json").stdout.strip() == "[]"


def test_inject_bad_payload_and_source(cli, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("[1, 2]")
    result = cli("inject", str(path), "--source", "donations")
    assert result.exit_code == 2 and "not a JSON object" in result.output
    result = cli("inject", str(path), "--source", "fax")
    assert result.exit_code == 2 and "unknown source" in result.output
    result = cli("inject", str(tmp_path / "missing.json"), "--source", "pos")
    assert result.exit_code == 2 and "cannot read" in result.output


def test_show_unknown_and_bad_since(cli):
    assert cli("deliveries", "show", "99").exit_code == 3
    result = cli("deliveries", "list", "--since", "yesterday")
    assert result.exit_code == 2 and "not a date or duration" in result.output
