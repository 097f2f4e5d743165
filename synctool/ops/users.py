"""The team: users with roles (viewer, admin, super_admin) and their signed API tokens.

Tokens are JWTs (HS256) signed with ``ADMIN_JWT_SECRET`` (keyring or environment), carrying the user's
e-mail as subject, the role, an expiry and the user's token version. Verification also reads the user
row, so a deactivated user's tokens stop working at once, and a role change applies at once.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Literal, Optional, TypedDict

from pydantic import model_validator

from synctool import store
from synctool.errors import (
    ConfigError,
    Conflict,
    InvalidInput,
    InvalidSignature,
    NotFound,
)
from synctool.ops.sign_in import User
from synctool.runtime import Runtime
from synctool.validation import Body, Email

ROLES = ("viewer", "admin", "super_admin")
Role = Literal["viewer", "admin", "super_admin"]


class InviteBody(Body):
    """Spec: POST /api/users/invite."""

    email: Email
    role: Role = "viewer"


class LinkBody(Body):
    """POST /api/users/login-link: a sign-in link to the staff page, printed back or (``send``) e-mailed."""

    email: Email
    send: bool = False


class UserPatch(Body):
    """Spec: PATCH /api/users/:id. ``deactivate: true`` or ``active: false`` stops the user and their
    tokens; ``active: true`` re-activates (old tokens stay invalid)."""

    role: Optional[Role] = None
    deactivate: Optional[bool] = None
    active: Optional[bool] = None

    @model_validator(mode="after")
    def something(self) -> UserPatch:
        if self.role is None and self.deactivate is None and self.active is None:
            raise ValueError("nothing to change: give a role, deactivate or active")
        return self


class UserRecord(User):
    """A team member as `synctool users list` shows them."""

    invited_at: str
    updated_at: str


class Token(TypedDict):
    """An admin API token, who it speaks for and when it stops working."""

    token: str
    email: str
    role: str
    expires_at: str


def _row(row: store.Row) -> UserRecord:
    return {
        "id": row["id"],
        "email": row["email"],
        "role": row["role"],
        "active": bool(row["active"]),
        "invited_at": row["invited_at"],
        "updated_at": row["updated_at"],
    }


def list_users(conn: store.Connection) -> list[UserRecord]:
    return [_row(r) for r in conn.execute("SELECT * FROM users ORDER BY id")]


def invite(conn: store.Connection, body: InviteBody) -> UserRecord:
    email, role = body.email.lower(), body.role
    now = store.iso()
    with store.atomic(conn):
        if conn.execute("SELECT 1 FROM users WHERE email = ?", (email,)).fetchone():
            raise Conflict(f"{email} is already a user (change the role with `synctool users update`)")
        conn.execute(
            "INSERT INTO users (email, role, active, invited_at, updated_at) VALUES (?, ?, 1, ?, ?)", (email, role, now, now)
        )
    return _row(conn.execute("SELECT * FROM users WHERE email = ?", (email,)).fetchone())


def find_user_id(conn: store.Connection, user: str) -> int:
    """The id of the user ``user`` names: their id (``synctool users list``) or their e-mail."""
    if user.strip().isdigit():
        return int(user)
    row = conn.execute("SELECT id FROM users WHERE email = ?", (user.strip().lower(),)).fetchone()
    if row is None:
        raise NotFound(f"no user {user!r}", "`synctool users list` names them")
    return row["id"]


def update(conn: store.Connection, user_id: int, body: UserPatch) -> UserRecord:
    role = body.role
    deactivate = body.deactivate is True or body.active is False
    activate = body.active is True
    with store.atomic(conn):
        row = conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
        if row is None:
            raise NotFound(f"no user with id {user_id}")
        conn.execute(
            "UPDATE users SET role = coalesce(?, role), active = CASE WHEN ? = 1 THEN 0 WHEN ? = 1 THEN 1 ELSE active END,"
            " token_version = token_version + ?, updated_at = ? WHERE id = ?",
            (role, int(deactivate), int(activate), int(deactivate), store.iso(), user_id),
        )
        if deactivate:  # for good: reactivating later revives no session or link issued before
            from synctool.ops.sign_in import revoke

            revoke(conn, user_id)
    return _row(conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone())


def signing_secret(rt: Runtime) -> str:
    """The admin API's token signing secret; ConfigError when it is missing or too short."""
    secret = rt.secrets.get("ADMIN_JWT_SECRET")
    if not secret or len(secret) < 32:
        raise ConfigError(
            "ADMIN_JWT_SECRET",
            "keyring/environment",
            "not set, or shorter than 32 characters; the admin API's tokens are signed with it "
            "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(48))')",
        )
    return secret


def audience(org: str) -> str:
    """The ``aud`` claim of organisation ``org``'s admin API tokens (an install without organisations sets none)."""
    return f"synctool:{org}"


def issue_token(conn: store.Connection, rt: Runtime, email: str, ttl_s: int = 86400) -> Token:
    import jwt

    if not 60 <= ttl_s <= 366 * 86400:
        raise InvalidInput("the token lifetime must be between 60 s and a year")
    row = conn.execute("SELECT * FROM users WHERE email = ?", ((email or "").strip().lower(),)).fetchone()
    if row is None:
        raise NotFound(f"no user {email!r} (invite them first: synctool users invite EMAIL --role ...)")
    if not row["active"]:
        raise Conflict(f"{row['email']} is deactivated")
    now = int(time.time())
    claims = {"sub": row["email"], "role": row["role"], "iat": now, "exp": now + ttl_s, "ver": row["token_version"]}
    if rt.org:  # an organisation's token names it: another's API refuses it even where the signing secrets agree
        claims["aud"] = audience(rt.org)
    return {
        "token": jwt.encode(claims, signing_secret(rt), algorithm="HS256"),
        "email": row["email"],
        "role": row["role"],
        "expires_at": store.iso(datetime.fromtimestamp(now + ttl_s, UTC)),
    }


def verify_token(conn: store.Connection, rt: Runtime, token: str) -> UserRecord:
    """The active user behind a token, with their current role; InvalidSignature otherwise."""
    import jwt

    try:
        required = ["sub", "exp", "role", *(["aud"] if rt.org else [])]
        claims = jwt.decode(token, signing_secret(rt), algorithms=["HS256"], audience=rt.org and audience(rt.org),
                            options={"require": required})  # fmt: skip
    except jwt.ExpiredSignatureError:
        raise InvalidSignature("token expired") from None
    except jwt.PyJWTError:
        raise InvalidSignature("invalid token") from None
    row = conn.execute("SELECT * FROM users WHERE email = ?", (claims["sub"],)).fetchone()
    if row is None or not row["active"] or row["token_version"] != claims.get("ver", 0):
        raise InvalidSignature("token no longer valid (user deactivated or removed)")
    return _row(row)
