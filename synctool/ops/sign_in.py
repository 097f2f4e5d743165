"""Signing in to the staff page without a password: one-time links and the sessions they open.

A link (``synctool users login-link EMAIL``, ``users invite --send``, the page's "send me a link" form) is
good for 15 minutes and once. Following it shows a button; only the button's POST spends the link, so a mail
scanner that fetches every link in a message does not use it up. The session it opens lasts 8 hours, or until
sign-out; every request reads the user again, so a deactivated user's session ends at their next request and
a role change applies at once. The database keeps the SHA-256 of each link and session secret, never the
secret itself: a copy of the database opens no session.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from synctool import store
from synctool.errors import Conflict, InvalidSignature, NotFound
from synctool.runtime import Runtime

LINK_TTL = timedelta(minutes=15)
SESSION_TTL = timedelta(hours=8)
#: the page's own path, under the receiver's public URL
PAGE_PATH = "/admin"


@dataclass(frozen=True)
class Session:
    """A signed-in browser: ``secret`` goes in the cookie, ``csrf`` in every form."""

    secret: str
    csrf: str
    user: dict[str, Any]
    expires_at: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def base_url(conn: sqlite3.Connection, rt: Runtime) -> str:
    """Where staff reach this synctool: the public URL (``receiver.public_url`` or ``webhooks register``), else
    the receiver's own address."""
    from synctool.ops.webhooks import public_url

    found = public_url(conn, rt)
    if found:
        return found.rstrip("/")
    receiver = rt.config.receiver
    return f"http://{receiver.host}:{receiver.port}"


def _active_user(conn: sqlite3.Connection, email: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM users WHERE email = ?", ((email or "").strip().lower(),)).fetchone()
    if row is None:
        raise NotFound(f"no user {email!r} (invite them first: synctool users invite EMAIL --role ...)")
    if not row["active"]:
        raise Conflict(f"{row['email']} is deactivated (synctool users update {row['id']} --activate)")
    return row


def login_link(conn: sqlite3.Connection, rt: Runtime, email: str) -> dict[str, Any]:
    """A new one-time sign-in link for an active user."""
    user = _active_user(conn, email)
    token = secrets.token_urlsafe(32)
    now = store.utcnow()
    expires_at = store.iso(now + LINK_TTL)
    with store.atomic(conn):
        conn.execute(
            "INSERT INTO login_links (token_hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
            (_digest(token), user["id"], store.iso(now), expires_at),
        )
    return {
        "email": user["email"],
        "role": user["role"],
        "url": f"{base_url(conn, rt)}{PAGE_PATH}/login/{token}",
        "expires_at": expires_at,
    }


def mail_link(conn: sqlite3.Connection, rt: Runtime, email: str) -> dict[str, Any]:
    """Make a sign-in link and e-mail it through the alert mail settings (``smtp:``)."""
    from synctool.ops.alerts import send_mail

    link = login_link(conn, rt, email)
    minutes = int(LINK_TTL.total_seconds() // 60)
    body = (
        f"Sign in to synctool's staff page as {link['email']} ({link['role']}):\n\n{link['url']}\n\n"
        f"The link works once, for {minutes} minutes. If you did not ask for it, ignore this message.\n"
    )
    send_mail(rt, [link["email"]], "Your synctool sign-in link", body)
    return {"email": link["email"], "role": link["role"], "sent": True, "expires_at": link["expires_at"]}


def request_link(conn: sqlite3.Connection, rt: Runtime, email: str) -> bool:
    """The "send me a link" form: e-mail a link when ``email`` is an active user. The answer the page shows is
    the same either way (the form tells no one who is a user); the return value is for the log."""
    try:
        mail_link(conn, rt, email)
    except (NotFound, Conflict):
        return False
    return True


def link_user(conn: sqlite3.Connection, token: str) -> dict[str, Any]:
    """Who a link is for, without spending it (the page a link opens); InvalidSignature when it is not good."""
    row = conn.execute(
        "SELECT l.*, u.email, u.role, u.active FROM login_links l JOIN users u ON u.id = l.user_id WHERE l.token_hash = ?",
        (_digest(token),),
    ).fetchone()
    if row is None:
        raise InvalidSignature("this sign-in link is not valid", "ask for a new one")
    if row["used_at"] is not None:
        raise InvalidSignature("this sign-in link was used already", "each link works once: ask for a new one")
    if row["expires_at"] <= store.iso():
        raise InvalidSignature("this sign-in link has expired", "links last 15 minutes: ask for a new one")
    if not row["active"]:
        raise InvalidSignature(f"{row['email']} is deactivated", "ask a super_admin")
    return {"email": row["email"], "role": row["role"]}


def redeem(conn: sqlite3.Connection, token: str) -> Session:
    """Spend a link (once, whoever asks first) and open its session."""
    now = store.iso()
    with store.atomic(conn):
        link_user(conn, token)  # says why a link is refused
        spent = conn.execute(
            "UPDATE login_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?",
            (now, _digest(token), now),
        )
        if spent.rowcount != 1:
            raise InvalidSignature("this sign-in link was used already", "each link works once: ask for a new one")
        user_id = conn.execute("SELECT user_id FROM login_links WHERE token_hash = ?", (_digest(token),)).fetchone()[0]
        secret, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        expires_at = store.iso(store.utcnow() + SESSION_TTL)
        conn.execute(
            "INSERT INTO staff_sessions (id_hash, user_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
            (_digest(secret), user_id, csrf, now, expires_at),
        )
        user = dict(conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone())
    return Session(secret, csrf, _public(user), expires_at)


def _public(user: dict[str, Any]) -> dict[str, Any]:
    return {k: user[k] for k in ("id", "email", "role")} | {"active": bool(user["active"])}


def session(conn: sqlite3.Connection, secret: str) -> Session:
    """The open session behind a cookie, with its user as they are now; InvalidSignature when it has ended,
    expired, or its user was deactivated (which ends it)."""
    row = conn.execute(
        "SELECT s.*, u.email, u.role, u.active FROM staff_sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = ?",
        (_digest(secret),),
    ).fetchone()
    if row is None or row["ended_at"] is not None:
        raise InvalidSignature("signed out", "sign in again")
    if row["expires_at"] <= store.iso():
        raise InvalidSignature("your session has expired", "sessions last 8 hours: sign in again")
    if not row["active"]:
        end(conn, secret)
        raise InvalidSignature(f"{row['email']} is deactivated", "ask a super_admin")
    user = {"id": row["user_id"], "email": row["email"], "role": row["role"], "active": True}
    return Session(secret, row["csrf"], user, row["expires_at"])


def say(conn: sqlite3.Connection, secret: str, message: str) -> None:
    """A message for the session's next page (what an action did, or why it was refused)."""
    with store.atomic(conn):
        conn.execute("UPDATE staff_sessions SET flash = ? WHERE id_hash = ?", (message, _digest(secret)))


def said(conn: sqlite3.Connection, secret: str) -> str | None:
    """The message waiting for this session's page, once."""
    row = conn.execute("SELECT flash FROM staff_sessions WHERE id_hash = ?", (_digest(secret),)).fetchone()
    if row is None or row["flash"] is None:
        return None
    with store.atomic(conn):
        conn.execute("UPDATE staff_sessions SET flash = NULL WHERE id_hash = ?", (_digest(secret),))
    return row["flash"]


def csrf_ok(found: Session, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(found.csrf, token or "")


def end(conn: sqlite3.Connection, secret: str) -> None:
    """Sign out: the session ends now."""
    with store.atomic(conn):
        conn.execute(
            "UPDATE staff_sessions SET ended_at = ? WHERE id_hash = ? AND ended_at IS NULL", (store.iso(), _digest(secret))
        )
