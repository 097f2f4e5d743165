"""Events (``/admin/events``, ``/admin/events/{campaign}``): who came, as `synctool events list|show` read it;
mapping an event campaign to a CRM event and removing the mapping, as `synctool mappings events set|remove` do."""

from __future__ import annotations

from typing import Any, TypedDict

from synctool.ops import crm
from synctool.ops import events as event_ops
from synctool.web.pages import forms
from synctool.web.pages.base import ActionResult, ViewResult
from synctool.web.pages.choices import campaign_key, check_known
from synctool.web.request import StaffRequest

#: an invitation's RSVP as LGL numbers it, in words (none yet, or another number: "not said")
RSVP = {1: "yes", 2: "no"}


class EventsPage(TypedDict):
    events: event_ops.EventListing
    crm_events: list[dict[str, Any]]


class EventDetailPage(TypedDict):
    detail: event_ops.EventDetail
    row: dict[str, object] | None
    rsvp: dict[int, str]


def events(request: StaffRequest) -> ViewResult:
    """Who came: as `synctool events list`, with the cached CRM events for an admin's mapping form."""
    listed = event_ops.list_events(request.conn)
    crm_events = crm.reference(request.conn, "events")["items"]
    return ViewResult(EventsPage(events=listed, crm_events=crm_events))


def event_detail(request: StaffRequest) -> ViewResult:
    """One event campaign's orders, as `synctool events show CAMPAIGN`; its counts and title as the list shows them."""
    detail = event_ops.show_event(request.conn, request.path["campaign"])
    listed = event_ops.list_events(request.conn)
    row = next((r for r in [*listed["items"], *listed["waiting"]] if r["campaign_id"] == detail["campaign_id"]), None)
    return ViewResult(EventDetailPage(detail=detail, row=row, rsvp=RSVP))


def map_event(request: StaffRequest) -> ActionResult:
    """A waiting event campaign -> a CRM event (`synctool mappings events set`); its orders are queued. The
    campaign is the form's ``target`` (the events page's row, the mappings page's list) or the id or title
    typed in ``campaign_other``."""
    campaign = campaign_key(request, forms.field(request, "campaign_other") or forms.field(request, "target"), "target")
    given = {"campaign": campaign, "event_id": forms.field(request, "event_id")}
    body = forms.read(event_ops.EventMappingBody, given, {"event_id": "CRM event", "campaign": "the event campaign"})
    check_known(request.conn, "event_id", body.event_id)
    mapping = event_ops.set_mapping(request.conn, body)
    event = f"{mapping['event_name']} ({mapping['event_id']})" if mapping.get("event_name") else str(mapping["event_id"])
    message = f"Campaign {mapping.get('campaign') or mapping['key']} is mapped to CRM event {event}"
    return ActionResult(message + f"; {mapping['orders_queued']} order(s) are queued for the next drain.", mapping["key"])


def unmap_event(request: StaffRequest) -> ActionResult:
    """`synctool mappings events remove`: invitations written stay in the CRM; new orders wait."""
    removed = event_ops.remove_mapping(request.conn, (request.form.get("target") or "").strip())["removed"]
    return ActionResult(f"Campaign {removed} is mapped to no CRM event now: its new orders wait.", removed)
