"""Chat notices: a line a person should hear as it happens (a monthly donor's plan failed, was paused or canceled),
sent to the Slack or Teams incoming webhook the organisation names (setting ``plans_chat_webhook``).

A job never talks to the chat service: ``queue`` records the line once per key (a replayed webhook queues nothing
more) inside the job's own commit, and ``synctool drain`` sends what is due (``send_due``), as it sends the mail of
the outbox. Each notice is one ``POST {"text": ...}`` (both services' incoming webhooks take that field), bounded
to ``MAX_TEXT`` characters, with a timeout; a failed send is tried again a minute later, ``NOTICES.max_attempts``
times in all, then given up with its error kept. Only an ``https`` URL is used. The URL holds the webhook's secret, so it is
never printed, logged or kept in an error: only its host is (``host``). The text never carries a secret: the
URL, bearer tokens and long token-like words are taken out, and Slack's control characters (``<``, ``>``, ``&``)
are escaped so a donor's name cannot ping a channel.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from synctool import settings, store
from synctool.errors import InvalidInput
from synctool.runtime import Runtime

if TYPE_CHECKING:
    import httpx  # imported when a notice is sent: cron's idle drain loads no HTTP client

logger = logging.getLogger("synctool.notices")

#: the setting naming the incoming-webhook URL (absent: no chat notices)
WEBHOOK_SETTING = "plans_chat_webhook"
#: a notice's text is cut to this many characters (Slack shows 4,000 at most; a line needs far fewer)
MAX_TEXT = 2000
#: a notice not sent within this is dropped: news a day old is the daily summary's
GIVE_UP_AFTER = timedelta(days=1)
TIMEOUT_S = 10.0
#: the transport role a Runtime may hand an httpx transport for (tests, the demo)
ROLE = "chat"
#: the notices waiting to be sent (a notice sent after a failure forgets the failure)
NOTICES = store.Outgoing(
    "chat_notices", key="key", order="created_at", what="chat notice", log=logger, clear_error_when_sent=True
)

_TOKENS = re.compile(r"(?i)\bbearer\s+\S+|https?://\S+|\b[A-Za-z0-9_\-]{32,}\b")


#: the hosts of Slack's and Teams' incoming webhooks (Teams' Workflows post through Logic Apps / Power Platform):
#: the donor lines go to none other, whoever sets the URL (an admin token stolen would otherwise redirect them)
CHAT_HOSTS = ("hooks.slack.com", ".webhook.office.com", ".logic.azure.com", ".api.powerplatform.com")
MAX_URL = 2_000


def check_url(url: str, also: Sequence[str] = ()) -> str:
    """The URL if it is an https URL of a Slack or Teams webhook host, or of one of ``also`` (the config's
    ``organisation.chat_webhook_hosts``), else InvalidInput (which never repeats the URL: it is a secret)."""
    url = url.strip()
    example = "e.g. https://hooks.slack.com/services/..."
    if len(url) > MAX_URL:
        raise InvalidInput(f"the chat webhook URL is longer than {MAX_URL} characters", example)
    try:
        parts = urlsplit(url)
        name = (parts.hostname or "").lower()
        parts.port  # noqa: B018  (raises ValueError on a port that is no number)
        import httpx

        httpx.URL(url)
        name.encode("idna")
    except (ValueError, UnicodeError):
        raise InvalidInput("the chat webhook is not a URL", example) from None
    if parts.scheme != "https" or not name:
        raise InvalidInput("the chat webhook must be an https:// URL with a host", example)
    if parts.username or parts.password:
        raise InvalidInput("the chat webhook URL must not carry a user or password")
    if name not in {h.lower() for h in also} and not any(
        name == h or (h.startswith(".") and name.endswith(h)) for h in CHAT_HOSTS
    ):
        raise InvalidInput(
            f"the chat webhook's host {name} is not Slack's or Teams'",
            "hooks.slack.com, *.webhook.office.com, *.logic.azure.com or *.api.powerplatform.com (another: name it in"
            " config.yaml's organisation.chat_webhook_hosts)",
        )
    return url


def host(url: str | None) -> str | None:
    """What may be shown of the webhook URL: its host."""
    if not url:
        return None
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def webhook(conn: store.Connection) -> str | None:
    found = settings.get(conn, WEBHOOK_SETTING)
    return found if isinstance(found, str) and found else None


def clean(text: str) -> str:
    """The text as sent: no URL, bearer token or token-like word, Slack's control characters escaped, bounded."""
    text = _TOKENS.sub("[removed]", text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = "".join(c if c.isprintable() or c == "\n" else " " for c in text)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def queue(conn: store.Connection, key: str, text: str) -> bool:
    """Record a notice to send once per ``key`` (inside the caller's transaction, if any); False when that key was
    queued before (a replay) or no chat webhook is set."""
    if webhook(conn) is None:
        return False
    now = store.iso()
    with store.atomic(conn):
        cur = conn.execute(
            "INSERT INTO chat_notices (key, text, created_at, send_after) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
            (key, clean(text), now, now),
        )
    return cur.rowcount == 1


def send_due(
    conn: store.Connection, rt: Runtime, *, transport: httpx.BaseTransport | None = None, limit: int = 50
) -> dict[str, int]:
    """Send the notices that are due; never raises for a chat problem (drain goes on)."""
    now = store.utcnow()
    due = NOTICES.due(conn, now, limit)
    if not due:
        return {"sent": 0, "failed": 0, "dropped": 0}
    import httpx

    url = webhook(conn)
    refused = None if url is None else _refused(url, rt.config.organisation.chat_webhook_hosts)
    transport = transport or rt.transport(ROLE)

    def given_up(row: store.Row) -> str | None:
        if url is None:
            return "no chat webhook is set"
        return "not sent within a day; dropped" if row["created_at"] < store.iso(now - GIVE_UP_AFTER) else None

    with httpx.Client(transport=transport, timeout=TIMEOUT_S, follow_redirects=False) as client:

        def attempt(row: store.Row) -> str | None:
            assert url is not None  # given_up dropped the row otherwise
            return refused or _post(client, url, row["text"])

        return NOTICES.send(conn, due, now, attempt, given_up)


def _refused(url: str, also: Sequence[str]) -> str | None:
    """Why the URL is not sent to (checked again at send time: a row in the settings table may predate the rules),
    naming its host, never the URL; None when it may be."""
    try:
        check_url(url, also)
    except InvalidInput:
        return f"refused: the chat webhook of {host(url) or 'no host'} is not an https Slack or Teams URL"
    return None


def _post(client: httpx.Client, url: str, text: str) -> str | None:
    """POST the text; None when the service took it, else why not (naming its host, never the URL)."""
    where = host(url)
    try:
        answer = client.post(url, json={"text": text})
    except Exception as exc:  # an odd host fails in httpx with a ValueError, not an HTTPError: the drain goes on
        return f"{where}: {type(exc).__name__}"
    if answer.status_code >= 300:
        return f"{where} answered {answer.status_code}"
    return None


def problems(conn: store.Connection) -> dict[str, Any]:
    """Notices given up in the last day, those waiting, and the newest error (a host, never the URL)."""
    return NOTICES.problems(conn)
