"""Event invitations in the CRM, written once: a buyer's invitation to an event, their guests' under it, and
attendance (``POST /events/{id}/invitations``, ``PATCH`` and ``DELETE /invitations/{id}``, lgl-openapi.json).

LGL's invitations carry no external id, so the ``invitations`` table is the ledger: one row per (event,
constituent, guest key): ``''`` for the constituent's own invitation, ``<source>:<ticket id>`` for a guest. A row
is ``pending`` while its create is sent, ``unconfirmed`` when the answer was lost, ``done`` with the CRM's id, or
``removed`` after its delete. What synctool last wrote (rsvp, notes, attendee names, attendance) is kept, so a
second pass writes only what changed.

- One invitation per constituent per event: a buyer synctool has no row for, and who was a constituent before
  the order, may have been invited by staff already (RSVP unknown): their invitations are read once
  (``GET /constituents/{id}/invitations``) and the one to this event is taken instead of making a second. A
  constituent made for this order needs no read.
- A create whose answer was lost is looked for the same way before it is sent again, after
  ``crm.confirm_after_s`` as for gifts; so is an attendance whose PATCH answer was lost (``attendances`` adds a
  record each time: whether LGL appends or replaces them is not documented, so it is never sent twice).
- Cost: one request per invitation written, one per update or removal, one per attendance (folded into the
  create when the holder had checked in by then), and the one read above; nothing else unless a write was
  uncertain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from synctool import store
from synctool.crm import confirming
from synctool.crm.client import CrmClient
from synctool.crm.types import JsonObject
from synctool.crm.types import same_id as _same
from synctool.errors import RemoteError, UncertainWrite, Wait
from synctool.queue.unit import Unit

#: LGL's RSVP codes (Invitations_Post_Invitations_CreateBody: 1 Yes, 2 No, 3 Maybe, 4 Unknown; 0 in the examples
#: for an invitation nobody answered)
YES, NO, UNKNOWN = 1, 2, (0, 4)
#: what synctool writes in ``notes`` and ``attendee_names`` at most: LGL documents no limit for either, so the text
#: stays within what a person reads (``tickets.invited`` says how many orders it left out)
LIMIT = 2000


@dataclass
class Guest:
    """A ticket holder who is not the buyer: a guest invitation under the buyer's."""

    key: str
    first_name: str
    last_name: str
    checked_in_on: str | None = None


@dataclass
class Invited:
    """What the CRM should hold for one buyer at one event, from all their orders: the buyer's invitation (RSVP
    yes while a ticket is live, no once every order was refunded), its notes and attendee names, the buyer's own
    check-in, the live guests, and the guest keys whose tickets were refunded."""

    event_id: int
    constituent_id: str
    notes: str
    attendee_names: str
    rsvp: int
    checked_in_on: str | None = None
    guests: list[Guest] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: the constituent existed before the order (staff may have invited them): read their invitations once
    known_before: bool = True


def recorded(conn: store.Connection, event_id: int, constituent_id: str, guest_key: str = "") -> store.Row | None:
    return conn.execute(
        "SELECT * FROM invitations WHERE event_id = ? AND constituent_id = ? AND guest_key = ?",
        (event_id, str(constituent_id), guest_key),
    ).fetchone()


def _save(work: Unit, event_id: int, constituent_id: str, guest_key: str, /, **values: object) -> store.Row:
    """Record what is known of one invitation: the values given change, the others stay (gathered in ``work``: in a
    job, committed at its next point, which is before its next request)."""
    key = {"event_id": event_id, "constituent_id": str(constituent_id), "guest_key": guest_key}
    with work.gather() as conn:
        store.put_row(conn, "invitations", key, values | {"updated_at": store.iso()})
    row = recorded(work.conn, event_id, constituent_id, guest_key)
    assert row is not None
    return row


class Writer:
    """Writes one buyer's ``Invited`` to the CRM, counting what it did."""

    def __init__(self, crm: CrmClient, work: Unit, *, job_id: str | None, confirm_after_s: float):
        self.crm, self.work, self.job_id, self.confirm_after_s = crm, work, job_id, confirm_after_s
        self.conn = work.conn
        self.done: list[str] = []
        self._theirs: list[JsonObject] | None = None

    def theirs(self, constituent_id: str) -> list[JsonObject]:
        """The constituent's invitations as the CRM holds them, read once per pass."""
        if self._theirs is None:
            self._theirs = self.crm.constituent_invitations(constituent_id)
        return self._theirs

    def write(self, event_id: int, constituent_id: str, build: Callable[[], Invited]) -> str:
        """Write what ``build()`` says the CRM should hold for one constituent at one event; it is built under the
        constituent's lock, so a job that waited for it writes the orders recorded meanwhile too."""
        busy = f"another job is writing {constituent_id}'s invitation; waiting for it"
        with self.work.lock_or_wait([f"invitation:{event_id}:{constituent_id}"], busy):
            return self._write(build())

    def _taken(self, event_id: int, constituent_id: str) -> set[str]:
        """The CRM invitations the ledger holds already: a lost create's look-up never takes one of them."""
        return {
            str(r[0])
            for r in self.conn.execute(
                "SELECT crm_id FROM invitations WHERE event_id = ? AND constituent_id = ? AND crm_id IS NOT NULL",
                (event_id, str(constituent_id)),
            )
        }

    def _lost_guest(self, wanted: Invited, buyer: store.Row, row: store.Row) -> JsonObject | None:
        """The CRM's guest invitation a create whose answer was lost made: under the buyer's invitation, with the
        guest's name, and held by no other ledger row (two guests of one name each keep their own)."""
        taken = self._taken(wanted.event_id, wanted.constituent_id)
        guest = Guest(row["guest_key"], row["first_name"] or "", row["last_name"] or "")
        return next(
            (i for i in self.theirs(wanted.constituent_id)
             if _same(i.get("parent_invitation_id"), buyer["crm_id"]) and _named(i, guest) and str(i.get("id")) not in taken),
            None,
        )  # fmt: skip

    def _write(self, wanted: Invited) -> str:
        buyer = self._buyer(wanted)
        for guest in wanted.guests:
            self._guest(wanted, buyer, guest)
        for key in wanted.removed:
            self._remove(wanted, key)
        return "; ".join(self.done) or "invitations as the CRM holds them already"

    # -- the buyer's invitation ---------------------------------------------------------------------------

    def _buyer(self, wanted: Invited) -> store.Row:
        event_id, cid = wanted.event_id, wanted.constituent_id
        row = recorded(self.conn, event_id, cid)
        if row is None or row["state"] in ("pending", "unconfirmed"):
            if row is not None:
                self._due(row, f"the invitation of constituent {cid} to event {event_id}")
            found = None
            if row is not None or wanted.known_before:
                found = next(
                    (i for i in self.theirs(cid) if _same(i.get("event_id"), event_id) and not i.get("is_a_guest")), None
                )
            if found is not None:
                # staff's own words stay: synctool's note and names are added after theirs, never written over them
                staff = (found.get("notes") or "").strip() if row is None else (row["staff_notes"] or "")
                names = (found.get("attendee_names") or "").strip() if row is None else (row["staff_names"] or "")
                row = _save(self.work, event_id, cid, "", crm_id=str(found["id"]), state="done", rsvp=found.get("rsvp"),
                            notes=found.get("notes"), attendee_names=found.get("attendee_names"), job_id=self.job_id,
                            staff_notes=staff, staff_names=names, attended_on=_attended(found, wanted.checked_in_on))  # fmt: skip
                self.done.append(f"took invitation {found['id']} (already in the CRM)")
            else:
                body = {"constituent_id": int(cid), "rsvp": wanted.rsvp, "notes": wanted.notes,
                        "attendee_names": wanted.attendee_names} | _attendance(wanted.checked_in_on)  # fmt: skip
                made = self._create(event_id, cid, "", body, what=f"invitation of constituent {cid}")
                row = _save(self.work, event_id, cid, "", crm_id=str(made["id"]), state="done", rsvp=wanted.rsvp,
                            notes=wanted.notes, attendee_names=wanted.attendee_names, attended_on=wanted.checked_in_on,
                            job_id=self.job_id, error=None)  # fmt: skip
                self.done.append(f"invitation {made['id']} created")
                return row
        desired: dict[str, object] = {
            "rsvp": wanted.rsvp,
            "notes": _joined(row["staff_notes"], wanted.notes),
            "attendee_names": _joined(row["staff_names"], wanted.attendee_names, ", "),
        }
        changes = {name: value for name, value in desired.items() if value != row[name]}
        on = wanted.checked_in_on
        if on and not row["attended_on"]:
            if self._attendance_confirmed(row, on):
                row = _save(self.work, event_id, cid, "", attended_on=on, attendance_sent=None)
            else:
                changes |= _attendance(on)
        if changes:
            row = self._patch(
                row, {"constituent_id": int(cid), **changes}, wanted.checked_in_on if "attendances" in changes else None
            )
            self.done.append(f"invitation {row['crm_id']} updated ({', '.join(sorted(changes))})")
        return row

    # -- guests -------------------------------------------------------------------------------------------

    def _guest(self, wanted: Invited, buyer: store.Row, guest: Guest) -> None:
        event_id, cid = wanted.event_id, wanted.constituent_id
        row = recorded(self.conn, event_id, cid, guest.key)
        if row is not None and row["state"] == "done":
            if guest.checked_in_on and not row["attended_on"]:
                if self._attendance_confirmed(row, guest.checked_in_on):
                    _save(self.work, event_id, cid, guest.key, attended_on=guest.checked_in_on, attendance_sent=None)
                else:
                    self._patch(row, {"constituent_id": int(cid), **_attendance(guest.checked_in_on)}, guest.checked_in_on)
                    self.done.append(f"{guest.first_name} {guest.last_name} attended")
            return
        if row is not None and row["state"] == "removed":
            pass  # a ticket live again after its refund was undone: invited again
        elif row is not None:
            self._due(row, f"the guest invitation of {guest.first_name} {guest.last_name}")
            found = self._lost_guest(wanted, buyer, row)
            if found is not None:
                _save(self.work, event_id, cid, guest.key, crm_id=str(found["id"]), state="done", job_id=self.job_id,
                      attended_on=_attended(found, guest.checked_in_on))  # fmt: skip
                self.done.append(f"took guest invitation {found['id']} (already in the CRM)")
                return
        body = {"constituent_id": int(cid), "parent_invitation_id": int(buyer["crm_id"]), "is_a_guest": True,
                "guest_first_name": guest.first_name, "guest_last_name": guest.last_name,
                "rsvp": YES} | _attendance(guest.checked_in_on)  # fmt: skip
        _save(self.work, event_id, cid, guest.key, parent_id=buyer["id"], first_name=guest.first_name,
              last_name=guest.last_name, state=row["state"] if row is not None and row["state"] != "removed" else "pending",
              job_id=self.job_id)  # fmt: skip
        made = self._create(event_id, cid, guest.key, body, what=f"guest invitation of {guest.first_name} {guest.last_name}")
        _save(self.work, event_id, cid, guest.key, crm_id=str(made["id"]), state="done", rsvp=YES,
              attended_on=guest.checked_in_on, error=None)  # fmt: skip
        self.done.append(f"guest invitation {made['id']} created for {guest.first_name} {guest.last_name}".rstrip())

    def _remove(self, wanted: Invited, key: str) -> None:
        row = recorded(self.conn, wanted.event_id, wanted.constituent_id, key)
        if row is None or row["state"] == "removed":
            return
        if not row["crm_id"]:  # its create's answer was lost: the CRM may hold it all the same
            self._due(row, f"the guest invitation of {row['first_name']} {row['last_name']}")
            buyer = recorded(self.conn, wanted.event_id, wanted.constituent_id)
            found = self._lost_guest(wanted, buyer, row) if buyer is not None and buyer["crm_id"] else None
            if found is not None:
                row = _save(self.work, wanted.event_id, wanted.constituent_id, key, crm_id=str(found["id"]))
        if row["crm_id"]:
            try:
                self.crm.delete_invitation(row["crm_id"])
            except RemoteError as exc:
                if exc.status != 404:  # gone already: what a delete wants
                    raise
        _save(self.work, wanted.event_id, wanted.constituent_id, key, state="removed", job_id=self.job_id)
        self.done.append(f"guest invitation {row['crm_id'] or '(never made)'} removed ({row['first_name']} {row['last_name']})")

    # -- one write --------------------------------------------------------------------------------------------

    def _due(self, row: store.Row, what: str) -> None:
        """A create whose answer was lost is looked for only once ``confirm_after_s`` has passed."""
        if row["state"] == "unconfirmed":
            confirming.wait_until_due(what, row["updated_at"], self.confirm_after_s)

    def _create(self, event_id: int, cid: str, key: str, body: Mapping[str, object], *, what: str) -> JsonObject:
        _save(self.work, event_id, cid, key, state="pending", job_id=self.job_id)
        try:
            return self.crm.create_invitation(event_id, body)
        except UncertainWrite as exc:
            _save(self.work, event_id, cid, key, state="unconfirmed", error=str(exc))
            raise confirming.answer_lost(what, exc, self.confirm_after_s) from None
        except RemoteError:
            with self.work.gather() as conn:  # refused: nothing was made, no intent is left open
                conn.execute(
                    "DELETE FROM invitations WHERE event_id = ? AND constituent_id = ? AND guest_key = ? AND state = 'pending'",
                    (event_id, str(cid), key),
                )
            raise

    def _patch(self, row: store.Row, body: Mapping[str, object], attending: str | None) -> store.Row:
        keys = (row["event_id"], row["constituent_id"], row["guest_key"])
        if attending:
            _save(self.work, *keys, attendance_sent=attending)
        try:
            self.crm.update_invitation(row["crm_id"], body)
        except UncertainWrite as exc:
            raise Wait(f"invitation {row['crm_id']}: the CRM's answer was lost ({exc}); reading it again later",
                       retry_after=self.confirm_after_s) from None  # fmt: skip
        kept: dict[str, object] = {k: body[k] for k in ("rsvp", "notes", "attendee_names") if k in body}
        if attending:
            kept |= {"attended_on": attending, "attendance_sent": None}
        return _save(self.work, *keys, **kept, error=None)

    def _attendance_confirmed(self, row: store.Row, on: str) -> bool:
        """Whether an attendance whose PATCH answer was lost reached the CRM (one read; never sent twice)."""
        if row["attendance_sent"] != on:
            return False
        found = self.crm.get_invitation(row["crm_id"])
        return _attended(found, on) == on


def _joined(staff: str | None, ours: str, sep: str = "; ") -> str:
    """Staff's own words first, then synctool's (an invitation taken from staff keeps what they wrote)."""
    return sep.join(p for p in ((staff or "").strip(), ours) if p)[:LIMIT]


def _attendance(on: str | None) -> dict[str, object]:
    return {"attended": 1, "attendances": [{"date": on, "notes": "checked in"}]} if on else {}


def _attended(invitation: JsonObject, on: str | None) -> str | None:
    """``on`` when the CRM's invitation holds an attendance that day, else None."""
    dates = {str(a.get("date"))[:10] for a in invitation.get("attendances") or [] if isinstance(a, dict)}
    return on if on and on in dates else None


def _named(invitation: JsonObject, guest: Guest) -> bool:
    name = str(invitation.get("guest_name") or "").strip().lower()
    return name == f"{guest.first_name} {guest.last_name}".strip().lower()


def of_event(conn: store.Connection, event_id: int) -> list[store.Row]:
    """The invitations synctool wrote to one CRM event (for ``events show``)."""
    return conn.execute("SELECT * FROM invitations WHERE event_id = ? ORDER BY constituent_id, guest_key", (event_id,)).fetchall()
