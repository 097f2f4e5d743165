"""Who came on the staff page (``/admin/events``) and the admin API (``/api/events``, ``/api/mappings/events``):
the same counts as ``synctool events list``, the mapping form for admins only (role- and CSRF-checked, recorded),
what a donor typed escaped, and each route's role. Orders arrive through the receiver and drain, over the fakes."""

from __future__ import annotations

import html
import json
import re

import pytest
from starlette.testclient import TestClient

from synctool.web.admin_api import routes as api_routes
from synctool.web.receiver import create_app
from tests.flow_helpers import run_drain
from tests.helpers import runtime
from tests.test_invitations import CAMPAIGN, invitations, order, sell
from tests.test_staff_page import csrf, page, team  # noqa: F401  (fixtures)

HOSTILE = "<script>alert(1)</script>"
COLUMNS = ("orders", "tickets", "invitations", "guests", "checked_in", "attended", "refunded")


@pytest.fixture
def api(team, cli, env):  # noqa: F811
    """The admin API, with a bearer token for each role of the team."""
    from tests.test_admin import JWT_SECRET

    env["ADMIN_JWT_SECRET"] = JWT_SECRET
    tokens = {}
    for role in ("viewer", "admin", "super_admin"):
        out = cli("users", "token", f"{role}@example.org").stdout
        tokens[role] = next(line.split()[1] for line in out.splitlines() if line.startswith("token"))
    rt = runtime()
    with TestClient(create_app(rt, routes=api_routes(rt))) as client:

        def call(method: str, path: str, role: str | None = None, **kw):
            headers = {"Authorization": f"Bearer {tokens[role]}"} if role else {}
            return client.request(method, path, headers=headers, **kw)

        yield call


def sold(world, receiver, cli, *, title: str = "Spring Gala", buyer: tuple[str, str, str] | None = None) -> dict:
    """One order of three tickets in an event campaign with no mapping yet, and a CRM event to map it to."""
    world.givebutter.campaigns[CAMPAIGN["id"]] = {**CAMPAIGN, "title": title}
    event = world.crm.add_event("Spring Gala 2026", "2026-11-20")
    assert cli("crm", "refresh").exit_code == 0  # the CRM's events, for the mapping form
    ada = buyer or ("Ada", "Lovelace", "ada@example.org")
    holders = [(*ada, "VIP"), ("Charles", "Babbage", "cb@example.org", "General Admission"),
               ("Mary", "Somerville", "", "General Admission")]  # fmt: skip
    sell(world, receiver, *order("58123", ada, holders))
    run_drain()
    return event


def rows(text: str, first: str = "Campaign") -> list[dict[str, str]]:
    """Each table row of the page that starts with a ``data-label=first`` cell: its cells' text by label."""
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", text, re.S):
        cells = dict(re.findall(r'<td data-label="([^"]+)">(.*?)</td>', row, re.S))
        if first in cells:
            found.append({k: html.unescape(" ".join(re.sub(r"<[^>]+>", " ", v).split())) for k, v in cells.items()})
    return found


def test_an_admin_maps_a_waiting_campaign_and_the_page_api_and_cli_count_alike(coded, receiver, page, api, cli, db):  # noqa: F811
    event = sold(coded, receiver, cli)
    listed = json.loads(cli("events", "list", "--json").stdout)
    assert listed["items"] == [] and [(w["campaign_id"], w["tickets"]) for w in listed["waiting"]] == [("555", 3)]
    admin = page("admin")
    shown = admin.get("/admin/events")
    assert shown.status_code == 200 and 'href="/admin/events" aria-current="page"' in shown.text
    [waiting] = rows(shown.text.split("Waiting for a mapping")[1])
    assert (waiting["Campaign"], waiting["Orders"], waiting["Tickets"]) == ("Spring Gala 555", "1", "3")
    # the form offers the CRM's cached events, and maps the campaign; its order is queued for drain
    assert f'<option value="{event["id"]}">Spring Gala 2026 (2026-11-20) #{event["id"]}</option>' in shown.text
    token = csrf(shown.text, "/admin/events/map")
    done = admin.post("/admin/events/map", data={"csrf": token, "target": "555", "event_id": str(event["id"]),
                                                 "back": "/admin/events"})  # fmt: skip
    assert done.status_code == 303 and done.headers["location"] == "/admin/events"
    after = admin.get("/admin/events").text
    assert f"Campaign Spring Gala is mapped to CRM event Spring Gala 2026 ({event['id']}); 1 order(s) are queued" in after
    assert invitations(coded, event["id"]) == []
    run_drain()
    assert len(invitations(coded, event["id"])) == 3  # the buyer's and two guests'
    for ticket in ("58123A0001", "58123A0002"):  # the buyer and a guest walk in
        coded.givebutter.tickets[ticket]["checked_in_at"] = "2026-11-21T02:00:00+00:00"
    assert cli("events", "checkins", "555").exit_code == 0
    run_drain()
    listed = json.loads(cli("events", "list", "--json").stdout)
    [item] = listed["items"]
    assert [item[name] for name in COLUMNS] == [1, 3, 1, 2, 2, 2, 0] and listed["waiting"] == []
    assert api("GET", "/api/events", "viewer").json() == listed
    shown = admin.get("/admin/events").text
    [row] = rows(shown)
    labels = ("Orders", "Tickets", "Invitations", "Guests", "Checked in", "Attended", "Refunded")
    assert [int(row[label]) for label in labels] == [item[name] for name in COLUMNS]
    assert row["CRM event"] == f"Spring Gala 2026 ({event['id']})" and "No event campaign waits." in shown
    assert row["Waiting"] == str(item["waiting"]) == "0"  # every ticket's invitation written
    # the campaign's page: each order with its buyer, holders and invitation ids, as `events show`
    detail = json.loads(cli("events", "show", "555", "--json").stdout)
    assert api("GET", "/api/events/GALA26", "viewer").json() == detail
    [o] = detail["orders"]
    page_detail = admin.get("/admin/events/555")
    assert page_detail.status_code == 200
    [r] = rows(page_detail.text, "Order")
    assert r["Invitation"] == str(o["invitation_id"]) and "Ada Lovelace <ada@example.org>" in r["Buyer"]
    guests = [h for h in o["holders"] if not h["buyer"]]
    assert len(guests) == 2 and all(f"a guest, invitation {h['invitation_id']}" in r["Tickets"] for h in guests)
    assert r["Tickets"].count("checked in 2026-11-21 02:00 UTC") == 2 and (r["RSVP"], r["Attended"]) == ("yes", o["attended_on"])
    assert "1 order(s), 3 ticket(s), 1 invitation(s), 2 guest(s)" in page_detail.text
    # the action is in the staff actions, with who and the campaign
    [recorded] = json.loads(cli("syncs", "actions", "--who", "admin@example.org", "--json").stdout)["items"][:1]
    assert (recorded["who"], recorded["action"], recorded["target"], recorded["outcome"]) == (
        "admin@example.org", "map event campaign", "555", "done")  # fmt: skip
    # removing the mapping: the campaign waits again
    token = csrf(shown, "/admin/events/remove")
    assert admin.post("/admin/events/remove", data={"csrf": token, "target": "555"}).status_code == 303
    assert "mapped to no CRM event now" in admin.get("/admin/events").text
    assert json.loads(cli("mappings", "events", "--json").stdout) == []


def test_a_viewer_reads_the_events_but_gets_no_form_and_a_403_on_the_action(page, coded, receiver, cli, db):  # noqa: F811
    event = sold(coded, receiver, cli)
    viewer = page("viewer")
    shown = viewer.get("/admin/events")
    assert shown.status_code == 200 and 'href="/admin/events"' in viewer.get("/admin/").text
    assert "/admin/events/map" not in shown.text and "<select" not in shown.text and "an admin can map them" in shown.text
    assert viewer.get("/admin/events/555").status_code == 200
    for action in ("/admin/events/map", "/admin/events/remove"):
        forged = viewer.post(action, data={"csrf": csrf(shown.text), "target": "555", "event_id": str(event["id"])})
        assert forged.status_code == 403 and "needs admin" in forged.text
    assert json.loads(cli("mappings", "events", "--json").stdout) == []
    refused = json.loads(cli("syncs", "actions", "--json").stdout)["items"]
    assert [(a["who"], a["action"], a["target"], a["outcome"][:13]) for a in refused[:2]] == [
        ("viewer@example.org", "remove event mapping", "555", "refused (403)"),
        ("viewer@example.org", "map event campaign", "555", "refused (403)"),
    ]
    # an admin's form without the session's token is refused too
    admin = page("admin")
    assert admin.post("/admin/events/map", data={"target": "555", "event_id": str(event["id"])}).status_code == 403
    assert json.loads(cli("mappings", "events", "--json").stdout) == []


def test_what_a_donor_typed_is_escaped_and_the_forms_are_labelled(page, coded, receiver, cli, db):  # noqa: F811
    event = sold(coded, receiver, cli, title=HOSTILE, buyer=(HOSTILE, "Smith", "x@example.org"))
    admin = page("admin")
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    listed = admin.get("/admin/events")
    assert HOSTILE not in listed.text and escaped in listed.text and "<script" not in listed.text
    for control in re.findall(r'<(?:input|select)(?![^>]*type="hidden")[^>]*>', listed.text):
        found = re.search(r'id="([^"]+)"', control)
        assert found and f'for="{found.group(1)}"' in listed.text, control
    done = admin.post("/admin/events/map", data={"csrf": csrf(listed.text, "/admin/events/map"), "target": "555",
                                                 "event_id": str(event["id"])})  # fmt: skip
    assert done.status_code == 303
    flashed = admin.get("/admin/events").text  # the flash names the campaign's title: escaped too
    assert f"Campaign {escaped} is mapped" in flashed and "<script" not in flashed
    run_drain()
    detail = admin.get("/admin/events/555").text
    assert "<script" not in detail and f"{escaped} Smith &lt;x@example.org&gt;" in detail
    assert admin.get("/admin/events/GALA26").status_code == 200  # by its code too
    assert admin.get("/admin/events/no-such-campaign").status_code == 404


def test_when_no_crm_event_is_cached_the_form_asks_for_a_number(page, coded, receiver, cli, db):  # noqa: F811
    world = coded
    world.givebutter.campaigns[CAMPAIGN["id"]] = CAMPAIGN
    sell(world, receiver, *order("59001", ("Ada", "Lovelace", "ada@example.org"), [("Ada", "Lovelace", "ada@example.org", "GA")]))
    run_drain()
    admin = page("admin")
    shown = admin.get("/admin/events").text
    assert 'name="event_id" type="number"' in shown and "<select" not in shown and "Read the CRM's lists" in shown
    token = csrf(shown, "/admin/events/map")
    admin.post("/admin/events/map", data={"csrf": token, "target": "555", "event_id": "six"})
    assert "Not done: CRM event: \u201csix\u201d is not a CRM id" in admin.get("/admin/events").text
    admin.post("/admin/events/map", data={"csrf": token, "target": "555", "event_id": "4242"})
    assert [m["event_id"] for m in json.loads(cli("mappings", "events", "--json").stdout)] == [4242]


def test_each_events_route_has_its_role(coded, receiver, api, cli, db):
    event = sold(coded, receiver, cli)
    body = {"campaign": "GALA26", "event_id": event["id"]}
    reads = [("GET", "/api/events"), ("GET", "/api/events/555")]
    admin_only = [("GET", "/api/mappings/events"), ("POST", "/api/mappings/events"), ("POST", "/api/events/555/checkins"),
                  ("DELETE", "/api/mappings/events/555")]  # fmt: skip
    for method, path in reads + admin_only:
        kw = {"json": body} if method == "POST" else {}
        assert api(method, path, **kw).status_code == 401, path
        expected = 200 if (method, path) in reads else 403
        assert api(method, path, "viewer", **kw).status_code == expected, path
    assert api("GET", "/api/mappings/events", "admin").json() == []
    mapped = api("POST", "/api/mappings/events", "admin", json=body)
    assert mapped.status_code == 200 and mapped.json()["key"] == "555" and mapped.json()["orders_queued"] == 1
    assert [m["event_id"] for m in api("GET", "/api/mappings/events", "super_admin").json()] == [event["id"]]
    assert api("POST", "/api/mappings/events", "admin", json={**body, "event_id": "six"}).status_code == 422
    assert api("POST", "/api/mappings/events", "admin", json={**body, "event_id": 999999}).status_code == 422  # not cached
    run_drain()
    assert api("POST", "/api/events/555/checkins", "admin").status_code == 200
    assert api("GET", "/api/events", "viewer").json()["items"][0]["invitations"] == 1
    assert api("DELETE", "/api/mappings/events/555", "admin").status_code == 200
    assert api("DELETE", "/api/mappings/events/555", "admin").status_code == 404
    assert api("POST", "/api/events/555/checkins", "admin").status_code == 404  # mapped to no event now
    changes = json.loads(cli("syncs", "actions", "--json").stdout)["items"]
    assert ("POST /api/mappings/events", "GALA26", "done") in [(a["action"], a["target"], a["outcome"]) for a in changes]
    assert ("POST /api/mappings/events", "GALA26", "refused (403): forbidden") in [
        (a["action"], a["target"], a["outcome"]) for a in changes
    ]
