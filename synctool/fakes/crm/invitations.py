"""An LGL account's events and invitations, as ``lgl-openapi.json`` describes them (``/events``,
``/events/{event_id}/invitations``, ``/constituents/{constituent_id}/invitations``, ``/invitations/{id}``): the
rules an invitation's body must follow, what LGL derives on it (guest names, status, counts), and ``Invitations``,
the part of ``FakeCrm`` that keeps them. The documented API version cannot create an event, so tests seed them with
``FakeCrm.add_event``; ``FakeCrm.invite`` makes an invitation as staff would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from synctool.fakes.crm.reference import DATE, DIGITS, INVITATION_FIELDS, RSVP_STATUS, now_stamp, resolve_custom_fields


class InvitationRefused(ValueError):
    """An invitation write LGL would refuse: ``status`` (404 or 422) and the ``description`` of its error body."""

    def __init__(self, status: int, description: str):
        super().__init__(description)
        self.status = status
        self.description = description


def invitation_status(inv: dict) -> str:
    """The examples show only "unknown" (rsvp 0) and "attended" (rsvp 2, attended 1): attending wins over the
    answer; the other words ("yes", "no", "maybe") are the fake's guess at LGL's."""
    if inv["attended"]:
        return "attended"
    return RSVP_STATUS.get(inv["rsvp"], "unknown")


def clean_invitation_body(body: object, allowed: frozenset[str]) -> dict:
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


class Invitations:
    """``FakeCrm``'s events and invitations (``FakeCrm.reset`` makes the state named here)."""

    constituents: dict[int, dict]
    events: dict[int, dict]
    invitations: dict[int, dict]
    guest_names: dict[int, tuple[str, str]]
    new_id: Callable[[], int]
    touch: Callable[[Any], None]

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

    def create_invitation(self, event_id: int, body: object, allowed: frozenset[str]) -> dict:
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

    def update_invitation(self, iid: int, body: object) -> dict:
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
