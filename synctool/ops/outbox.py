"""Mail that waits to be sent: a request never talks to the mail server.

"Send me a link" on the staff page and an invitation sent from its team page put a row here and answer at once,
the same way whoever asked, so neither the answer nor its time tells a stranger who is on the team, and a slow
or broken mail server never holds a request. ``synctool drain`` (cron's, or the drain unit's ``--watch``) sends
what is due. A sign-in row holds the user, never a link: the link is made as the mail leaves, so the database
holds no usable secret, and its 15 minutes start when it is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from synctool import store
from synctool.errors import ConfigError, SynctoolError
from synctool.runtime import Runtime

logger = logging.getLogger("synctool.outbox")

SIGN_IN = "sign_in"
#: a sign-in mail not sent by then is dropped: whoever asked has given up or asked again
SIGN_IN_GIVE_UP = timedelta(minutes=15)
#: the mail waiting to be sent (a mail sent after a failure keeps the failure's error for doctor)
MAIL = store.Outgoing("outbox", key="id", order="id", what="mail", log=logger)
#: a failed send is tried again a minute later, at most this many times in all
MAX_ATTEMPTS = MAIL.max_attempts


def queue_sign_in(conn: store.Connection, user_id: int, email: str) -> int:
    """A sign-in link for ``user_id``, to be made and mailed by the next drain."""
    now = store.iso()
    with store.atomic(conn):
        made = conn.execute(
            "INSERT INTO outbox (kind, user_id, recipients, created_at, send_after) VALUES (?, ?, ?, ?, ?) RETURNING id",
            (SIGN_IN, user_id, email, now, now),
        ).fetchone()
    return int(made[0])


#: how each kind of mail is sent: (connection, runtime, its outbox row) -> None, raising SynctoolError when it was not
Sender = Callable[[store.Connection, Runtime, store.Row], None]


def send_due(conn: store.Connection, rt: Runtime, senders: Mapping[str, Sender], *, limit: int = 50) -> dict[str, int]:
    """Send what is due through its kind's sender; a failure waits and is tried again, up to MAX_ATTEMPTS. Never
    raises for a mail problem (drain goes on): the failures are in ``problems`` for doctor and the overview."""
    now = store.utcnow()

    def given_up(row: store.Row) -> str | None:
        late = row["kind"] == SIGN_IN and row["created_at"] < store.iso(now - SIGN_IN_GIVE_UP)
        return "not sent within 15 minutes of the request; dropped" if late else None

    def attempt(row: store.Row) -> str | None:
        try:
            if row["kind"] not in senders:
                raise ConfigError("outbox", "database", f"unknown kind of mail {row['kind']!r}")
            senders[row["kind"]](conn, rt, row)
        except SynctoolError as exc:
            detail = getattr(exc, "detail", "")
            return str(exc) + (f" ({detail})" if detail else "")
        return None

    return MAIL.send(conn, MAIL.due(conn, now, limit), now, attempt, given_up)


def problems(conn: store.Connection) -> dict[str, Any]:
    """What doctor and the overview say of the outbox: mail that failed for good in the last day, mail waiting
    longer than a drain should take, and the newest error (which names the mail server, never a recipient)."""
    return MAIL.problems(conn, late_after=timedelta(minutes=5))
