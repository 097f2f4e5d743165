"""The team (``/admin/team``, super_admin): who may sign in, with what role, as `synctool users` lists them;
inviting and changing a team member."""

from __future__ import annotations

from typing import TypedDict

from synctool.errors import InvalidInput
from synctool.ops import outbox, users
from synctool.web.pages import forms
from synctool.web.pages.base import ActionResult, ViewResult
from synctool.web.request import StaffRequest


class TeamPage(TypedDict):
    users: list[users.UserRecord]


def team(request: StaffRequest) -> ViewResult:
    return ViewResult(TeamPage(users=users.list_users(request.conn)))


def invite(request: StaffRequest) -> ActionResult:
    given = {"email": request.form.get("email"), "role": request.form.get("role") or "viewer"}
    user = users.invite(request.conn, forms.read(users.InviteBody, given, {"email": "e-mail address"}))
    message = f"{user['email']} is invited as {user['role']}."
    if request.form.get("send"):  # through the outbox: the page never waits for the mail server
        outbox.queue_sign_in(request.conn, user["id"], user["email"])
        message += " A sign-in link will be on its way to them at the next drain."
    return ActionResult(message, user["email"])


def change_user(request: StaffRequest) -> ActionResult:
    what = request.form.get("change")
    changes: dict[str, dict[str, object]] = {
        "role": {"role": request.form.get("role")},
        "deactivate": {"deactivate": True},
        "activate": {"active": True},
    }
    patch = changes.get(what or "", {})
    if not patch:
        raise InvalidInput("say what to change", "role, deactivate or activate")
    if request.path["id"] == request.user["id"] and (what != "role" or patch["role"] != "super_admin"):
        # the last super_admin locking themselves out would leave the team page to no one
        raise InvalidInput("you cannot lower or deactivate yourself here", "another super admin can")
    user = users.update(request.conn, request.path["id"], forms.read(users.UserPatch, patch))
    state = "active" if user["active"] else "deactivated"
    return ActionResult(f"{user['email']} is now {user['role']}, {state}.", user["email"])
