"""A local stand-in for Little Green Light's REST API v1, for `synctool demo` and the tests.

It keeps state in memory and speaks what ``shared/reference/lgl.md`` records: the same paths (with or
without ``.json``), the list envelope (``limit``/``offset``/``next_item``/``total_items``), ``q[]=field=value``
search clauses (a bare or unknown term is a 400 ``Parameter Error``; ``updated_from``/``updated_to``
filter on ``updated_at``, which every change to a constituent or its nested rows moves; ``sort`` with a
trailing ``!`` to reverse; ``expand`` for the nested arrays), Bearer authentication with LGL's two
401 bodies, 422 "External Gift ID already exists", and ``{api_version, result}`` on delete. It enforces
the rate limit (a 429 past N requests in the window, so a breach is visible), records every request,
and can be told to fail the next requests (``POST /_fake/faults``) with a 500, a timeout, a commit
followed by a timeout, or a commit that lands well after the client gave up (``late_commit``).

Events and their invitations follow ``lgl-openapi.json`` (``/events``, ``/events/{event_id}/invitations``,
``/constituents/{constituent_id}/invitations``, ``/invitations/{id}``). The documented API version cannot create
an event, so tests seed them with ``FakeCrm.add_event``; ``FakeCrm.invite`` makes an invitation as staff would.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import threading
import time
from collections import deque
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

API = {"api_version": "1.0"}

REFERENCE = {
    "funds": [
        {"id": 2398, "name": "General", "code": "GEN"},
        {"id": 2399, "name": "Events", "code": "EVT"},
        {"id": 2400, "name": "Memberships", "code": "MEM"},
        {"id": 2401, "name": "Language Classes", "code": "LANG"},
        {"id": 2402, "name": "Retail", "code": "RET"},
    ],
    "campaigns": [
        {"id": 822, "name": "Annual Giving"},
        {"id": 823, "name": "Spring Gala"},
        {"id": 824, "name": "Membership Drive"},
    ],
    "appeals": [{"id": 2663, "name": "Annual Appeal 2026"}],
    # events are not reference data here: ``FakeCrm.events``, seeded with ``FakeCrm.add_event``
    "gift_types": [
        {"id": 1, "name": "Gift", "ordinal": 1},
        {"id": 5, "name": "Other Income", "ordinal": 2},
        {"id": 7, "name": "Pledge", "ordinal": 3},
        {"id": 8, "name": "In Kind", "ordinal": 4},
        {"id": 9, "name": "Soft Credit", "ordinal": 5},
    ],
    "gift_categories": [
        {"id": 5937, "display_name": "Donation", "gift_type_id": 1, "gift_type_name": "Gift"},
        {"id": 5938, "display_name": "Ticket", "gift_type_id": 5, "gift_type_name": "Other Income"},
        {"id": 5939, "display_name": "Membership Dues", "gift_type_id": 5, "gift_type_name": "Other Income"},
        {"id": 5940, "display_name": "Recurring", "gift_type_id": 1, "gift_type_name": "Gift"},
    ],
    "payment_types": [
        {"id": 1507, "name": "Cash", "key": "cash"},
        {"id": 1508, "name": "Check", "key": "check"},
        {"id": 1509, "name": "Credit Card", "key": "credit"},
        {"id": 1510, "name": "Other", "key": "other"},
    ],
    "membership_levels": [
        {"id": 41, "name": "Individual", "ordinal": 1},
        {"id": 42, "name": "Family", "ordinal": 2},
        {"id": 43, "name": "Student", "ordinal": 3},
    ],
    "relationship_types": [
        {"id": 3, "name": "Spouse", "short_code": "spouse", "type_code": "family", "reciprocal_id": 3},
        {"id": 4, "name": "Parent", "short_code": "parent", "type_code": "family", "reciprocal_id": 5},
        {"id": 5, "name": "Child", "short_code": "child", "type_code": "family", "reciprocal_id": 4},
        {"id": 9, "name": "Family", "short_code": "family", "type_code": "family", "reciprocal_id": 9},
    ],
    # lgl-openapi.json's example for GET /mailing_templates
    "mailing_templates": [
        {
            "id": 174,
            "name": "Donation Acknowledgment",
            "code": "donation_ack",
            "mailing_type_id": 1907,
            "mailing_type_name": "Acknowledgment",
            "template_type": "letter",
        },
        {
            "id": 175,
            "name": "Pledge Acknowledgment",
            "code": "pledge_ack",
            "mailing_type_id": 1907,
            "mailing_type_name": "Acknowledgment",
            "template_type": "letter",
        },
    ],  # fmt: skip
    "groups": [
        {"id": 701, "name": "Full Scholarship", "key": "scholarship_full"},
        {"id": 702, "name": "Partial Scholarship", "key": "scholarship_partial"},
        {"id": 703, "name": "Board Member", "key": "board"},
    ],
}
TAG_CATEGORY: dict[str, Any] = {
    "id": 1201,
    "item_type": "Constituent",
    "name": "Communication Tags",
    "key": "tags",
    "facet_type": "list",
    "removable": True,
    "editable": True,
    "keywords": [
        {"id": 12221, "category_id": 1201, "name": "Newsletter", "short_code": "newsletter"},
        {"id": 12222, "category_id": 1201, "name": "Unsubscribed", "short_code": "unsubscribed"},
        {"id": 12223, "category_id": 1201, "name": "Email Bounced", "short_code": "email_bounced"},
        {"id": 12224, "category_id": 1201, "name": "Do not call", "short_code": "do_not_call"},
    ],
}

#: gift custom fields are categories with ``item_type: "Gift"``; their keywords are the allowed values
GIFT_FIELDS: list[dict[str, Any]] = [
    {
        "id": 1056,
        "item_type": "Gift",
        "name": "Referral Source",
        "key": "referral_source",
        "facet_type": "list",
        "ordinal": 100,
        "removable": True,
        "editable": True,
        "keywords": [
            {"id": 12252, "category_id": 1056, "name": "A friend", "short_code": None},
            {"id": 12253, "category_id": 1056, "name": "Social media", "short_code": None},
            {"id": 12254, "category_id": 1056, "name": "Newsletter", "short_code": None},
        ],
    },
    {
        "id": 1057,
        "item_type": "Gift",
        "name": "Fee Covered",
        "key": "fee_covered",
        "facet_type": "single",
        "ordinal": 101,
        "removable": True,
        "editable": True,
        "keywords": [],
    },
]

CONSTITUENT_TERMS = {
    "name",
    "eaddr",
    "external_id",
    "keyword",
    "groups",
    "phone_number",
    "street",
    "city",
    "state",
    "postal_code",
    "country",
    "constituent_type",
    "updated_from",
    "updated_to",
    "membership_status",
    "membership_level",
    "membership_end_date_from",
    "membership_end_date_to",
    "lists",
    "class",
    "custom_attr",
    "custom_attr_int",
    "custom_attr_from",
    "custom_attr_to",
}
GIFT_TERMS = {
    "date_from",
    "date_to",
    "created_from",
    "created_to",
    "updated_from",
    "updated_to",
    "gift_types",
    "gift_amount",
    "payment_types",
    "campaigns",
    "funds",
    "appeals",
    "events",
    "categories",
    "appeal_types",
    "event_types",
    "gift_ids",
    "external_gift_ids",
}
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
SORTS = {
    "name": lambda c: (str(c.get("sort_name") or "").lower(),),
    "external_id": lambda c: (str(c.get("external_constituent_id") or ""),),
    "lgl_id": lambda c: (c["id"],),
    "date_created": lambda c: (c["created_at"],),
    "date_updated": lambda c: (c["updated_at"],),
    "membership_level": lambda c: ("",),
    "membership_end_date_from": lambda c: ("",),
}
CONTACT_KINDS = {"email_addresses": "address", "phone_numbers": "number", "street_addresses": "street", "web_addresses": "url"}


def now_stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class FakeCrm:
    """State, counters and fault switches behind the app; tests may read it directly in-process."""

    def __init__(self, api_key: str = "test-crm-key", *, limit: int = 300, window_s: float = 300.0, timeout_sleep_s: float = 3.0):
        self.api_key = api_key
        self.limit = limit
        self.window_s = window_s
        self.timeout_sleep_s = timeout_sleep_s
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.ids = itertools.count(959480)
        self.constituents: dict[int, dict] = {}
        self.contacts: dict[str, dict[int, dict]] = {k: {} for k in CONTACT_KINDS}
        self.gifts: dict[int, dict] = {}
        #: event id -> ``{id, name, description, date, end_date, financial_goal, projected_amount, code}``
        self.events: dict[int, dict] = {}
        #: invitation id -> the invitation as ``GET /invitations/{id}`` answers it (its derived fields kept current)
        self.invitations: dict[int, dict] = {}
        #: a guest invitation's ``(guest_first_name, guest_last_name)``, which LGL's answers only show joined
        self.guest_names: dict[int, tuple[str, str]] = {}
        self.memberships: dict[int, dict] = {}
        self.relationships: dict[int, dict] = {}
        self.group_memberships: dict[int, dict] = {}
        self.keywords: dict[int, set[int]] = {}
        self.gift_fields = copy.deepcopy(GIFT_FIELDS)
        self.requests: list[dict] = []
        self.recent: deque[float] = deque()
        self.rejected_429 = 0
        self.faults: list[dict] = []
        #: how a request about a deleted constituent is answered: 404, or 422/400 naming the constituent
        self.gone_status = 404

    # -- helpers ------------------------------------------------------------------------------

    def new_id(self) -> int:
        return next(self.ids)

    def stats(self) -> dict:
        times = [r["at"] for r in self.requests if r["status"] != 429]
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        worst = 0
        start = 0
        for end in range(len(times)):  # the most requests seen in any window
            while times[end] - times[start] >= self.window_s:
                start += 1
            worst = max(worst, end - start + 1)
        return {
            "requests": len(self.requests),
            "served": len(times),
            "rejected_429": self.rejected_429,
            "max_in_any_window": worst,
            "min_gap_s": min(gaps) if gaps else None,
            "constituents": len(self.constituents),
            "gifts": len(self.gifts),
            "events": len(self.events),
            "invitations": len(self.invitations),
        }

    def create_constituent(self, body: dict) -> dict:
        """What ``POST /constituents`` stores (tests and benches seed the CRM with it too)."""
        cid = self.new_id()
        now = now_stamp()
        record = {"id": cid, "created_at": now, "updated_at": now, "date_added": now[:10], "sort_name": None}
        for key, value in body.items():
            if key not in CONTACT_KINDS and key not in ("categories", "groups", "relationships", "custom_attrs"):
                record[key] = value
        record["sort_name"] = f"{body.get('last_name') or ''}, {body.get('first_name') or ''}".strip(", ")
        record.setdefault("addressee", f"{body.get('first_name') or ''} {body.get('last_name') or ''}".strip())
        record.setdefault("salutation", body.get("first_name"))
        self.constituents[cid] = record
        for kind in CONTACT_KINDS:
            for n, row in enumerate(body.get(kind) or []):
                self.add_contact_row(cid, kind, row, preferred=n == 0)
        return record

    def add_contact_row(self, cid: int, kind: str, row: dict, preferred: bool | None = None) -> dict:
        rid = self.new_id()
        existing_pref = any(r["is_preferred"] for r in self.contacts[kind].values() if r["item_id"] == cid)
        record = {
            "id": rid,
            "item_id": cid,
            "item_type": "Constituent",
            **row,
            "is_preferred": bool(row.get("is_preferred", preferred)) and not existing_pref,
            "not_current": bool(row.get("not_current", False)),
        }
        if kind == "phone_numbers":
            record["normalized_number"] = "".join(ch for ch in str(row.get("number", "")) if ch.isdigit())
        self.contacts[kind][rid] = record
        self.touch(cid)
        return record

    def touch(self, cid: Any) -> None:
        """LGL moves a constituent's ``updated_at`` on every change to it or its nested records."""
        c = self.constituents.get(int(cid)) if cid is not None else None
        if c is not None:
            c["updated_at"] = now_stamp()

    def constituent_view(self, c: dict, expand: set[str]) -> dict:
        view = {k: v for k, v in c.items() if not k.startswith("_")}
        cid = c["id"]
        for kind in CONTACT_KINDS:
            if kind in expand or "all" in expand:
                view[kind] = [r for r in self.contacts[kind].values() if r["item_id"] == cid]
        if "categories" in expand or "all" in expand:
            kws = self.keywords.get(cid, set())
            view["categories"] = [dict(TAG_CATEGORY, keywords=[k for k in TAG_CATEGORY["keywords"] if k["id"] in kws])]
        if "memberships" in expand or "all" in expand:
            view["memberships"] = [m for m in self.memberships.values() if m["constituent_id"] == cid]
        if "groups" in expand or "all" in expand:
            view["groups"] = [g for g in self.group_memberships.values() if g["constituent_id"] == cid]
        return view

    # -- events and invitations ---------------------------------------------------------------------

    def add_event(
        self,
        name: str,
        date: str,
        end_date: str | None = None,
        code: str | None = None,
        *,
        description: str | None = None,
        financial_goal: float | None = None,
        projected_amount: float | None = None,
    ) -> dict:
        """Seed an event as staff make one in LGL (the documented API has no ``POST /events``)."""
        for label, value in (("date", date), ("end_date", end_date)):
            if value is not None and not (isinstance(value, str) and DATE.match(value)):
                raise ValueError(f"{label} must be a date (YYYY-MM-DD), got {value!r}")
        eid = self.new_id()
        event: dict[str, Any] = {
            "id": eid,
            "name": name,
            "description": description,
            "date": date,
            "end_date": end_date,
            "financial_goal": financial_goal,
            "projected_amount": projected_amount,
            "code": code,
        }
        self.events[eid] = event
        return event

    def invite(self, event_id: int, constituent_id: int | None, rsvp: int = 0, **fields: Any) -> dict:
        """An invitation made in LGL itself (no request is logged): the constituent's, or with
        ``parent_invitation_id``/``is_a_guest``/``guest_first_name``/``guest_last_name`` a guest's. Takes the
        fields of ``Invitations_Post_Invitations_CreateBody``; raises ``InvitationRefused`` where LGL would."""
        if event_id not in self.events:
            raise InvitationRefused(404, f"Event {event_id} not found")
        body = {**({"constituent_id": constituent_id} if constituent_id is not None else {}), "rsvp": rsvp, **fields}
        return self.create_invitation(event_id, body, INVITATION_FIELDS)

    def constituent_name(self, cid: int | None) -> str | None:
        c = self.constituents.get(cid) if cid else None
        if c is None:
            return None
        person = " ".join(str(c.get(k)) for k in ("first_name", "last_name") if c.get(k))
        return person or c.get("org_name") or c.get("addressee")

    def create_invitation(self, event_id: int, body: Any, allowed: frozenset[str]) -> dict:
        """What ``POST /events/{event_id}/invitations`` (``allowed`` = ``INVITATION_FIELDS``) and
        ``POST /constituents/{cid}/invitations`` store; raises ``InvitationRefused``."""
        fields = clean_invitation_body(body, allowed)
        if event_id not in self.events:
            raise InvitationRefused(422, "Event not found")
        parent_id = fields.get("parent_invitation_id") or 0
        guest = fields.get("is_a_guest") is True or bool(parent_id)
        if fields.get("is_a_guest") is False and parent_id:
            raise InvitationRefused(422, "parent_invitation_id is only for an additional guest (is_a_guest)")
        if guest:
            self.check_parent(parent_id, event_id, None)
        cid = fields.get("constituent_id") or None
        if cid is not None and cid not in self.constituents:
            raise InvitationRefused(422, "Constituent not found")
        # Invitations_Post_Invitations_CreateBody requires constituent_id, yet its own "additional guest" example
        # body leaves it out and the matching answer shows ``"constituent_id": null``. The fake follows the
        # examples: a guest (is_a_guest with parent_invitation_id) may come with or without constituent_id; without
        # one it is stored as null, as the example answers, and the guest is listed under its parent's constituent.
        if cid is None and not guest:
            raise InvitationRefused(422, "constituent_id can't be blank")
        first, last = fields.get("guest_first_name") or "", fields.get("guest_last_name") or ""
        if guest and not (first or last or cid):
            raise InvitationRefused(422, "guest_first_name can't be blank")
        now = now_stamp()
        iid = self.new_id()
        record = {
            "id": iid,
            "constituent_id": cid,
            "guest_name": None,
            "is_a_guest": guest,
            "parent_invitation_id": parent_id if guest else 0,
            "parent_invitation_guest_name": None,
            "event_id": event_id,
            "name": None,
            "notes": fields.get("notes"),
            "rsvp": fields.get("rsvp", 0),
            "attended": fields.get("attended", 0),
            "raised": 0.0,
            "status": "unknown",
            "donated": False,
            "assigned_to": fields.get("assigned_to"),
            "additional_guests": 0,
            "attendees": 0,
            "attendee_names": fields.get("attendee_names"),
            "attend_count": 0,
            "attendances": [self.attendance(a) for a in fields.get("attendances") or []],
            "custom_fields": resolve_custom_fields(fields.get("custom_fields") or [], []),
            "custom_attrs": [],  # no Invitation attributes (GET /attributes) are defined in the fake: dropped
            "created_at": now,
            "updated_at": now,
        }
        if guest:
            self.guest_names[iid] = (first, last)
        self.invitations[iid] = record
        self.refresh_invitations(record)
        return self.invitations[iid]

    def attendance(self, row: dict) -> dict:
        return {"id": self.new_id(), "date": row["date"], "notes": row.get("notes")}

    def check_parent(self, parent_id: int, event_id: int, child_id: int | None) -> dict:
        if not parent_id:
            raise InvitationRefused(422, "parent_invitation_id can't be blank for an additional guest")
        parent = self.invitations.get(parent_id)
        if parent is None or parent_id == child_id:
            raise InvitationRefused(422, "Parent invitation not found")
        if parent["is_a_guest"]:
            raise InvitationRefused(422, "an additional guest's invitation cannot have guests of its own")
        if parent["event_id"] != event_id:
            raise InvitationRefused(422, "the parent invitation is for another event")
        return parent

    def update_invitation(self, iid: int, body: Any) -> dict:
        """What ``PATCH /invitations/{id}`` does (``Invitations_Patch_Id_UpdateBody``); raises ``InvitationRefused``."""
        record = self.invitations[iid]
        fields = clean_invitation_body(body, INVITATION_FIELDS)
        # The schema requires constituent_id (its PATCH example omits it, and sends rsvp as the string "2"): the fake
        # refuses a body without it and, like LGL's integer fields generally, takes digit strings for integers.
        cid = fields.get("constituent_id")
        if not cid:
            raise InvitationRefused(422, "constituent_id can't be blank")
        if cid not in self.constituents:
            raise InvitationRefused(422, "Constituent not found")
        if "is_a_guest" in fields and fields["is_a_guest"] != record["is_a_guest"]:
            # LGL's behaviour is undocumented; the fake keeps a record a guest or not for life
            raise InvitationRefused(422, "is_a_guest cannot be changed on an existing invitation")
        if "parent_invitation_id" in fields and (fields["parent_invitation_id"] or 0) != record["parent_invitation_id"]:
            if not record["is_a_guest"]:
                raise InvitationRefused(422, "parent_invitation_id is only for an additional guest (is_a_guest)")
            self.check_parent(fields["parent_invitation_id"] or 0, record["event_id"], iid)
            record["parent_invitation_id"] = fields["parent_invitation_id"]
        record["constituent_id"] = cid
        for key in ("notes", "rsvp", "attended", "assigned_to", "attendee_names"):
            if key in fields:
                record[key] = fields[key]
        if record["is_a_guest"] and ("guest_first_name" in fields or "guest_last_name" in fields):
            first, last = self.guest_names.get(iid, ("", ""))
            self.guest_names[iid] = (
                fields.get("guest_first_name", first) or "",
                fields.get("guest_last_name", last) or "",
            )
        # "attendances" is documented only as "Multiple attendances": whether LGL appends them to the invitation's
        # attendances or replaces those is unconfirmed. The fake appends (the PATCH example's answer lists exactly
        # the two it sent, which both readings allow).
        record["attendances"] += [self.attendance(a) for a in fields.get("attendances") or []]
        if "custom_fields" in fields:
            record["custom_fields"] = resolve_custom_fields(fields["custom_fields"] or [], [])
        record["updated_at"] = now_stamp()
        self.refresh_invitations(record)
        return record

    def delete_invitation(self, iid: int) -> None:
        """LGL does not say what becomes of a deleted invitation's additional guests: the fake keeps them, with
        their ``parent_invitation_id`` as it was (so it names no invitation) and ``parent_invitation_guest_name``
        null; they are then listed under their event, and under a constituent only by their own constituent_id."""
        record = self.invitations.pop(iid)
        self.guest_names.pop(iid, None)
        self.refresh_invitations(record)

    def invitation_parent(self, inv: dict) -> dict | None:
        return self.invitations.get(inv["parent_invitation_id"]) if inv["is_a_guest"] else None

    def constituent_invitations(self, cid: int) -> list[dict]:
        """``GET /constituents/{cid}/invitations``: the invitations naming the constituent and the additional
        guests under its invitations (LGL does not document whether guests are listed; synctool's client expects
        them), in the order they were made."""
        return [
            inv
            for inv in self.invitations.values()
            if inv["constituent_id"] == cid or ((parent := self.invitation_parent(inv)) and parent["constituent_id"] == cid)
        ]

    def refresh_invitations(self, changed: dict) -> None:
        """Recompute what LGL derives (guest_name, name, status, additional_guests, attendees, the parent's
        guest name) on the invitations of ``changed``'s event, and touch the constituents concerned."""
        event = self.events.get(changed["event_id"])
        same_event = [i for i in self.invitations.values() if i["event_id"] == changed["event_id"]]
        for inv in same_event:
            if event is not None:
                inv["name"] = f"Event: {event['name']}"
            if inv["is_a_guest"]:
                first, last = self.guest_names.get(inv["id"], ("", ""))
                inv["guest_name"] = f"{first} {last}".strip() or self.constituent_name(inv["constituent_id"])
            else:
                inv["guest_name"] = self.constituent_name(inv["constituent_id"]) or inv["guest_name"]
            inv["status"] = invitation_status(inv)
        for inv in same_event:
            guests = [g for g in same_event if g["is_a_guest"] and g["parent_invitation_id"] == inv["id"]]
            parent = self.invitations.get(inv["parent_invitation_id"]) if inv["is_a_guest"] else None
            inv["parent_invitation_guest_name"] = parent["guest_name"] if parent else None
            inv["additional_guests"] = len(guests)
            # undocumented: the people of the party who came (the example answer: attended 1 -> attendees 1)
            inv["attendees"] = int(bool(inv["attended"])) + sum(1 for g in guests if g["attended"])
        parent = self.invitation_parent(changed)
        for cid in {changed["constituent_id"], parent["constituent_id"] if parent else None}:
            self.touch(cid)  # an invitation is one of the constituent's nested records


#: ``Gifts_Patch_Id_UpdateBody`` of LGL's OpenAPI document: what ``PATCH /gifts/{id}`` takes
GIFT_UPDATE_FIELDS = {
    "external_id", "is_anon", "gift_type_id", "gift_type_name", "gift_category_id", "gift_category_name",
    "campaign_id", "campaign_name", "fund_id", "fund_name", "appeal_id", "appeal_name", "event_id", "event_name",
    "received_amount", "received_date", "payment_type_id", "payment_type_name", "check_number",
    "deductible_amount", "note", "ack_template_name", "deposit_date", "deposited_amount", "parent_gift_id",
    "parent_external_id", "auto_sync_to_qbo", "tribute_name", "tributee_name", "tribute_dedication",
    "tribute_recipient_name", "tribute_recipient_salutation", "tribute_recipient_email",
    "tribute_recipient_address", "tribute_recipient_notification_template", "team_member", "custom_fields",
}  # fmt: skip
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def gift_update_problem(body: Any) -> str | None:
    """Why LGL would refuse ``body`` as a gift update (its fields and their types), or None."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    unknown = sorted(set(body) - GIFT_UPDATE_FIELDS)
    if unknown:
        return f"unknown gift field(s): {', '.join(unknown)}"
    for key in ("received_amount", "deductible_amount", "deposited_amount"):
        if key in body and (isinstance(body[key], bool) or not isinstance(body[key], (int, float))):
            return f"{key} must be a number"
        if key in body and body[key] < 0:
            return f"{key} must not be negative"
    for key in ("received_date", "deposit_date"):
        if key in body and not (isinstance(body[key], str) and DATE.match(body[key])):
            return f"{key} must be a date (YYYY-MM-DD)"
    if "note" in body and not isinstance(body["note"], str):
        return "note must be a string"
    return None


class InvitationRefused(ValueError):
    """An invitation write LGL would refuse: ``status`` (404 or 422) and the ``description`` of its error body."""

    def __init__(self, status: int, description: str):
        super().__init__(description)
        self.status = status
        self.description = description


#: ``Invitations_Post_Invitations_CreateBody`` (``POST /events/{event_id}/invitations``); ``PATCH /invitations/{id}``'s
#: ``Invitations_Patch_Id_UpdateBody`` has the same fields
INVITATION_FIELDS = frozenset(
    {
        "constituent_id", "parent_invitation_id", "notes", "rsvp", "attended", "assigned_to", "attendee_names",
        "guest_first_name", "guest_last_name", "is_a_guest", "attendances", "custom_fields", "custom_attrs",
    }
)  # fmt: skip
#: ``Invitations_Post_Invitations_CreateBody_Const`` (``POST /constituents/{constituent_id}/invitations``)
INVITATION_CONST_FIELDS = (INVITATION_FIELDS - {"constituent_id"}) | {"event_id"}
#: rsvp: 1 Yes, 2 No, 3 Maybe, 4 Unknown (the schema); 0 is what the examples show for one never answered
RSVP_STATUS = {1: "yes", 2: "no", 3: "maybe"}
DIGITS = re.compile(r"^\d+$")


def invitation_status(inv: dict) -> str:
    """The examples show only "unknown" (rsvp 0) and "attended" (rsvp 2, attended 1): attending wins over the
    answer; the other words ("yes", "no", "maybe") are the fake's guess at LGL's."""
    if inv["attended"]:
        return "attended"
    return RSVP_STATUS.get(inv["rsvp"], "unknown")


def clean_invitation_body(body: Any, allowed: frozenset[str]) -> dict:
    """``body``'s fields checked against the invitation schemas (names and types), integers made ints; raises
    ``InvitationRefused`` (422). The schemas type the ids and rsvp as integers while their own request examples
    send them as strings ("959480", "168432", rsvp "2"): the fake takes an integer or a string of digits."""
    if not isinstance(body, dict):
        raise InvitationRefused(422, "the body must be a JSON object")
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvitationRefused(422, f"unknown invitation field(s): {', '.join(unknown)}")
    fields: dict[str, Any] = {}
    for key, value in body.items():
        if key in ("constituent_id", "parent_invitation_id", "event_id", "assigned_to", "rsvp", "attended"):
            if value is None and key not in ("rsvp", "attended"):
                fields[key] = None
                continue
            if isinstance(value, str) and DIGITS.match(value):
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvitationRefused(422, f"{key} must be a whole number")
            if key == "rsvp" and value > 4:
                raise InvitationRefused(422, "rsvp must be 1 (Yes), 2 (No), 3 (Maybe) or 4 (Unknown)")
        elif key in ("notes", "attendee_names", "guest_first_name", "guest_last_name"):
            if value is not None and not isinstance(value, str):
                raise InvitationRefused(422, f"{key} must be a string")
        elif key == "is_a_guest":
            if not isinstance(value, bool):
                raise InvitationRefused(422, "is_a_guest must be true or false")
        elif key == "attendances":
            if not isinstance(value, list):
                raise InvitationRefused(422, "attendances must be a list")
            for row in value:
                if not isinstance(row, dict) or set(row) - {"date", "notes"}:
                    raise InvitationRefused(422, "an attendance is {date, notes}")
                if not (isinstance(row.get("date"), str) and DATE.match(row["date"])):
                    raise InvitationRefused(422, "an attendance's date must be a date (YYYY-MM-DD)")
                if row.get("notes") is not None and not isinstance(row["notes"], str):
                    raise InvitationRefused(422, "an attendance's notes must be a string")
        elif key in ("custom_fields", "custom_attrs"):
            if not isinstance(value, list) or not all(isinstance(row, dict) for row in value):
                raise InvitationRefused(422, f"{key} must be a list of objects")
            if key == "custom_attrs" and any("value" not in row for row in value):
                raise InvitationRefused(422, "a custom attribute needs a value")
        fields[key] = value
    return fields


def resolve_custom_fields(fields: list, categories: list[dict]) -> list[dict]:
    """As LGL does: a field is found by id, key or name, a value by id or name; what does not resolve is
    dropped without an error."""
    resolved = []
    for field in fields:
        category = next(
            (
                c
                for c in categories
                if field.get("id") == c["id"] or field.get("key") == c["key"] or field.get("name") == c["name"]
            ),
            None,
        )
        if category is None:
            continue
        values = [
            k
            for v in field.get("values") or []
            for k in category["keywords"]
            if v.get("id") == k["id"] or v.get("name") == k["name"]
        ]
        if values:
            resolved.append({**{k: v for k, v in category.items() if k != "keywords"}, "values": values})
    return resolved


def _envelope(items: list, request: Request, item_type: str) -> JSONResponse:
    try:
        limit = int(request.query_params.get("limit", 25))
        offset = int(request.query_params.get("offset", 0))
    except ValueError:
        return _param_error("limit/offset must be integers")
    page = items[offset : offset + limit]
    body = {
        **API,
        "items_count": len(page),
        "total_items": len(items),
        "limit": limit,
        "offset": offset,
        "item_type": item_type,
        "items": page,
    }
    if offset + len(page) < len(items):
        body["next_item"] = offset + len(page)
        body["next_link"] = f"{request.url.path}?limit={limit}&offset={offset + len(page)}"
    return JSONResponse(body)


def _param_error(description: str) -> JSONResponse:
    return JSONResponse({**API, "error": "Parameter Error", "description": description}, status_code=400)


def _clauses(request: Request, allowed: set[str]) -> list[tuple[str, str]] | JSONResponse:
    clauses = []
    for key in request.query_params:
        if key not in ("q[]", "q", "expand", "sort", "limit", "offset", "access_token"):
            return _param_error(f"Unknown query parameter: {key}")
    for raw in request.query_params.getlist("q[]") + request.query_params.getlist("q"):
        for part in raw.split(";"):
            field, sep, value = part.partition("=")
            if not sep or field not in allowed:
                return _param_error(f"Unknown query parameter: {part}")
            clauses.append((field, value))
    if not clauses:
        return _param_error("q[] is required")
    return clauses


def create_app(crm: FakeCrm | None = None) -> Any:
    crm = crm or FakeCrm()

    async def body_of(request: Request) -> dict:
        raw = await request.body()
        if not raw:
            return {}
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("body must be a JSON object")
        return data

    def constituent_or_404(cid: Any) -> dict | None:
        try:
            return crm.constituents.get(int(cid))
        except (TypeError, ValueError):
            return None

    def not_found() -> JSONResponse:
        return JSONResponse({**API, "error": "Not Found", "description": "Record not found"}, status_code=404)

    def constituent_gone() -> JSONResponse:
        """LGL documents no 404 for a deleted constituent: the fake answers as ``crm.gone_status`` says."""
        if crm.gone_status == 404:
            return not_found()
        return JSONResponse(
            {**API, "error": "Validation Failed", "description": "Constituent not found"}, status_code=crm.gone_status
        )

    # -- constituents ----------------------------------------------------------------------------

    async def constituents_search(request: Request):
        clauses = _clauses(request, CONSTITUENT_TERMS)
        if isinstance(clauses, JSONResponse):
            return clauses
        expand = set(filter(None, request.query_params.get("expand", "").split(",")))
        hits = []
        for c in crm.constituents.values():
            ok = True
            for field, value in clauses:
                v = value.lower()
                if field == "name":
                    ok = any(v in str(c.get(k) or "").lower() for k in ("first_name", "last_name", "org_name", "nick_name"))
                elif field == "eaddr":
                    ok = any(
                        r["address"].lower() == v for r in crm.contacts["email_addresses"].values() if r["item_id"] == c["id"]
                    )
                elif field == "external_id":
                    ok = str(c.get("external_constituent_id") or "") == value
                elif field == "keyword":
                    ok = int(value) in crm.keywords.get(c["id"], set())
                elif field == "groups":
                    ids = {int(x) for x in value.split(",") if x}
                    ok = any(g["constituent_id"] == c["id"] and g["group_id"] in ids for g in crm.group_memberships.values())
                elif field in ("updated_from", "updated_to"):
                    if not TIMESTAMP.match(value):
                        return _param_error(f"{field} must be YYYY-MM-DDTHH:MM:SSZ, got {value}")
                    ok = c["updated_at"] >= value if field == "updated_from" else c["updated_at"] <= value
                if not ok:
                    break
            if ok:
                hits.append(c)
        sort = request.query_params.get("sort")
        if sort:
            key = SORTS.get(sort.rstrip("!"))
            if key is None:
                return _param_error(f"Unknown sort: {sort}")
            hits.sort(key=lambda c: (key(c), c["id"]), reverse=sort.endswith("!"))
        return _envelope([crm.constituent_view(c, expand) for c in hits], request, "constituent")

    async def constituents_collection(request: Request):
        if request.method == "GET":
            flat = [crm.constituent_view(c, set()) for c in crm.constituents.values()]
            return _envelope(flat, request, "constituent")
        body = await body_of(request)
        if not body.get("last_name") and not body.get("org_name"):
            return JSONResponse({**API, "error": "Validation Failed", "description": "last_name can't be blank"}, status_code=422)
        return JSONResponse({**API, **crm.constituent_view(crm.create_constituent(body), {"all"})})

    async def constituent_item(request: Request):
        c = constituent_or_404(request.path_params["id"])
        if c is None:
            return constituent_gone()
        if request.method == "GET":
            return JSONResponse({**API, **crm.constituent_view(c, {"all"})})
        if request.method == "DELETE":
            del crm.constituents[c["id"]]
            return JSONResponse({**API, "result": "success"})
        body = await body_of(request)
        for key, value in body.items():
            if key in CONTACT_KINDS:
                for row in value or []:
                    crm.add_contact_row(c["id"], key, row)
            elif not key.startswith("remove_previous"):
                c[key] = value
        crm.touch(c["id"])
        return JSONResponse({**API, **crm.constituent_view(c, {"all"})})

    async def contacts_collection(request: Request):
        c = constituent_or_404(request.path_params["cid"])
        kind = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        if c is None:
            return constituent_gone()
        if request.method == "GET":
            return _envelope([r for r in crm.contacts[kind].values() if r["item_id"] == c["id"]], request, kind[:-1])
        body = await body_of(request)
        if not body.get(CONTACT_KINDS[kind]):
            return JSONResponse(
                {**API, "error": "Validation Failed", "description": f"{CONTACT_KINDS[kind]} can't be blank"}, status_code=422
            )
        return JSONResponse({**API, **crm.add_contact_row(c["id"], kind, body)})

    async def contact_item(request: Request):
        kind = request.url.path.split("/")[-2]
        row = crm.contacts[kind].get(int(request.path_params["id"]))
        if row is None:
            return not_found()
        if request.method != "GET":
            crm.touch(row["item_id"])
        if request.method == "DELETE":
            del crm.contacts[kind][row["id"]]
            return JSONResponse({**API, "result": "success"})
        if request.method == "PATCH":
            row.update(await body_of(request))
        return JSONResponse({**API, **row})

    # -- gifts ---------------------------------------------------------------------------------

    async def gifts_collection(request: Request):
        c = constituent_or_404(request.path_params["cid"])
        if c is None:
            return constituent_gone()
        if request.method == "GET":
            short = [
                {k: g[k] for k in ("id", "constituent_id", "gift_type_id", "gift_type_name", "created_at", "updated_at")}
                | {"amount": g["received_amount"], "date": g["received_date"]}
                for g in crm.gifts.values()
                if g["constituent_id"] == c["id"]
            ]
            return _envelope(short, request, "gift")
        body = await body_of(request)
        ext = body.get("external_id")
        if ext is not None and any(str(g.get("external_id")) == str(ext) for g in crm.gifts.values()):
            return JSONResponse(
                {**API, "error": "Validation Failed", "description": "External Gift ID already exists"}, status_code=422
            )
        if body.get("received_amount") is None:
            return JSONResponse(
                {**API, "error": "Validation Failed", "description": "received_amount can't be blank"}, status_code=422
            )
        gid = crm.new_id()
        now = now_stamp()
        gift = {
            "id": gid,
            "constituent_id": c["id"],
            "external_id": ext,
            "is_anon": False,
            "gift_type_id": 1,
            "gift_type_name": "Gift",
            "fund_id": 0,
            "fund_name": None,
            "campaign_id": 0,
            "campaign_name": None,
            "appeal_id": 0,
            "event_id": 0,
            "payment_type_id": None,
            "payment_type_name": None,
            "note": None,
            "created_at": now,
            "updated_at": now,
            **body,
        }
        gift["received_amount"] = float(body["received_amount"])
        for kind, key in (
            ("funds", "fund"),
            ("campaigns", "campaign"),
            ("payment_types", "payment_type"),
            ("gift_types", "gift_type"),
            ("gift_categories", "gift_category"),
            ("appeals", "appeal"),
        ):
            ref = next(
                (
                    r
                    for r in REFERENCE[kind]
                    if str(r["id"]) == str(body.get(f"{key}_id"))
                    or (body.get(f"{key}_name") and r.get("name", r.get("display_name")) == body.get(f"{key}_name"))
                ),
                None,
            )
            if ref:
                gift[f"{key}_id"] = ref["id"]
                gift[f"{key}_name"] = ref.get("name", ref.get("display_name"))
        gift.setdefault("deductible_amount", gift["received_amount"])
        gift["custom_fields"] = resolve_custom_fields(body.get("custom_fields") or [], crm.gift_fields)
        crm.gifts[gid] = gift
        return JSONResponse({**API, **gift})

    async def gifts_search(request: Request):
        clauses = _clauses(request, GIFT_TERMS)
        if isinstance(clauses, JSONResponse):
            return clauses
        hits = list(crm.gifts.values())
        for field, value in clauses:
            if field == "external_gift_ids":
                wanted = set(value.split(","))
                hits = [g for g in hits if str(g.get("external_id")) in wanted]
            elif field == "gift_ids":
                wanted = set(value.split(","))
                hits = [g for g in hits if str(g["id"]) in wanted]
            elif field in ("date_from", "date_to"):
                if not DATE.match(value):
                    return _param_error(f"{field} must be a date (YYYY-MM-DD)")
                if field == "date_from":
                    hits = [g for g in hits if str(g.get("received_date") or "") >= value]
                else:
                    hits = [g for g in hits if str(g.get("received_date") or "") <= value]
        return _envelope(hits, request, "gift")

    async def gift_item(request: Request):
        gift = crm.gifts.get(int(request.path_params["id"]))
        if gift is None:
            return not_found()
        if request.method == "DELETE":
            del crm.gifts[gift["id"]]
            return JSONResponse({**API, "result": "success"})
        if request.method == "PATCH":
            body = await body_of(request)
            problem = gift_update_problem(body)
            if problem:
                return JSONResponse({**API, "error": "Validation Failed", "description": problem}, status_code=422)
            if "custom_fields" in body:
                body["custom_fields"] = resolve_custom_fields(body["custom_fields"] or [], crm.gift_fields)
            gift.update(body, updated_at=now_stamp())
            for key in ("received_amount", "deductible_amount", "deposited_amount"):
                if key in body:
                    gift[key] = float(body[key])
        return JSONResponse({**API, **gift})

    # -- events and invitations ------------------------------------------------------------------

    def refused(exc: InvitationRefused) -> JSONResponse:
        if exc.status == 404:
            return not_found()
        return JSONResponse({**API, "error": "Validation Failed", "description": exc.description}, status_code=exc.status)

    async def events_list(request: Request):
        return _envelope([dict(e) for e in crm.events.values()], request, "event")

    async def event_invitations(request: Request):
        event_id = request.path_params["event_id"]
        if event_id not in crm.events:
            return not_found()
        if request.method == "GET":
            rows = [dict(i) for i in crm.invitations.values() if i["event_id"] == event_id]
            return _envelope(rows, request, "invitation")
        try:
            record = crm.create_invitation(event_id, await body_of(request), INVITATION_FIELDS)
        except InvitationRefused as exc:
            return refused(exc)
        return JSONResponse({**API, **record})

    async def constituent_invitations(request: Request):
        c = constituent_or_404(request.path_params["cid"])
        if c is None:
            return constituent_gone()
        if request.method == "GET":
            return _envelope([dict(i) for i in crm.constituent_invitations(c["id"])], request, "invitation")
        body = await body_of(request)
        try:
            fields = clean_invitation_body(body, INVITATION_CONST_FIELDS)
            if not fields.get("event_id"):
                raise InvitationRefused(422, "event_id can't be blank")
            event_id = fields.pop("event_id")
            # the path names the constituent (CreateBody_Const has no constituent_id of its own)
            record = crm.create_invitation(event_id, {**fields, "constituent_id": c["id"]}, INVITATION_FIELDS)
        except InvitationRefused as exc:
            return refused(exc)
        return JSONResponse({**API, **record})

    async def invitation_item(request: Request):
        iid = request.path_params["id"]
        record = crm.invitations.get(iid)
        if record is None:
            return not_found()
        if request.method == "DELETE":
            crm.delete_invitation(iid)
            return JSONResponse({**API, "result": "success"})
        if request.method == "PATCH":
            try:
                record = crm.update_invitation(iid, await body_of(request))
            except InvitationRefused as exc:
                return refused(exc)
        return JSONResponse({**API, **record})

    # -- memberships, relationships, groups, keywords ------------------------------------------

    def sub_collection(store_: dict, item_type: str, required: str | None = None, defaults: dict | None = None):
        async def endpoint(request: Request):
            c = constituent_or_404(request.path_params["cid"])
            if c is None:
                return constituent_gone()
            if request.method == "GET":
                return _envelope([r for r in store_.values() if r["constituent_id"] == c["id"]], request, item_type)
            body = await body_of(request)
            if required and not (body.get(required) or body.get(required.replace("_id", "_name"))):
                return JSONResponse(
                    {**API, "error": "Validation Failed", "description": f"{required} can't be blank"}, status_code=422
                )
            rid = crm.new_id()
            record = {"id": rid, "constituent_id": c["id"], **(defaults or {}), **body}
            store_[rid] = record
            crm.touch(c["id"])
            return JSONResponse({**API, **record})

        return endpoint

    def item(store_: dict):
        async def endpoint(request: Request):
            record = store_.get(int(request.path_params["id"]))
            if record is None:
                return not_found()
            if request.method != "GET":
                crm.touch(record.get("constituent_id"))
            if request.method == "DELETE":
                del store_[record["id"]]
                return JSONResponse({**API, "result": "success"})
            if request.method == "PATCH":
                record.update(await body_of(request))
            return JSONResponse({**API, **record})

        return endpoint

    async def keywords_add(request: Request):
        c = constituent_or_404(request.path_params["cid"])
        if c is None:
            return constituent_gone()
        body = await body_of(request)
        kid = body.get("id")
        if not isinstance(kid, int) or not any(k["id"] == kid for k in TAG_CATEGORY["keywords"]):
            return JSONResponse({**API, "error": "Validation Failed", "description": "keyword not found"}, status_code=422)
        crm.keywords.setdefault(c["id"], set()).add(kid)
        crm.touch(c["id"])
        return JSONResponse({**API, "id": kid, "constituent_id": c["id"]})

    async def keywords_remove(request: Request):
        c = constituent_or_404(request.path_params["cid"])
        if c is None:
            return constituent_gone()
        crm.keywords.setdefault(c["id"], set()).discard(int(request.path_params["id"]))
        crm.touch(c["id"])
        return JSONResponse({**API, "result": "success"})

    def reference(kind: str):
        async def endpoint(request: Request):
            return _envelope(REFERENCE[kind], request, kind[:-1])

        return endpoint

    async def categories(request: Request):
        kind = request.query_params.get("item_type", "Constituent")
        return _envelope(
            [TAG_CATEGORY] if kind == "Constituent" else crm.gift_fields if kind == "Gift" else [], request, "category"
        )

    async def category_keywords(request: Request):
        category = next((c for c in crm.gift_fields if c["id"] == request.path_params["id"]), None)
        if category is None:
            return not_found()
        if request.method == "GET":
            return _envelope(category["keywords"], request, "keyword")
        body = await body_of(request)
        name = str(body.get("name") or "").strip()
        if not name:
            return JSONResponse({**API, "error": "Validation Failed", "description": "name can't be blank"}, status_code=422)
        if any(k["name"] == name for k in category["keywords"]):
            return JSONResponse(
                {**API, "error": "Validation Failed", "description": "Name has already been taken"}, status_code=422
            )
        keyword = {"id": crm.new_id(), "category_id": category["id"], "name": name, "short_code": None}
        category["keywords"].append(keyword)
        return JSONResponse({**API, **keyword})

    # -- the fake's own controls (not part of LGL) -------------------------------------------------

    async def control_faults(request: Request):
        body = await body_of(request)
        crm.faults.append(
            {
                "mode": body.get("mode", "500"),
                "count": int(body.get("count", 1)),
                "method": body.get("method"),
                "path": body.get("path"),
            }
        )
        return JSONResponse({"faults": crm.faults})

    async def control_state(request: Request):
        return JSONResponse(
            {
                "stats": crm.stats(),
                "constituents": list(crm.constituents.values()),
                "gifts": list(crm.gifts.values()),
                "events": list(crm.events.values()),
                "invitations": list(crm.invitations.values()),
                "keywords": {str(k): sorted(v) for k, v in crm.keywords.items()},
                "memberships": list(crm.memberships.values()),
                "relationships": list(crm.relationships.values()),
                "group_memberships": list(crm.group_memberships.values()),
                "requests": crm.requests[-2000:],
            }
        )

    async def control_reset(request: Request):
        crm.reset()
        return JSONResponse({"status": "reset"})

    v = "/api/v1"
    routes = [
        Route(v + "/constituents/search", constituents_search, methods=["GET"]),
        Route(v + "/constituents", constituents_collection, methods=["GET", "POST"]),
        Route(v + "/constituents/{id:int}", constituent_item, methods=["GET", "PATCH", "DELETE"]),
        Route(v + "/constituents/{cid:int}/gifts", gifts_collection, methods=["GET", "POST"]),
        Route(v + "/constituents/{cid:int}/memberships", sub_collection(crm.memberships, "membership"), methods=["GET", "POST"]),
        Route(
            v + "/constituents/{cid:int}/constituent_relationships",
            sub_collection(crm.relationships, "constituent_relationship"),
            methods=["GET", "POST"],
        ),
        Route(
            v + "/constituents/{cid:int}/group_memberships",
            sub_collection(crm.group_memberships, "group_membership", "group_id", {"is_current": True}),
            methods=["GET", "POST"],
        ),
        Route(v + "/constituents/{cid:int}/keywords", keywords_add, methods=["POST"]),
        Route(v + "/constituents/{cid:int}/keywords/{id:int}", keywords_remove, methods=["DELETE"]),
        Route(v + "/constituents/{cid:int}/invitations", constituent_invitations, methods=["GET", "POST"]),
        Route(v + "/events", events_list, methods=["GET"]),
        Route(v + "/events/{event_id:int}/invitations", event_invitations, methods=["GET", "POST"]),
        Route(v + "/invitations/{id:int}", invitation_item, methods=["GET", "PATCH", "DELETE"]),
        Route(v + "/gifts/search", gifts_search, methods=["GET"]),
        Route(v + "/gifts/{id:int}", gift_item, methods=["GET", "PATCH", "DELETE"]),
        Route(v + "/memberships/{id:int}", item(crm.memberships), methods=["GET", "PATCH", "DELETE"]),
        Route(v + "/constituent_relationships/{id:int}", item(crm.relationships), methods=["GET", "PATCH", "DELETE"]),
        Route(v + "/group_memberships/{id:int}", item(crm.group_memberships), methods=["GET", "PATCH", "DELETE"]),
        *[Route(v + f"/constituents/{{cid:int}}/{kind}", contacts_collection, methods=["GET", "POST"]) for kind in CONTACT_KINDS],
        *[Route(v + f"/{kind}/{{id:int}}", contact_item, methods=["GET", "PATCH", "DELETE"]) for kind in CONTACT_KINDS],
        Route(v + "/categories", categories, methods=["GET"]),
        Route(v + "/categories/{id:int}/keywords", category_keywords, methods=["GET", "POST"]),
        *[Route(v + f"/{kind}", reference(kind), methods=["GET"]) for kind in REFERENCE],
        Route("/_fake/faults", control_faults, methods=["POST"]),
        Route("/_fake/state", control_state, methods=["GET"]),
        Route("/_fake/reset", control_reset, methods=["POST"]),
    ]
    inner = Starlette(routes=routes)

    async def app(scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/_fake/"):
            await inner(scope, receive, send)
            return
        if scope["path"].endswith(".json"):
            scope = dict(scope, path=scope["path"][:-5])
        request = Request(scope, receive)
        now = time.time()
        entry = {
            "at": now,
            "method": request.method,
            "path": scope["path"],
            "query": list(request.query_params.multi_items()),
            "status": None,
            "body": None,
        }
        body = await request.body()
        if body:
            try:
                entry["body"] = json.loads(body)
            except ValueError:
                entry["body"] = body.decode("utf-8", "replace")

        async def replay():
            return {"type": "http.request", "body": body, "more_body": False}

        with crm.lock:
            crm.requests.append(entry)
            while crm.recent and crm.recent[0] <= now - crm.window_s:
                crm.recent.popleft()
            over = len(crm.recent) >= crm.limit
            if over:
                crm.rejected_429 += 1
            else:
                crm.recent.append(now)
            fault = None
            for f in crm.faults:
                if (
                    f["count"] > 0
                    and (not f["method"] or f["method"] == request.method)
                    and (not f["path"] or f["path"] in scope["path"])
                ):
                    f["count"] -= 1
                    fault = f["mode"]
                    break
        auth = request.headers.get("authorization", "")
        if over:
            response: Response = JSONResponse(
                {"error": "Too Many Requests", "description": "rate limit exceeded"},
                status_code=429,
                headers={"Retry-After": "1"},
            )
        elif not auth:
            response = PlainTextResponse(
                "HTTP Basic: Access denied.\n", status_code=401, headers={"WWW-Authenticate": 'Basic realm="API"'}
            )
        elif auth != f"Bearer {crm.api_key}":
            response = JSONResponse(
                {
                    "error": "invalid_token",
                    "error_description": "The access token provided is expired, revoked, malformed or invalid for other reasons.",
                },
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="Rack::OAuth2 Protected Resources", error="invalid_token"'},
            )
        elif fault == "500":
            response = PlainTextResponse(
                "<html><body><h1>We're sorry, but something went wrong.</h1></body></html>",
                status_code=500,
                media_type="text/html",
            )
        elif fault == "timeout":
            await asyncio.sleep(crm.timeout_sleep_s)
            response = JSONResponse({"error": "late"}, status_code=504)
        else:
            captured: dict = {}

            async def capture(message):
                if message["type"] == "http.response.start":
                    captured["start"] = message
                else:
                    captured.setdefault("body", b"")
                    captured["body"] += message.get("body", b"")

            if fault == "late_commit":  # a slow CRM: the client gives up, the write lands later
                await asyncio.sleep(crm.timeout_sleep_s * 2)
            try:
                await inner(scope, replay, capture)
            except (ValueError, KeyError) as exc:
                captured = {
                    "start": {"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"application/json")]},
                    "body": json.dumps({**API, "error": "Bad Request", "description": str(exc)}).encode(),
                }
            if fault == "commit_timeout":  # the write happened; the answer never arrives in time
                await asyncio.sleep(crm.timeout_sleep_s)
            entry["status"] = captured["start"]["status"]
            await send(captured["start"])
            await send({"type": "http.response.body", "body": captured.get("body", b"")})
            return
        entry["status"] = response.status_code
        await response(scope, receive, send)

    app.crm = crm  # type: ignore[attr-defined]
    return app
