"""``FakeCrm``: the fake LGL account in memory (its records, the requests it was sent, its rate-limit window and
the faults it was told to make); tests read and seed it directly in process. Its events and invitations are
``invitations.Invitations``."""

from __future__ import annotations

import copy
import itertools
import threading
from collections import deque
from typing import Any

from synctool.fakes.crm.invitations import Invitations
from synctool.fakes.crm.reference import CONTACT_KINDS, GIFT_FIELDS, TAG_CATEGORY, now_stamp


class FakeCrm(Invitations):
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
        #: POST /constituents/{id}/group_memberships answers ``{api_version}`` alone (LGL documents "200 Ok" with no
        #: body: whether it returns the membership is not known), for the tests of synctool's read-back
        self.bare_group_membership_answer = False
        #: contact report id -> the report as ``GET /contact_reports/{id}`` answers it
        self.contact_reports: dict[int, dict] = {}
        self.keywords: dict[int, set[int]] = {}
        self.gift_fields = copy.deepcopy(GIFT_FIELDS)
        self.requests: list[dict] = []
        self.recent: deque[float] = deque()
        self.rejected_429 = 0
        self.faults: list[dict] = []
        #: how a request about a deleted constituent is answered: 404, or 422/400 naming the constituent
        self.gone_status = 404

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
            "group_memberships": len(self.group_memberships),
            "contact_reports": len(self.contact_reports),
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
