"""The staff page speaks to the person reading it: a page says what they can do there, or who can do it
("whoever runs synctool's server", "an administrator"), never which command to type."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_docs import ALL
from tests.test_staff_page import page, team  # noqa: F401  (fixtures)

TEMPLATES = Path(__file__).resolve().parents[1] / "synctool" / "web" / "templates"
#: every command's first word after ``synctool`` (``reconcile``, ``year-end``, ``users`` ...)
COMMANDS = sorted({path.split()[1] for path, _ in ALL if len(path.split()) > 1})


def told_to_type(text: str) -> list[str]:
    """The places in a page's words that tell the reader to type a command."""
    found = [m.group(0) for m in re.finditer(rf"synctool ({'|'.join(map(re.escape, COMMANDS))})\b[^<.]*", text)]
    found += re.findall(r"<code>synctool[^<]*", text) + re.findall(r"\b[Rr]un `[^`]*`", text)
    return found


def test_no_page_template_tells_the_reader_to_type_a_command():
    assert "reconcile" in COMMANDS and "year-end" in COMMANDS and "users" in COMMANDS
    told = {}
    for template in sorted(TEMPLATES.glob("*.html")):
        words = re.sub(r"\{#.*?#\}", "", template.read_text(), flags=re.S)  # comments are for developers
        if found := told_to_type(words):
            told[template.name] = found
    assert told == {}


def test_the_check_finds_a_command_where_one_is_written():
    assert told_to_type("<p>Cron runs <code>synctool reconcile --from 8d</code> nightly.</p>")
    assert told_to_type("ask your administrator (synctool users login-link).")
    assert not told_to_type("<p>Each recurring plan synctool knows, kept in the CRM group.</p>")


@pytest.mark.parametrize("path", ["/admin/year-end?year=2025", "/admin/reconcile", "/admin/payouts", "/admin/sign-in"])
def test_the_pages_that_named_a_command_say_who_can_instead(page, path):  # noqa: F811
    shown = page(None if path.endswith("sign-in") else "admin").get(path)
    assert shown.status_code == 200 and told_to_type(shown.text) == []
    said = {
        "/admin/year-end?year=2025": "whoever runs synctool&#39;s server starts it",
        "/admin/reconcile": "It runs by itself every night",
        "/admin/payouts": "choose the dates and show the payouts",
        "/admin/sign-in": "ask an administrator: they can send you one from the Team page",
    }[path]
    assert said in shown.text
