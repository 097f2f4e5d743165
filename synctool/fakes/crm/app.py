"""The fake LGL's routes table (one row per operation of LGL's API, under ``/api/v1``) and ``create_app``: the
table behind ``gate.Gate`` (recording, rate limit, authentication, faults), then the fake's own controls."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware

from synctool.fakes.crm import constituents, contact_reports, control, events, gifts, lists, memberships
from synctool.fakes.crm.gate import Gate
from synctool.fakes.crm.reference import REFERENCE
from synctool.fakes.crm.state import FakeCrm
from synctool.platforms.fake import Row, routes

ROUTES: list[Row] = [
    ("GET", "/constituents/search", constituents.search),
    ("GET", "/constituents", constituents.listing),
    ("POST", "/constituents", constituents.create),
    ("GET", "/constituents/{id:int}", constituents.show),
    ("PATCH", "/constituents/{id:int}", constituents.update),
    ("DELETE", "/constituents/{id:int}", constituents.delete),
    *constituents.contact_rows("email_addresses"),
    *constituents.contact_rows("phone_numbers"),
    *constituents.contact_rows("street_addresses"),
    *constituents.contact_rows("web_addresses"),
    ("POST", "/constituents/{cid:int}/keywords", constituents.add_keyword),
    ("DELETE", "/constituents/{cid:int}/keywords/{id:int}", constituents.remove_keyword),
    *memberships.rows("memberships"),
    *memberships.rows("constituent_relationships"),
    *memberships.rows("group_memberships"),
    ("GET", "/constituents/{cid:int}/contact_reports", contact_reports.of_constituent),
    ("POST", "/constituents/{cid:int}/contact_reports", contact_reports.create),
    ("GET", "/contact_reports", contact_reports.listing),
    ("GET", "/contact_reports/{id:int}", contact_reports.show),
    ("PATCH", "/contact_reports/{id:int}", contact_reports.update),
    ("DELETE", "/contact_reports/{id:int}", contact_reports.delete),
    ("GET", "/constituents/{cid:int}/gifts", gifts.of_constituent),
    ("POST", "/constituents/{cid:int}/gifts", gifts.create),
    ("GET", "/gifts/search", gifts.search),
    ("GET", "/gifts/{id:int}", gifts.show),
    ("PATCH", "/gifts/{id:int}", gifts.update),
    ("DELETE", "/gifts/{id:int}", gifts.delete),
    ("GET", "/events", events.listing),
    ("GET", "/events/{event_id:int}/invitations", events.invitations),
    ("POST", "/events/{event_id:int}/invitations", events.invite),
    ("GET", "/constituents/{cid:int}/invitations", events.of_constituent),
    ("POST", "/constituents/{cid:int}/invitations", events.invite_constituent),
    ("GET", "/invitations/{id:int}", events.show),
    ("PATCH", "/invitations/{id:int}", events.update),
    ("DELETE", "/invitations/{id:int}", events.delete),
    ("GET", "/categories", lists.categories),
    ("GET", "/categories/{id:int}/keywords", lists.keywords),
    ("POST", "/categories/{id:int}/keywords", lists.add_keyword),
    *[("GET", f"/{kind}", lists.reference(kind)) for kind in REFERENCE],
    ("GET", "/types/{type}", lists.types),
]

CONTROLS: list[Row] = [
    ("POST", "/_fake/faults", control.faults),
    ("GET", "/_fake/state", control.state),
    ("POST", "/_fake/reset", control.reset),
]


def create_app(crm: FakeCrm | None = None) -> Starlette:
    crm = crm or FakeCrm()
    api = [(method, "/api/v1" + path, endpoint) for method, path, endpoint in ROUTES]
    app = Starlette(routes=routes(api + CONTROLS), middleware=[Middleware(Gate, crm=crm)])
    app.state.fake = crm
    return app
