"""The admin's set-up in the browser (``/admin/mappings``, ``/admin/settings``) through Starlette's TestClient:
each kind of mapping added, changed and removed from the page as `synctool mappings ... --json` then lists it,
each setting changed from the page as the CLI then shows it, the CRM's cached lists as the forms' choices, an
operation's refusal as the page's message, a viewer refused (and recorded), what a donor typed escaped, and the
overview naming a campaign whose gifts had no mapping, with its link to map it."""

from __future__ import annotations

import copy
import json
import re

import pytest

from synctool import settings, store
from synctool.fakes import samples
from tests.flow_helpers import give
from tests.test_staff_page import csrf, page, team  # noqa: F401  (fixtures)

HOSTILE = "<script>alert(1)</script>"


@pytest.fixture
def admin(world, cli, page):  # noqa: F811
    """An admin's browser, with the CRM's reference lists cached (`synctool crm refresh`)."""
    assert cli("crm", "refresh").exit_code == 0
    return page("admin")


def post(browser, action: str, fields: dict[str, str], shown: str = "/admin/mappings"):
    """Fill and send the page's form that posts to ``action``, then follow it back: the next page's text."""
    page_text = browser.get(shown).text
    sent = browser.post(action, data={"csrf": csrf(page_text, action), "back": shown, **fields})
    assert sent.status_code == 303, sent.text
    return browser.get(sent.headers["location"]).text


def listed(cli, *args: str) -> list[dict]:
    out = cli(*args, "--json")
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def by_key(rows: list[dict], key: str = "key") -> dict[str, dict]:
    return {str(r[key]): r for r in rows}


def remove(browser, kind: str, key: str) -> str:
    return post(browser, "/admin/mappings/remove", {"kind": kind, "note": kind, "target": key})


def test_the_forms_offer_the_crms_cached_lists_and_a_number_when_none_is_cached(world, cli, page, db):  # noqa: F811
    bare = page("admin").get("/admin/mappings")
    assert bare.status_code == 200 and 'href="/admin/mappings" aria-current="page"' in bare.text
    assert 'name="fund_id" type="number"' in bare.text and "have not been read yet" in bare.text
    assert "synctool crm refresh" not in bare.text  # the page's own button, not a command for the shell
    said = post(page("admin"), "/admin/mappings/refresh", {})
    assert "The CRM&#39;s lists are read again: 5 fund(s), 3 campaign(s)" in said
    assert listed(cli, "crm", "funds") != []
    shown = page("admin").get("/admin/mappings").text
    for option in ("General #2398", "Annual Giving #822", "Annual Appeal 2026 #2663", "Recurring #5940",
                   "Credit Card #1509", "Pledge #7", "Donation Acknowledgment", "Referral Source (referral_source)"):  # fmt: skip
        assert option in shown, option
    assert 'name="fund_id" type="number"' not in shown


def test_a_campaign_override_is_added_changed_and_removed_from_the_page(admin, cli):
    said = post(admin, "/admin/mappings/overrides", {"campaign": "118722", "fund_id": "2398", "campaign_id": "822",
                                                     "ack_template_name": "do_not_ack"})  # fmt: skip
    assert "Campaign 118722 is mapped: CRM fund General (#2398), CRM campaign Annual Giving (#822), no acknowledgement." in said
    row = by_key(listed(cli, "mappings", "overrides"))["118722"]
    assert (row["fund_id"], row["campaign_id"], row["ack_template_name"]) == (2398, 822, "do_not_ack")
    changing = admin.get("/admin/mappings?edit=campaign_override&key=118722").text  # the form filled to change it
    assert '<option value="118722" selected>(no title) (118722)</option>' in changing
    assert '<option value="2398" selected>' in changing
    post(admin, "/admin/mappings/overrides", {"campaign": "118722", "fund_id": "2399", "appeal_id": "2663"})
    row = by_key(listed(cli, "mappings", "overrides"))["118722"]
    assert (row["fund_id"], row.get("campaign_id"), row["appeal_id"]) == (2399, None, 2663)
    assert "The campaign override mapping 118722 is removed." in remove(admin, "campaign_override", "118722")
    assert listed(cli, "mappings", "overrides") == []


def test_type_defaults_fund_overrides_payments_and_custom_fields_round_trip(admin, cli):
    post(admin, "/admin/mappings/types", {"key": "donations:general", "fund_id": "2398", "gift_category_id": "5937"})
    assert by_key(listed(cli, "mappings", "types"))["donations:general"]["gift_category_id"] == 5937
    post(admin, "/admin/mappings/types", {"key": "donations:general", "fund_id": "2400"})
    row = by_key(listed(cli, "mappings", "types"))["donations:general"]
    assert row["fund_id"] == 2400 and "gift_category_id" not in row  # the fields given replace the whole coding
    remove(admin, "type_default", "donations:general")
    assert "donations:general" not in by_key(listed(cli, "mappings", "types"))

    post(admin, "/admin/mappings/funds", {"fund": "BUILDING", "fund_id": "2401"})
    assert by_key(listed(cli, "mappings", "funds"))["BUILDING"]["fund_id"] == 2401
    post(admin, "/admin/mappings/funds", {"fund": "BUILDING", "fund_id": "2402"})
    assert by_key(listed(cli, "mappings", "funds"))["BUILDING"]["fund_id"] == 2402
    remove(admin, "fund_override", "BUILDING")
    assert listed(cli, "mappings", "funds") == []

    post(admin, "/admin/mappings/payments", {"role": "donations", "method": "Venmo", "payment_type_id": "1510"})
    assert by_key(listed(cli, "mappings", "payments"))["donations:venmo"]["payment_type_id"] == 1510
    post(
        admin,
        "/admin/mappings/payments",
        {"role": "donations", "method": "venmo", "payment_type_id": "1509", "gift_type_id": "1"},
    )
    row = by_key(listed(cli, "mappings", "payments"))["donations:venmo"]
    assert (row["payment_type_id"], row["gift_type_id"]) == (1509, 1)
    remove(admin, "payment_method", "donations:venmo")
    assert "donations:venmo" not in by_key(listed(cli, "mappings", "payments"))

    post(admin, "/admin/mappings/custom-fields", {"field": "How did you hear?", "crm_field": "referral_source"})
    assert by_key(listed(cli, "mappings", "custom-fields"))["How did you hear?"]["crm_field_name"] == "Referral Source"
    post(admin, "/admin/mappings/custom-fields", {"field": "How did you hear?", "crm_field": "Referral Source"})
    assert by_key(listed(cli, "mappings", "custom-fields"))["How did you hear?"]["crm_field"] == "referral_source"
    remove(admin, "custom_field", "How did you hear?")
    assert listed(cli, "mappings", "custom-fields") == []


def test_event_mappings_mailing_lists_and_tag_rules_round_trip(admin, world, cli):
    gala, later = world.crm.add_event("Spring Gala 2026", "2026-11-20"), world.crm.add_event("Winter Ball", "2026-12-20")
    assert cli("crm", "refresh").exit_code == 0
    shown = admin.get("/admin/mappings").text
    assert f'<option value="{gala["id"]}">Spring Gala 2026 (2026-11-20) #{gala["id"]}</option>' in shown
    post(admin, "/admin/events/map", {"target": "555", "event_id": str(gala["id"])})
    assert by_key(listed(cli, "mappings", "events"))["555"]["event_id"] == gala["id"]
    post(admin, "/admin/events/map", {"target": "555", "event_id": str(later["id"])})
    assert by_key(listed(cli, "mappings", "events"))["555"]["event_name"] == "Winter Ball"
    post(admin, "/admin/events/remove", {"target": "555"})
    assert listed(cli, "mappings", "events") == []

    post(admin, "/admin/mappings/mailing-lists", {"list_id": "b7e21c0d94", "label": "Newsletter", "enabled": "on"})
    row = by_key(listed(cli, "mailing", "mappings"), "list_id")["b7e21c0d94"]
    assert (row["label"], row["enabled"], row["push_donors"]) == ("Newsletter", True, False)
    post(admin, "/admin/mappings/mailing-lists", {"list_id": "b7e21c0d94", "label": "News", "push_donors": "on"})
    row = by_key(listed(cli, "mailing", "mappings"), "list_id")["b7e21c0d94"]
    assert (row["label"], row["enabled"], row["push_donors"]) == ("News", False, True)
    remove(admin, "list_mapping", "b7e21c0d94")
    assert listed(cli, "mailing", "mappings") == []

    post(admin, "/admin/mappings/tag-rules", {"list_id": "*", "event": "unsubscribe", "add": "12222", "remove": "12221"})
    [rule] = listed(cli, "mailing", "tag-rules")
    assert (rule["list_id"], rule["event"], rule["add"], rule["remove"]) == ("*", "unsubscribe", [12222], [12221])
    post(admin, "/admin/mappings/tag-rules", {"list_id": "*", "event": "unsubscribe", "add": "12222, 12223", "remove": ""})
    [rule] = listed(cli, "mailing", "tag-rules")
    assert (rule["add"], rule["remove"]) == ([12222, 12223], [])
    remove(admin, "tag_rule", "*:unsubscribe")
    assert listed(cli, "mailing", "tag-rules") == []


def test_an_operations_refusal_is_the_pages_message_and_is_recorded(admin, cli, db):
    said = post(admin, "/admin/mappings/overrides", {"campaign": "118722", "fund_id": "999999"})
    assert "Not done: There is no CRM fund #999999 in the CRM&#39;s lists as last read" in said
    assert listed(cli, "mappings", "overrides") == []
    said = post(admin, "/admin/mappings/tag-rules", {"list_id": "*", "event": "unsubscribe", "add": "twelve"})
    assert "Not done: CRM tags to add: \u201ctwelve\u201d is not a tag&#39;s id" in said
    token = csrf(admin.get("/admin/mappings").text)  # no row to remove: the session's token from another form
    sent = admin.post("/admin/mappings/remove", data={"csrf": token, "kind": "campaign_override", "target": "nothing-here"})
    said = admin.get(sent.headers["location"]).text
    assert "Not done: no campaign_override mapping for" in said and 'class="flash error" id="problem" role="alert"' in said
    records = db.execute(
        "SELECT action, outcome FROM staff_actions WHERE via = 'page' AND action != 'sign in' ORDER BY id"
    ).fetchall()
    assert [r[0] for r in records] == ["set campaign override", "set tag rule", "remove mapping"]
    assert all(r[1].startswith("refused: ") for r in records)


def test_each_setting_changed_from_the_page_shows_in_the_cli(admin, cli, db):
    shown = admin.get("/admin/settings")
    assert shown.status_code == 200 and 'href="/admin/settings" aria-current="page"' in shown.text
    section = between(shown.text, 'aria-labelledby="setting-mailing-sync-enabled"', "</section>")
    assert "Mailing events in the CRM <small>(mailchimp)</small>" in section and ">mailing-sync-enabled<" not in section
    assert "Now: <strong>on</strong>. On (the default), an unsubscribe" in section  # not "Now: enabled on."
    section = between(shown.text, 'aria-labelledby="setting-pos-default-constituent"', "</section>")
    assert "Point-of-sale orders without a customer" in section
    assert "Now: the constituent&#39;s e-mail <strong>not set</strong>, first name <strong>not set</strong>" in section

    post(admin, "/admin/settings/sync-mode", {"mode": "preview"}, "/admin/settings")
    assert listed(cli, "sync-mode")["mode"] == "preview"
    said = post(admin, "/admin/settings/sync-mode", {"mode": "live"}, "/admin/settings")
    assert "The sync mode is live." in said and listed(cli, "sync-mode")["mode"] == "live"

    said = post(admin, "/admin/settings/donor-matching", {"policy": "auto"}, "/admin/settings")
    assert "Donor matching is auto." in said and listed(cli, "settings", "donor-matching")["policy"] == "auto"
    assert '<option value="auto" selected>auto</option>' in said

    post(admin, "/admin/settings/alert-recipients", {"emails": "ops@example.org, treasurer@example.org"}, "/admin/settings")
    assert listed(cli, "settings", "alert-recipients")["emails"] == ["ops@example.org", "treasurer@example.org"]
    said = post(admin, "/admin/settings/alert-recipients", {"emails": "not-an-address"}, "/admin/settings")
    assert "Not done:" in said and listed(cli, "settings", "alert-recipients")["emails"] == [
        "ops@example.org",
        "treasurer@example.org",
    ]
    post(admin, "/admin/settings/alert-recipients", {"emails": ""}, "/admin/settings")
    assert listed(cli, "settings", "alert-recipients")["emails"] == []

    # the platforms' declared settings, their forms built from each one's body model
    post(admin, "/admin/settings/platform/mailing-sync-enabled", {"f_enabled": "off"}, "/admin/settings")
    assert listed(cli, "settings", "mailing-sync-enabled")["enabled"] is False
    post(admin, "/admin/settings/platform/pos-default-constituent",
         {"f_email": "walkin@example.org", "f_first_name": "", "f_last_name": HOSTILE}, "/admin/settings")  # fmt: skip
    shown = listed(cli, "settings", "pos-default-constituent")
    assert (shown["email"], shown["last_name"]) == ("walkin@example.org", HOSTILE)
    text = admin.get("/admin/settings").text
    assert HOSTILE not in text and "&lt;script&gt;" in text
    assert "Now: <strong>off</strong>. On (the default), an unsubscribe" in text
    done = db.execute(
        "SELECT action, target, outcome FROM staff_actions WHERE via = 'page' AND action LIKE 'set %' ORDER BY id"
    ).fetchall()
    assert ("set donor matching", "auto", "done") in [tuple(r) for r in done]


def test_a_viewer_sees_neither_page_and_a_forged_form_is_refused_and_recorded(admin, page, cli, db):  # noqa: F811
    viewer = page("viewer")
    nav = viewer.get("/admin/").text
    assert 'href="/admin/mappings"' not in nav and 'href="/admin/settings"' not in nav
    assert viewer.get("/admin/mappings").status_code == 403 and viewer.get("/admin/settings").status_code == 403
    token = csrf(nav)  # the viewer's own session's token
    for action, fields in (("/admin/mappings/overrides", {"campaign": "118722", "fund_id": "2398"}),
                           ("/admin/settings/donor-matching", {"policy": "auto"}),
                           ("/admin/mappings/remove", {"kind": "type_default", "target": "donations:default"})):  # fmt: skip
        refused = viewer.post(action, data={"csrf": token, **fields})
        assert refused.status_code == 403 and "Not for your role" in refused.text
    assert (
        listed(cli, "mappings", "overrides") == [] and listed(cli, "settings", "donor-matching")["policy"] == "email"
    )  # the tests' default
    records = db.execute(
        "SELECT who, action, outcome FROM staff_actions WHERE who = 'viewer@example.org' AND action != 'sign in'"
    ).fetchall()
    assert [r[1] for r in records] == ["set campaign override", "set donor matching", "remove mapping"]
    assert all(r[2].startswith("refused (403)") for r in records)
    # and an admin's form without the session's token
    assert admin.post("/admin/settings/sync-mode", data={"mode": "preview"}).status_code == 403
    assert listed(cli, "sync-mode")["mode"] == "live"


def test_the_overview_names_a_campaign_whose_gifts_had_no_mapping_with_its_link(admin, receiver, page, cli, db):  # noqa: F811
    with store.atomic(db):
        settings.cache_put(db, "donations:campaigns", "118722", {"id": 118722, "title": HOSTILE, "type": "general"})
    for n in range(2):
        give(receiver, {**copy.deepcopy(samples.GIVEBUTTER_TRANSACTION), "id": f"Unmapped{n}"})
    [found] = listed(cli, "overview")["unmapped_campaigns"]
    assert (found["campaign_id"], found["campaign"], found["type"], found["gifts"]) == ("118722", HOSTILE, "general", 2)
    shown = admin.get("/admin/").text
    assert HOSTILE not in shown and "&lt;script&gt;alert(1)&lt;/script&gt; <code>118722</code> (general)" in shown
    assert 'href="/admin/mappings?campaign=118722#campaign-overrides">Map this campaign</a>' in shown
    assert "2 gift(s) of &lt;script&gt;" in shown  # and among what needs attention
    form = admin.get("/admin/mappings?campaign=118722").text
    assert '<option value="118722" selected>&lt;script&gt;alert(1)&lt;/script&gt; (118722), general</option>' in form
    assert HOSTILE not in form
    post(admin, "/admin/mappings/overrides", {"campaign": "118722", "fund_id": "2398"})
    assert listed(cli, "overview")["unmapped_campaigns"] == []
    assert "Campaigns with no mapping" not in admin.get("/admin/").text
    # a type default maps a campaign as well
    assert cli("mappings", "remove", "campaign_override", "118722").exit_code == 0
    assert len(listed(cli, "overview")["unmapped_campaigns"]) == 1
    assert cli("mappings", "types", "set", "donations:general", "--fund-id", "2398").exit_code == 0
    assert listed(cli, "overview")["unmapped_campaigns"] == []
    # a viewer sees the campaign, not the link
    assert cli("mappings", "remove", "type_default", "donations:general").exit_code == 0
    viewer = page("viewer").get("/admin/").text
    assert "Campaigns with no mapping" in viewer and "Map this campaign" not in viewer


def between(html: str, start: str, end: str) -> str:
    """The part of a page from ``start`` to the next ``end``."""
    found = html.index(start)
    return html[found : html.index(end, found)]


def test_a_refused_value_is_said_in_words_beside_its_field_with_what_was_typed_kept(admin, cli):
    """A refusal looks like an error (its own style, role=alert), says what is wrong in a person's words beside
    the field it is about, keeps what was typed, and the page comes back at that field (#problem, autofocus)."""
    shown = admin.get("/admin/settings").text
    typed = "ops@example.org, not-an-address"
    token = csrf(shown, "/admin/settings/alert-recipients")
    sent = admin.post("/admin/settings/alert-recipients", data={"csrf": token, "back": "/admin/settings", "emails": typed})
    assert sent.status_code == 303 and sent.headers["location"] == "/admin/settings"
    back = admin.get(sent.headers["location"]).text
    form = between(back, 'action="/admin/settings/alert-recipients"', "</form>")
    assert (
        '<p class="error" id="problem" role="alert">Not done: \u201cnot-an-address\u201d is not an e-mail address.</p>'
        '<label for="emails">' in form
    )
    assert f'value="{typed}" aria-invalid="true" aria-describedby="problem" autofocus>' in form
    assert back.count('id="problem"') == 1 and "emails.1" not in back and 'class="flash' not in back
    assert listed(cli, "settings", "alert-recipients")["emails"] == []  # nothing saved
    again = admin.get("/admin/settings").text  # said once: the form shows what is saved again
    assert 'id="problem"' not in again and f'value="{typed}"' not in again

    # a platform's setting: the missing field named as the form names it, the other fields' values kept, escaped
    fields = {"f_email": "walkin@example.org", "f_first_name": HOSTILE, "f_last_name": ""}
    back = post(admin, "/admin/settings/platform/pos-default-constituent", fields, "/admin/settings")
    form = between(back, 'action="/admin/settings/platform/pos-default-constituent"', "</form>")
    assert '<p class="error" id="problem" role="alert">Not done: Last name is needed.</p><label' in form
    assert 'name="f_first_name" value="&lt;script&gt;alert(1)&lt;/script&gt;"' in form and HOSTILE not in back
    assert 'name="f_email" value="walkin@example.org"' in form and "last_name:" not in back

    # a mapping: an unknown CRM id beside its list, the campaign chosen kept
    back = post(admin, "/admin/mappings/funds", {"fund": "BUILDING", "fund_id": "999999"})
    form = between(back, 'action="/admin/mappings/funds"', "</form>")
    assert 'id="problem" role="alert">Not done: There is no CRM fund #999999' in form
    assert 'name="fund" required maxlength="100" value="BUILDING"' in form
    assert '<select id="fund-crm" name="fund_id" required aria-invalid="true"' in form
    back = post(admin, "/admin/mappings/overrides", {"campaign": "118722", "ack_template_name": ""})
    form = between(back, 'action="/admin/mappings/overrides"', "</form>")
    assert "Not done: Choose at least a CRM fund, campaign, appeal, gift category or acknowledgement." in form
    assert 'name="campaign" required maxlength="100" value="118722"' in form  # no campaign is known: its id
    assert listed(cli, "mappings", "overrides") == []
    # a type default refused: the type chosen is kept (its field is "key", no secret)
    back = post(admin, "/admin/mappings/types", {"key": "donations:event", "fund_id": "999999"})
    form = between(back, 'action="/admin/mappings/types"', "</form>")
    assert "Not done: There is no CRM fund #999999" in form and '<option value="donations:event" selected>' in form
    # a chat webhook refused: what was typed holds its secret, so it is not shown back
    fields = {"f_url": "https://evil.example/sEcReT"}
    back = post(admin, "/admin/settings/platform/plans-chat-webhook", fields, "/admin/settings")
    form = between(back, 'action="/admin/settings/platform/plans-chat-webhook"', "</form>")
    assert "Not done:" in form and "sEcReT" not in back


def test_what_a_person_reads_names_the_campaign_and_the_crm_records_beside_their_ids(admin, cli, db):
    with store.atomic(db):
        settings.cache_put(db, "donations:campaigns", "118722", {"id": 118722, "title": "Annual Appeal", "type": "general"})
        settings.cache_put(db, "donations:campaigns", "118723", {"id": 118723, "title": "Spring Gala", "type": "event"})
    shown = admin.get("/admin/mappings").text
    choice = between(shown, '<select id="override-campaign" name="campaign">', "</select>")
    assert '<option value="118722">Annual Appeal (118722), general</option>' in choice  # chosen by its name
    # chosen by name, or its title typed where it is not listed
    said = post(admin, "/admin/mappings/overrides", {"campaign": "", "campaign_other": "annual appeal", "fund_id": "2398",
                                                     "appeal_id": "2663"})  # fmt: skip
    flash = between(said, '<p class="flash" role="status">', "</p>")
    assert flash.endswith(
        "Campaign Annual Appeal (118722) is mapped: CRM fund General (#2398), CRM appeal Annual Appeal 2026 (#2663)."
        " Its next gifts are coded so."
    )
    table = between(said, 'id="campaign-overrides"', "</table>")
    assert "Annual Appeal <small>(118722)</small>" in table and "fund General <small>#2398</small>" in table
    assert "appeal Annual Appeal 2026 <small>#2663</small>" in table and "fund 2398" not in table
    said = post(admin, "/admin/mappings/funds", {"fund": "BUILDING", "fund_id": "2402"})
    assert "Gifts designated to fund BUILDING go to CRM fund Retail (#2402)." in said
    assert "Retail <small>#2402</small>" in between(said, 'id="fund-overrides"', "</table>")
    said = post(admin, "/admin/mappings/payments", {"role": "donations", "method": "venmo", "payment_type_id": "1509"})
    assert "Payment method donations:venmo: CRM payment type Credit Card (#1509)." in said
    said = post(admin, "/admin/mappings/types", {"key": "donations:general", "gift_category_id": "5937"})
    assert "Type default donations:general: CRM gift category Donation (#5937)." in said
    assert "The campaign override mapping Annual Appeal (118722) is removed." in remove(admin, "campaign_override", "118722")


def test_a_viewer_is_linked_only_to_pages_they_open_and_the_overview_shows_no_shell_command(
    admin,
    receiver,
    page,  # noqa: F811
    db,
):
    from tests.test_admin import seed_failed_job

    seed_failed_job(db)
    give(receiver, {**copy.deepcopy(samples.GIVEBUTTER_TRANSACTION), "id": "Unmapped1"})
    viewer = page("viewer")
    home = viewer.get("/admin/").text
    needs = between(home, 'id="needs"', "</section>")
    assert 'href="/admin/failed">1 failed sync record(s) to retry or resolve</a>' in needs  # a viewer's page
    assert (
        "1 gift(s) of 118722 fell to the default coding: the campaign has no mapping <small>(an admin sees to it)</small>"
        in needs
    )
    for href in re.findall(r'href="(/admin[^"#]*)', home):  # every link the viewer is shown, they may follow
        assert viewer.get(href.replace("&amp;", "&")).status_code == 200, href
    for shown in (home, admin.get("/admin/").text):
        outside = re.sub(r'<details class="operator">.*?</details>', "", shown, flags=re.S)
        assert "synctool mappings" not in shown and "<code>synctool" not in outside and "--fund-id" not in shown
    mine = between(admin.get("/admin/").text, 'id="needs"', "</section>")
    assert 'href="/admin/mappings?campaign=118722#campaign-overrides">1 gift(s) of 118722 fell' in mine


def test_every_setting_of_the_core_and_of_every_platform_has_a_title_and_a_description_in_words():
    from synctool import platforms
    from synctool.ops import settings as setting_ops

    declared = [("core", s) for s in setting_ops.core(lambda: None)]  # type: ignore[arg-type,return-value]
    declared += [(p.name, s) for p in platforms.registered() for s in p.settings]
    assert {s.name for _, s in declared} >= {"mailing-sync-enabled", "pos-default-constituent", "plans-report-changes"}
    for owner, setting in declared:
        assert setting.title and setting.description, f"{owner}'s {setting.name} has no title or description"
        assert setting.name not in setting.title and "_" not in setting.title, setting.title
        assert setting.description.endswith(".") and "`" not in setting.description, setting.description
