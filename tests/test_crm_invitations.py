"""LGL events and invitations, through synctool's CRM client over the fake: the answers' shape (the examples of
lgl-openapi.json), guests, paging, updates, deletes, refusals, faults, and that every request is documented."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from synctool.crm.client import CrmClient
from synctool.errors import RemoteError, UncertainWrite
from synctool.fakes.crm import FakeCrm, InvitationRefused, create_app
from synctool.fakes.transport import AppTransport
from tests.helpers import validate_against_openapi

SPEC = json.loads((Path(__file__).parent / "data/lgl-openapi.json").read_text())


def example(path: str, method: str, name: str = "Example") -> dict:
    """A documented answer of lgl-openapi.json, without its ``api_version``."""
    answer = SPEC["paths"][path][method]["responses"]["200"]["content"]["application/json"]["examples"][name]["value"]
    return {k: v for k, v in answer.items() if k != "api_version"}


INVITATION_KEYS = list(example("/invitations/{id}", "get"))
EVENT_KEYS = list(example("/events", "get")["items"][0])


@pytest.fixture
def crm() -> FakeCrm:
    return FakeCrm("inv-key", timeout_sleep_s=0.3)


@pytest.fixture
def client(crm):
    client = CrmClient(
        "http://crm.fake.invalid/api/v1",
        "inv-key",
        transport=AppTransport(create_app(crm)),
        timeout_s=0.1,
        retry_base_s=0.01,
        max_retries=1,
    )
    yield client
    client.close()


def larry(crm: FakeCrm) -> int:
    return crm.create_constituent({"first_name": "Larry", "last_name": "Appleton"})["id"]


def refused(call, status: int, words: str) -> RemoteError:
    with pytest.raises(RemoteError) as info:
        call()
    assert info.value.status == status and words in str(info.value), str(info.value)
    return info.value


def test_events_are_listed_paged_in_the_documented_shape(crm, client):
    lunch = crm.add_event("Fancy Lunch (sample)", "2023-09-11")
    crm.add_event("Winter 2020 Fundraising Gala", "2021-07-01", code="")
    board = crm.add_event("Board weekend", "2023-11-03", "2023-11-05", "BW")
    events = client.events()
    assert [list(e) for e in events] == [EVENT_KEYS] * 3
    assert events[0] == {**dict.fromkeys(EVENT_KEYS), "id": lunch["id"], "name": "Fancy Lunch (sample)", "date": "2023-09-11"}
    assert events[2]["end_date"] == "2023-11-05" and events[2]["code"] == "BW" and crm.events[board["id"]] == events[2]
    page = client.request("GET", "/events", params={"limit": 2, "offset": 0})
    assert page["item_type"] == "event" and page["total_items"] == 3 and page["items_count"] == 2 and page["next_item"] == 2
    assert [len(p) for p in client.iter_pages("/events", page_size=2)] == [2, 1]
    with pytest.raises(ValueError):
        crm.add_event("Bad", "11/03/2023")


def test_constituent_invitation_and_its_guest_answer_as_the_examples(crm, client):
    cid = larry(crm)
    gala = crm.add_event("Winter 2020 Fundraising Gala", "2021-07-01")["id"]
    made = client.create_invitation(gala, {"constituent_id": cid, "notes": "Event note"})
    assert list(made) == ["api_version", *INVITATION_KEYS]
    documented = example("/events/{event_id}/invitations", "post", "Example_Create_invitation_for_an_event")
    for key in ("id", "event_id", "constituent_id", "created_at", "updated_at"):
        documented.pop(key)
    assert {k: made[k] for k in documented} == {**documented, "name": "Event: Winter 2020 Fundraising Gala"}
    assert (
        made["constituent_id"] == cid
        and made["event_id"] == gala
        and {"api_version": "1.0", **crm.invitations[made["id"]]} == made
    )

    # the documented guest body: no constituent_id (the schema requires one), ids as strings
    guest = client.create_invitation(
        gala,
        {"parent_invitation_id": str(made["id"]), "guest_first_name": "Max", "guest_last_name": "Million", "is_a_guest": True},
    )
    documented = example("/events/{event_id}/invitations", "post", "Example_Create_an_additional_guest_for_an_invitation")
    for key in ("id", "parent_invitation_id", "event_id", "name", "created_at", "updated_at"):
        documented.pop(key)
    assert {k: guest[k] for k in documented} == documented  # constituent_id null, "Max Million", "Larry Appleton"
    assert guest["parent_invitation_id"] == made["id"] and guest["event_id"] == gala
    assert client.get_invitation(made["id"])["additional_guests"] == 1

    # a guest body that satisfies the schema (constituent_id given) and one through the constituent's path
    ada = crm.create_constituent({"first_name": "Ada", "last_name": "Lovelace"})["id"]
    named = client.create_invitation(gala, {"constituent_id": ada, "parent_invitation_id": made["id"], "is_a_guest": True})
    assert named["constituent_id"] == ada and named["guest_name"] == "Ada Lovelace" and named["is_a_guest"] is True
    lunch = crm.add_event("Fancy Lunch (sample)", "2023-09-11")["id"]
    own = client.request("POST", f"/constituents/{ada}/invitations", json={"event_id": lunch, "rsvp": 1})
    assert own["constituent_id"] == ada and own["event_id"] == lunch and own["status"] == "yes"
    assert own["name"] == "Event: Fancy Lunch (sample)" and own["guest_name"] == "Ada Lovelace"
    assert client.get_invitation(made["id"])["additional_guests"] == 2
    assert crm.stats()["invitations"] == 4 and crm.stats()["events"] == 2


def test_lists_by_constituent_and_by_event_page(crm, client):
    gala = crm.add_event("Gala", "2026-05-01")["id"]
    other = crm.add_event("Picnic", "2026-06-01")["id"]
    people = [crm.create_constituent({"first_name": f"P{n}", "last_name": "Guest"})["id"] for n in range(4)]
    first = crm.invite(gala, people[0])
    crm.invite(gala, None, parent_invitation_id=first["id"], is_a_guest=True, guest_first_name="Plus", guest_last_name="One")
    picnic = crm.invite(other, people[0], rsvp=3)
    for cid in people[1:]:
        crm.invite(gala, cid)
    mine = client.constituent_invitations(people[0])
    assert [(i["event_id"], i["guest_name"]) for i in mine] == [(gala, "P0 Guest"), (gala, "Plus One"), (other, "P0 Guest")]
    assert mine[2]["id"] == picnic["id"] and mine[2]["status"] == "maybe"
    assert client.constituent_invitations(people[1])[0]["additional_guests"] == 0

    page = client.request("GET", f"/events/{gala}/invitations", params={"limit": 2, "offset": 2})
    assert page["item_type"] == "invitation" and page["total_items"] == 5 and page["offset"] == 2 and page["next_item"] == 4
    assert page["next_link"].endswith(f"/events/{gala}/invitations?limit=2&offset=4")
    pages = list(client.iter_pages(f"/events/{gala}/invitations", page_size=2))
    assert [len(p) for p in pages] == [2, 2, 1]
    assert sum(pages, []) == [crm.invitations[i] for i in sorted(crm.invitations) if crm.invitations[i]["event_id"] == gala]
    last = client.request("GET", f"/constituents/{people[0]}/invitations", params={"limit": 2, "offset": 2})
    assert last["items_count"] == 1 and "next_item" not in last
    refused(lambda: client.request("GET", "/events/1/invitations"), 404, "Not Found")
    refused(lambda: client.constituent_invitations(1), 404, "Not Found")


def test_patch_rsvp_attended_and_attendances(crm, client):
    cid = larry(crm)
    board = crm.add_event("Board weekend", "2023-11-03", "2023-11-05")["id"]
    inv = crm.invite(board, cid)
    guest = crm.invite(board, None, parent_invitation_id=inv["id"], is_a_guest=True, guest_first_name="Max")
    assert inv["rsvp"] == 0 and inv["status"] == "unknown" and guest["guest_name"] == "Max"

    yes = client.update_invitation(inv["id"], {"constituent_id": cid, "rsvp": 1})
    assert yes["rsvp"] == 1 and yes["status"] == "yes" and yes["attendees"] == 0
    # the documented PATCH example (rsvp as a string), with the constituent_id the schema requires
    body = {
        "constituent_id": cid,
        "notes": "Event note",
        "rsvp": "2",
        "attended": 1,
        "attendances": [{"date": "2023-07-01", "notes": "attended"}, {"date": "2023-08-01", "notes": "attended"}],
    }
    done = client.update_invitation(inv["id"], body)
    documented = example("/invitations/{id}", "patch")
    assert {k: done[k] for k in ("rsvp", "attended", "status", "attendees", "notes")} == {
        k: documented[k] for k in ("rsvp", "attended", "status", "attendees", "notes")
    }
    assert [(a["date"], a["notes"]) for a in done["attendances"]] == [("2023-07-01", "attended"), ("2023-08-01", "attended")]
    assert all(isinstance(a["id"], int) for a in done["attendances"]) and list(done["attendances"][0]) == ["id", "date", "notes"]
    more = client.update_invitation(inv["id"], {"constituent_id": cid, "attendances": [{"date": "2023-09-01"}]})
    assert len(more["attendances"]) == 3 and more["attendances"][2]["notes"] is None  # appended (unconfirmed)

    # a guest: its name parts, and the party's attendees on the parent
    came = client.update_invitation(guest["id"], {"constituent_id": cid, "guest_last_name": "Million", "attended": 1})
    assert came["guest_name"] == "Max Million" and came["status"] == "attended"
    assert client.get_invitation(inv["id"])["attendees"] == 2
    assert came["parent_invitation_guest_name"] == "Larry Appleton"


def test_refusals(crm, client):
    cid = larry(crm)
    gala = crm.add_event("Gala", "2026-05-01")["id"]
    inv = client.create_invitation(gala, {"constituent_id": cid})
    refused(lambda: client.update_invitation(inv["id"], {"rsvp": 1}), 422, "constituent_id can't be blank")
    assert crm.invitations[inv["id"]]["rsvp"] == 0
    refused(lambda: client.create_invitation(999, {"constituent_id": cid}), 404, "Not Found")
    refused(lambda: client.create_invitation(gala, {"constituent_id": 4242}), 422, "Constituent not found")
    refused(lambda: client.create_invitation(gala, {"notes": "nobody"}), 422, "constituent_id can't be blank")
    guest = {"parent_invitation_id": 4242, "is_a_guest": True, "guest_first_name": "Max"}
    refused(lambda: client.create_invitation(gala, guest), 422, "Parent invitation not found")
    refused(lambda: client.create_invitation(gala, {"is_a_guest": True, "guest_first_name": "Max"}), 422, "can't be blank")
    for bad in ({"rsvp": "yes"}, {"rsvp": 9}, {"rsvp": True}, {"notes": 5}, {"is_a_guest": "true"}, {"attended": -1}):
        refused(lambda bad=bad: client.create_invitation(gala, {"constituent_id": cid, **bad}), 422, "Validation Failed")
    refused(lambda: client.create_invitation(gala, {"constituent_id": cid, "event_id": gala}), 422, "unknown invitation field")
    refused(lambda: client.create_invitation(gala, {"constituent_id": "12a"}), 422, "whole number")
    refused(lambda: client.create_invitation(gala, {"constituent_id": cid, "attendances": [{"notes": "x"}]}), 422, "date")
    refused(lambda: client.request("POST", f"/constituents/{cid}/invitations", json={"rsvp": 1}), 422, "event_id can't be blank")
    refused(lambda: client.request("POST", f"/constituents/{cid}/invitations", json={"event_id": 999}), 422, "Event not found")
    refused(lambda: client.update_invitation(inv["id"], {"constituent_id": 4242}), 422, "Constituent not found")
    refused(lambda: client.update_invitation(inv["id"], {"constituent_id": cid, "is_a_guest": True}), 422, "cannot be changed")
    refused(lambda: client.get_invitation(4242), 404, "Not Found")
    refused(lambda: client.update_invitation(4242, {"constituent_id": cid}), 404, "Not Found")
    with pytest.raises(InvitationRefused):
        crm.invite(gala, 4242)
    assert len(crm.invitations) == 1


def test_delete_keeps_a_deleted_parents_guests(crm, client):
    cid = larry(crm)
    gala = crm.add_event("Gala", "2026-05-01")["id"]
    parent = crm.invite(gala, cid)
    guests = [
        crm.invite(gala, None, parent_invitation_id=parent["id"], is_a_guest=True, guest_first_name=n) for n in ("Max", "Sam")
    ]
    assert client.delete_invitation(guests[1]["id"]) == {"api_version": "1.0", "result": "success"}
    assert client.get_invitation(parent["id"])["additional_guests"] == 1
    refused(lambda: client.delete_invitation(guests[1]["id"]), 404, "Not Found")
    client.delete_invitation(parent["id"])
    kept = client.get_invitation(guests[0]["id"])
    assert kept["parent_invitation_id"] == parent["id"] and kept["parent_invitation_guest_name"] is None
    assert set(crm.invitations) == {guests[0]["id"]} and client.constituent_invitations(cid) == []
    assert [i["id"] for i in client.iter_items(f"/events/{gala}/invitations")] == [guests[0]["id"]]


def test_post_that_times_out_after_commit_leaves_one_invitation(crm, client):
    cid = larry(crm)
    gala = crm.add_event("Gala", "2026-05-01")["id"]
    crm.faults.append({"mode": "commit_timeout", "count": 1, "method": "POST", "path": "/invitations"})
    with pytest.raises(UncertainWrite):
        client.create_invitation(gala, {"constituent_id": cid})
    assert len(crm.invitations) == 1 and crm.faults[0]["count"] == 0
    assert [(r["method"], r["path"]) for r in crm.requests] == [("POST", f"/api/v1/events/{gala}/invitations")]
    assert crm.requests[0]["body"] == {"constituent_id": cid}
    crm.faults.append({"mode": "500", "count": 1, "method": "GET", "path": "/invitations/"})
    [made] = crm.invitations.values()
    assert client.get_invitation(made["id"])["id"] == made["id"]  # retried past the 500
    assert [r["status"] for r in crm.requests[1:]] == [500, 200]


def test_state_reset_and_requests_match_the_lgl_openapi(crm, client):
    cid = larry(crm)
    gala = crm.add_event("Gala", "2026-05-01")["id"]
    client.events()
    inv = client.create_invitation(gala, {"constituent_id": cid, "notes": "n", "rsvp": 1, "assigned_to": 7})
    guest = client.create_invitation(
        gala, {"parent_invitation_id": inv["id"], "is_a_guest": True, "guest_first_name": "Max", "guest_last_name": "M"}
    )
    client.request("POST", f"/constituents/{cid}/invitations", json={"event_id": gala, "attendee_names": "L. A."})
    client.constituent_invitations(cid)
    list(client.iter_items(f"/events/{gala}/invitations", page_size=2))
    client.get_invitation(inv["id"])
    client.update_invitation(inv["id"], {"constituent_id": cid, "attended": 1, "attendances": [{"date": "2026-05-01"}]})
    client.delete_invitation(guest["id"])
    assert all(r["status"] == 200 for r in crm.requests)
    validate_against_openapi(crm.requests)

    with httpx.Client(transport=AppTransport(create_app(crm)), base_url="http://crm.fake.invalid") as raw:
        state = raw.get("/_fake/state").json()
        assert [e["id"] for e in state["events"]] == [gala] and len(state["invitations"]) == 2
        assert state["stats"]["events"] == 1 and state["stats"]["invitations"] == 2
        raw.post("/_fake/reset")
    assert crm.events == {} and crm.invitations == {} and crm.guest_names == {}
