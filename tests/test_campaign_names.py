"""Campaign names as a contract part (issue 60): a platform's ``Mappings.campaigns`` hook answers its campaigns (forms,
payment links) by name, id -> name, and the Mappings page offers them by that name (escaped), a typed name choosing
its campaign; Givebutter's hook answers from its campaign cache, so its page reads as before; a platform without
the hook is listed from its cache ``<role>:campaigns`` as before."""

from __future__ import annotations

import dataclasses

import pytest

from synctool import platforms, settings, store
from synctool.platforms.givebutter import PLATFORM as GIVEBUTTER
from tests.test_setup_pages import admin, between, post  # noqa: F401  (fixture)
from tests.test_staff_page import page, team  # noqa: F401  (fixtures)

HOSTILE = "Spring <script>alert(1)</script> Appeal"


def test_givebutters_hook_names_each_cached_campaign_by_title_else_code(db):
    with store.atomic(db):
        settings.cache_put(db, "donations:campaigns", "1", {"id": 1, "title": "Annual Appeal", "code": "ANNUAL"})
        settings.cache_put(db, "donations:campaigns", "2", {"id": 2, "title": None, "code": "GALA"})
    assert GIVEBUTTER.mappings.campaigns is not None
    assert GIVEBUTTER.mappings.campaigns(db, None) == {"1": "Annual Appeal", "2": "GALA"}  # type: ignore[arg-type]


@pytest.fixture
def named(monkeypatch):
    """Givebutter in use with a hook that answers from its platform's API (nothing in its cache)."""
    asked = []

    def campaigns(conn, rt):
        asked.append(1)
        return {"F-100": HOSTILE, "F-200": "Winter Drive"}

    mappings = dataclasses.replace(GIVEBUTTER.mappings, campaigns=campaigns)
    with_hook = dataclasses.replace(GIVEBUTTER, mappings=mappings)
    in_use = platforms.in_use
    monkeypatch.setattr(
        platforms, "in_use", lambda config: tuple(with_hook if p.name == "givebutter" else p for p in in_use(config))
    )
    return asked


def test_the_mappings_page_lists_a_platforms_campaigns_by_the_name_its_hook_answers(admin, named):  # noqa: F811
    shown = admin.get("/admin/mappings").text
    choice = between(shown, '<select id="override-campaign" name="campaign">', "</select>")
    assert '<option value="F-200">Winter Drive (F-200)</option>' in choice
    assert "Spring &lt;script&gt;alert(1)&lt;/script&gt; Appeal (F-100)" in choice and "<script>" not in choice
    assert named  # asked, not read from a cache
    said = post(admin, "/admin/mappings/overrides", {"campaign": "", "campaign_other": "winter drive", "fund_id": "2398"})
    flash = between(said, '<p class="flash" role="status">', "</p>")
    assert "Campaign Winter Drive (F-200) is mapped: CRM fund General (#2398)." in flash


def test_a_campaigns_hook_that_answers_otherwise_is_caught_before_a_page_calls_it():
    from synctool.platform import Hook
    from synctool.testing import hook_problems

    assert hook_problems(GIVEBUTTER) == []
    listing = Hook("synctool.platforms.givebutter.ops:campaigns")  # the campaigns as a list: not names by id
    wrong = dataclasses.replace(GIVEBUTTER, mappings=dataclasses.replace(GIVEBUTTER.mappings, campaigns=listing))
    [problem] = hook_problems(wrong)
    assert problem.startswith("mappings.campaigns:") and "Mapping[str, str]" in problem
