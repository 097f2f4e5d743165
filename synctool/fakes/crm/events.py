"""Events and their invitations, as ``lgl-openapi.json`` describes them: ``GET /events``, an event's invitations
(``/events/{event_id}/invitations``: list, create), a constituent's (``/constituents/{cid}/invitations``: list,
create) and ``/invitations/{id}`` (show, update, delete). What an invitation may say, and what LGL derives on it,
is ``invitations.py``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.fakes.crm.answers import (
    body_of,
    constituent_gone,
    constituent_of,
    deleted,
    envelope,
    fake,
    invalid,
    not_found,
    record,
)
from synctool.fakes.crm.invitations import InvitationRefused, clean_invitation_body
from synctool.fakes.crm.reference import INVITATION_CONST_FIELDS, INVITATION_FIELDS


def refused(exc: InvitationRefused) -> JSONResponse:
    return not_found() if exc.status == 404 else invalid(exc.description, exc.status)


async def listing(request: Request) -> Response:
    """``GET /events``."""
    return envelope([dict(e) for e in fake(request).events.values()], request, "event")


async def invitations(request: Request) -> Response:
    """``GET /events/{event_id}/invitations``."""
    crm, event_id = fake(request), request.path_params["event_id"]
    if event_id not in crm.events:
        return not_found()
    return envelope([dict(i) for i in crm.invitations.values() if i["event_id"] == event_id], request, "invitation")


async def invite(request: Request) -> Response:
    """``POST /events/{event_id}/invitations``: ``Invitations_Post_Invitations_CreateBody``."""
    crm, event_id = fake(request), request.path_params["event_id"]
    if event_id not in crm.events:
        return not_found()
    try:
        made = crm.create_invitation(event_id, await body_of(request), INVITATION_FIELDS)
    except InvitationRefused as exc:
        return refused(exc)
    return record(made)


async def of_constituent(request: Request) -> Response:
    """``GET /constituents/{cid}/invitations``: its own and its guests'."""
    c = constituent_of(request)
    if c is None:
        return constituent_gone(request)
    return envelope([dict(i) for i in fake(request).constituent_invitations(c["id"])], request, "invitation")


async def invite_constituent(request: Request) -> Response:
    """``POST /constituents/{cid}/invitations``: ``Invitations_Post_Invitations_CreateBody_Const`` (``event_id``; the
    path names the constituent, the body has no ``constituent_id`` of its own)."""
    c = constituent_of(request)
    if c is None:
        return constituent_gone(request)
    body = await body_of(request)
    try:
        fields = clean_invitation_body(body, INVITATION_CONST_FIELDS)
        if not fields.get("event_id"):
            raise InvitationRefused(422, "event_id can't be blank")
        event_id = fields.pop("event_id")
        made = fake(request).create_invitation(event_id, {**fields, "constituent_id": c["id"]}, INVITATION_FIELDS)
    except InvitationRefused as exc:
        return refused(exc)
    return record(made)


async def show(request: Request) -> Response:
    """``GET /invitations/{id}``."""
    found = fake(request).invitations.get(request.path_params["id"])
    return not_found() if found is None else record(found)


async def update(request: Request) -> Response:
    """``PATCH /invitations/{id}``: ``Invitations_Patch_Id_UpdateBody``."""
    crm, iid = fake(request), request.path_params["id"]
    if iid not in crm.invitations:
        return not_found()
    try:
        return record(crm.update_invitation(iid, await body_of(request)))
    except InvitationRefused as exc:
        return refused(exc)


async def delete(request: Request) -> Response:
    """``DELETE /invitations/{id}``."""
    crm, iid = fake(request), request.path_params["id"]
    if iid not in crm.invitations:
        return not_found()
    crm.delete_invitation(iid)
    return deleted()
