"""The chat notices waiting to be sent (issue 53: a failed, paused or canceled plan told to a Slack or Teams
incoming webhook once, as it happens)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlite_utils import Database


def m018_chat_notices(db: Database) -> None:
    """``chat_notices``: one row per key (``queue`` writes it once whatever the replays), sent by drain; a row
    given up keeps its last error (the webhook's host, never its URL)."""
    db.conn.execute(
        "CREATE TABLE chat_notices (key TEXT PRIMARY KEY, text TEXT NOT NULL, created_at TEXT NOT NULL,"
        " send_after TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, sent_at TEXT, last_error TEXT)"
    )
    db.conn.execute("CREATE INDEX chat_notices_due ON chat_notices (send_after) WHERE sent_at IS NULL")
