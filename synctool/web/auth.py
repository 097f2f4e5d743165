"""Who is asking, for the admin API and the staff page: a team member and their role's scopes.

Both use Starlette's ``AuthenticationMiddleware``; the API's backend reads a bearer token, the page's a
session cookie. A role's scopes include every lower role, so ``has_required_scope(request, ["admin"])``
admits an admin and a super_admin.
"""

from __future__ import annotations

from starlette.authentication import AuthCredentials, BaseUser

from synctool.ops.sign_in import User
from synctool.ops.users import ROLES

VIEWER, ADMIN, SUPER = ROLES


class TeamMember(BaseUser):
    def __init__(self, record: User):
        self.record = record

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.record["email"]

    @property
    def role(self) -> str:
        return self.record["role"]


def credentials(record: User) -> tuple[AuthCredentials, TeamMember]:
    """The scopes of the user's role and of every role below it."""
    scopes = ["authenticated", *ROLES[: ROLES.index(record["role"]) + 1]]
    return AuthCredentials(scopes), TeamMember(record)
