"""Mailchimp's run-time setting: whether mailing events change CRM tags (``mailing-sync-enabled``; declared on
the platform, ``Platform.settings``, so `synctool settings` and a Settings page find it)."""

from __future__ import annotations

import sqlite3
from typing import Any

from pydantic import Field

from synctool.platform import Body, settings, store

#: the key in synctool's settings table (``rules.py`` reads it before a mailing event changes a tag)
ENABLED = "mailing_sync_enabled"


class EnabledBody(Body):
    """``synctool settings mailing-sync-enabled on|off``; ``PATCH /api/settings/mailing-sync-enabled``."""

    enabled: bool = Field(description="on or off")


def read(conn: sqlite3.Connection) -> dict[str, Any]:
    return {"enabled": settings.get(conn, ENABLED, True)}


def write(conn: sqlite3.Connection, body: EnabledBody) -> dict[str, Any]:
    with store.atomic(conn):
        settings.put(conn, ENABLED, body.enabled)
    return read(conn)
