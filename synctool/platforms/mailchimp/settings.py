"""Mailchimp's run-time setting: whether mailing events change CRM tags (``mailing-sync-enabled``; declared on
the platform, ``Platform.settings``, so `synctool settings` and a Settings page find it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from synctool.platform import Body, settings, store

if TYPE_CHECKING:
    from synctool.platform import Connection

#: the key in synctool's settings table (``rules.py`` reads it before a mailing event changes a tag)
ENABLED = "mailing_sync_enabled"


class EnabledBody(Body):
    """``synctool settings mailing-sync-enabled on|off``; ``PATCH /api/settings/mailing-sync-enabled``."""

    enabled: bool = Field(description="on or off")


def read(conn: Connection) -> dict[str, Any]:
    return {"enabled": settings.get(conn, ENABLED, True)}


def write(conn: Connection, body: EnabledBody) -> dict[str, Any]:
    with store.atomic(conn):
        settings.put(conn, ENABLED, body.enabled)
    return read(conn)
