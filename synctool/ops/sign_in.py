"""Signing in to the staff page without a password: one-time links and the sessions they open.

A link (``synctool users login-link EMAIL``, ``users invite --send``, the page's "send me a link" form) is
good for 15 minutes and once. Following it shows a button; only the button's POST spends the link, so a mail
scanner that fetches (GET, HEAD) every link in a message does not use it up. The session it opens lasts 8 hours,
or until sign-out; every request reads the user again, so a role change applies at once. Deactivating a user
ends their sessions and unused links for good: a later reactivation needs a new link. The database keeps the
SHA-256 of each link and session secret, never the secret itself: a copy of the database opens no session.

"Send me a link" answers the same whoever asks: the link waits in the outbox (``synctool.ops.outbox``) for the
next drain, and requests are limited per address and per client (``sign_in_requests``, kept as digests).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TypedDict

from synctool import store
from synctool.errors import Conflict, InvalidSignature, NotFound
from synctool.runtime import Runtime

LINK_TTL = timedelta(minutes=15)
SESSION_TTL = timedelta(hours=8)
#: the page's own path, under the receiver's public URL
PAGE_PATH = "/admin"


class SignedOut(InvalidSignature):
    """A session that no longer opens the page; ``code`` is what the sign-in page may say of it (``MESSAGES``)."""

    def __init__(self, message: str, detail: str = "", *, code: str):
        super().__init__(message, detail)
        self.code = code


#: the only things the sign-in page says, by the code in its URL (``?why=expired``): never text from the URL
MESSAGES = {
    "signed-out": "You are signed out. Ask for a new link to sign in.",
    "expired": "Your session has expired (sessions last 8 hours). Ask for a new link to sign in.",
    "deactivated": "This account is deactivated. Ask a super_admin.",
    "email": "Give your e-mail address.",
}


class User(TypedDict):
    """A team member as a request knows them (a session's, a token's)."""

    id: int
    email: str
    role: str
    active: bool


class LinkRecipient(TypedDict):
    """Who a sign-in link is for."""

    email: str
    role: str


class SignInLink(LinkRecipient):
    url: str
    expires_at: str


class MailedLink(LinkRecipient):
    sent: bool
    expires_at: str


@dataclass(frozen=True)
class Session:
    """A signed-in browser: ``secret`` goes in the cookie, ``csrf`` in every form."""

    secret: str
    csrf: str
    user: User
    expires_at: str


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def base_url(conn: store.Connection, rt: Runtime) -> str:
    """Where staff reach this synctool: the public URL (``receiver.public_url`` or ``webhooks register``), else
    the receiver's own address."""
    from synctool.ops.webhooks import public_url

    found = public_url(conn, rt)
    if found:
        return found.rstrip("/")
    receiver = rt.config.receiver
    return f"http://{receiver.host}:{receiver.port}"


def _active_user(conn: store.Connection, email: str) -> store.Row:
    row = conn.execute("SELECT * FROM users WHERE email = ?", ((email or "").strip().lower(),)).fetchone()
    if row is None:
        raise NotFound(f"no user {email!r} (invite them first: synctool users invite EMAIL --role ...)")
    if not row["active"]:
        raise Conflict(f"{row['email']} is deactivated (synctool users update {row['id']} --activate)")
    return row


def login_link(conn: store.Connection, rt: Runtime, email: str) -> SignInLink:
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
        "url": f"{base_url(conn, rt)}{rt.path_prefix}{PAGE_PATH}/login/{token}",
        "expires_at": expires_at,
    }


def mail_link(conn: store.Connection, rt: Runtime, email: str) -> MailedLink:
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


#: "send me a link": at most this many requests per address, and per client address, in each window
PER_ADDRESS = (3, timedelta(minutes=15))
PER_CLIENT = (20, timedelta(hours=1))
MAX_EMAIL = 254


def send_link(conn: store.Connection, rt: Runtime, queued: store.Row) -> None:
    """The outbox's sender of a queued sign-in mail: the link is made now, as it leaves."""
    mail_link(conn, rt, queued["recipients"])


def request_link(conn: store.Connection, email: str, client: str) -> str:
    """The "send me a link" form: queue a link for an active user, within the rate limits. The work is the same
    whoever asks (one transaction: the request is counted, the user looked up, the mail queued), and the page
    answers the same; the return value (``queued``, ``unknown``, ``deactivated``, ``limited``) is for the log."""
    address = (email or "").strip().lower()[:MAX_EMAIL]
    now = store.utcnow()
    email_key, client_key = _digest("email:" + address), _digest("client:" + (client or ""))
    with store.atomic(conn):
        # counted and recorded alone, on every machine sharing the database (SQLite's one writer already is)
        store.exclusive(conn, "sign-in")
        by_address = conn.execute(
            "SELECT count(*) FROM sign_in_requests WHERE email_hash = ? AND at > ?",
            (email_key, store.iso(now - PER_ADDRESS[1])),
        ).fetchone()[0]
        by_client = conn.execute(
            "SELECT count(*) FROM sign_in_requests WHERE client_hash = ? AND at > ?",
            (client_key, store.iso(now - PER_CLIENT[1])),
        ).fetchone()[0]
        user = conn.execute("SELECT id, email, active FROM users WHERE email = ?", (address,)).fetchone()
        if by_address >= PER_ADDRESS[0] or by_client >= PER_CLIENT[0]:
            # not counted: whoever keeps an address at its limit has links sent to its owner, and no more
            return "limited"
        conn.execute(
            "INSERT INTO sign_in_requests (at, email_hash, client_hash) VALUES (?, ?, ?)", (store.iso(now), email_key, client_key)
        )
        if user is None:
            return "unknown"
        if not user["active"]:
            return "deactivated"
        from synctool.ops.outbox import queue_sign_in

        queue_sign_in(conn, user["id"], user["email"])
    return "queued"


def link_user(conn: store.Connection, token: str) -> LinkRecipient:
    """Who a link is for, without spending it (the page a link opens); InvalidSignature when it is not good."""
    row = conn.execute(
        "SELECT l.*, u.email, u.role, u.active FROM login_links l JOIN users u ON u.id = l.user_id WHERE l.token_hash = ?",
        (_digest(token),),
    ).fetchone()
    if row is None:
        raise InvalidSignature("this sign-in link is not valid", "ask for a new one")
    if row["revoked_at"] is not None:
        raise InvalidSignature("this sign-in link was withdrawn", "ask for a new one")
    if row["used_at"] is not None:
        raise InvalidSignature("this sign-in link was used already", "each link works once: ask for a new one")
    if row["expires_at"] <= store.iso():
        raise InvalidSignature("this sign-in link has expired", "links last 15 minutes: ask for a new one")
    if not row["active"]:
        raise InvalidSignature(f"{row['email']} is deactivated", "ask a super_admin")
    return {"email": row["email"], "role": row["role"]}


def redeem(conn: store.Connection, token: str) -> Session:
    """Spend a link (once, whoever asks first) and open its session."""
    now = store.iso()
    with store.atomic(conn):
        link_user(conn, token)  # says why a link is refused
        spent = conn.execute(
            "UPDATE login_links SET used_at = ? WHERE token_hash = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?",
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
        user = conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
    return Session(secret, csrf, _public(user), expires_at)


def _public(user: store.Row) -> User:
    return {"id": user["id"], "email": user["email"], "role": user["role"], "active": bool(user["active"])}


def session(conn: store.Connection, secret: str) -> Session:
    """The open session behind a cookie, with its user as they are now; InvalidSignature when it has ended,
    expired, or its user was deactivated (which ends it)."""
    row = conn.execute(
        "SELECT s.*, u.email, u.role, u.active FROM staff_sessions s JOIN users u ON u.id = s.user_id WHERE s.id_hash = ?",
        (_digest(secret),),
    ).fetchone()
    if row is not None and not row["active"]:
        raise SignedOut(f"{row['email']} is deactivated", "ask a super_admin", code="deactivated")
    if row is None or row["ended_at"] is not None or row["revoked_at"] is not None:
        raise SignedOut("signed out", "sign in again", code="signed-out")
    if row["expires_at"] <= store.iso():
        raise SignedOut("your session has expired", "sessions last 8 hours: sign in again", code="expired")
    user: User = {"id": row["user_id"], "email": row["email"], "role": row["role"], "active": True}
    return Session(secret, row["csrf"], user, row["expires_at"])


def revoke(conn: store.Connection, user_id: int) -> None:
    """Deactivation: the user's open sessions and unused links end for good (a reactivation revives neither)."""
    now = store.iso()
    with store.atomic(conn):
        conn.execute("UPDATE login_links SET revoked_at = ? WHERE user_id = ? AND used_at IS NULL AND revoked_at IS NULL",
                     (now, user_id))  # fmt: skip
        conn.execute(
            "UPDATE staff_sessions SET revoked_at = ?, ended_at = coalesce(ended_at, ?) WHERE user_id = ? AND revoked_at IS NULL",
            (now, now, user_id),
        )
        conn.execute("DELETE FROM outbox WHERE user_id = ? AND sent_at IS NULL", (user_id,))


def flash(conn: store.Connection, secret: str, message: str) -> None:
    """A message for the session's next page (what an action did, or why it was refused)."""
    with store.atomic(conn):
        conn.execute("UPDATE staff_sessions SET flash = ? WHERE id_hash = ?", (message, _digest(secret)))


def take_flash(conn: store.Connection, secret: str) -> str | None:
    """The message waiting for this session's page (``flash``), once."""
    row = conn.execute("SELECT flash FROM staff_sessions WHERE id_hash = ?", (_digest(secret),)).fetchone()
    if row is None or row["flash"] is None:
        return None
    with store.atomic(conn):
        conn.execute("UPDATE staff_sessions SET flash = NULL WHERE id_hash = ?", (_digest(secret),))
    return row["flash"]


def csrf_ok(found: Session, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(found.csrf, token or "")


def end(conn: store.Connection, secret: str) -> None:
    """Sign out: the session ends now."""
    with store.atomic(conn):
        conn.execute(
            "UPDATE staff_sessions SET ended_at = ? WHERE id_hash = ? AND ended_at IS NULL", (store.iso(), _digest(secret))
        )
