"""Events and their invitations, as ``lgl-openapi.json`` describes them: ``GET /events``, an event's invitations
(``/events/{event_id}/invitations``: list, create), a constituent's (``/constituents/{cid}/invitations``: list,
create) and ``/invitations/{id}`` (show, update, delete). What an invitation may say, and what LGL derives on it,
is ``invitations.py``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.fakes.crm import answers
from synctool.fakes.crm.invitations import InvitationRefused, clean_invitation_body
from synctool.fakes.crm.reference import INVITATION_CONST_FIELDS, INVITATION_FIELDS


def refused(exc: InvitationRefused) -> JSONResponse:
    return answers.not_found() if exc.status == 404 else answers.invalid(exc.description, exc.status)


async def listing(request: Request) -> Response:
    """``GET /events``."""
    return answers.envelope([dict(e) for e in answers.fake(request).events.values()], request, "event")


async def invitations(request: Request) -> Response:
    """``GET /events/{event_id}/invitations``."""
    crm, event_id = answers.fake(request), request.path_params["event_id"]
    if event_id not in crm.events:
        return answers.not_found()
    return answers.envelope([dict(i) for i in crm.invitations.values() if i["event_id"] == event_id], request, "invitation")


async def invite(request: Request) -> Response:
    """``POST /events/{event_id}/invitations``: ``Invitations_Post_Invitations_CreateBody``."""
    crm, event_id = answers.fake(request), request.path_params["event_id"]
    if event_id not in crm.events:
        return answers.not_found()
    try:
        made = crm.create_invitation(event_id, await answers.body_of(request), INVITATION_FIELDS)
    except InvitationRefused as exc:
        return refused(exc)
    return answers.record(made)


async def of_constituent(request: Request) -> Response:
    """``GET /constituents/{cid}/invitations``: its own and its guests'."""
    c = answers.constituent_of(request)
    return answers.envelope([dict(i) for i in answers.fake(request).constituent_invitations(c["id"])], request, "invitation")


async def invite_constituent(request: Request) -> Response:
    """``POST /constituents/{cid}/invitations``: ``Invitations_Post_Invitations_CreateBody_Const`` (``event_id``; the
    path names the constituent, the body has no ``constituent_id`` of its own)."""
    c = answers.constituent_of(request)
    body = await answers.body_of(request)
    try:
        fields = clean_invitation_body(body, INVITATION_CONST_FIELDS)
        if not fields.get("event_id"):
            raise InvitationRefused(422, "event_id can't be blank")
        event_id = fields.pop("event_id")
        made = answers.fake(request).create_invitation(event_id, {**fields, "constituent_id": c["id"]}, INVITATION_FIELDS)
    except InvitationRefused as exc:
        return refused(exc)
    return answers.record(made)


async def show(request: Request) -> Response:
    """``GET /invitations/{id}``."""
    return answers.record(answers.existing(answers.fake(request).invitations.get(request.path_params["id"])))


async def update(request: Request) -> Response:
    """``PATCH /invitations/{id}``: ``Invitations_Patch_Id_UpdateBody``."""
    crm, iid = answers.fake(request), request.path_params["id"]
    if iid not in crm.invitations:
        return answers.not_found()
    try:
        return answers.record(crm.update_invitation(iid, await answers.body_of(request)))
    except InvitationRefused as exc:
        return refused(exc)


async def delete(request: Request) -> Response:
    """``DELETE /invitations/{id}``."""
    crm, iid = answers.fake(request), request.path_params["id"]
    if iid not in crm.invitations:
        return answers.not_found()
    crm.delete_invitation(iid)
    return answers.deleted()
