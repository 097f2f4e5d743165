"""The notification URL Square signs its deliveries with, byte for byte: the one `synctool webhooks register`
registered (kept in the settings table), else ``pos.notification_url`` in config (env
``POS_WEBHOOK_NOTIFICATION_URL``)."""

from __future__ import annotations

import sqlite3

from synctool.platform import Runtime, StoreUnavailable, settings, store
from synctool.platforms import square

#: the settings key `webhooks register` keeps the registered URL under
SETTING = "pos_notification_url"
#: the name the receiver hands it to ``verify_webhook`` under (``WebhookSecrets.get``)
NAME = "POS_WEBHOOK_NOTIFICATION_URL"


def url(conn: sqlite3.Connection, rt: Runtime) -> str | None:
    return settings.get(conn, SETTING) or square.PosConfig.of(rt.config).notification_url


def for_receiver(rt: Runtime) -> dict[str, str | None]:
    """``Webhook.settings``: read once when the receiver starts (a database not there yet: the config's)."""
    if not rt.db_path.exists():
        return {NAME: square.PosConfig.of(rt.config).notification_url}
    try:
        conn = store.connect(rt.db_path, migrate=False)
    except StoreUnavailable:
        return {NAME: square.PosConfig.of(rt.config).notification_url}
    try:
        return {NAME: url(conn, rt)}
    finally:
        conn.close()


def checks(conn: sqlite3.Connection, rt: Runtime) -> list[tuple[str, str, str, str]]:
    """``doctor``: Square signs the exact notification URL, so synctool must know it."""
    if url(conn, rt):
        return []
    return [("pos notification url", "fail", "not set: Square's deliveries cannot be verified",
             "synctool webhooks register --url https://YOUR.HOST (or set pos.notification_url in config)")]  # fmt: skip
