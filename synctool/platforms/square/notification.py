"""The notification URL Square signs its deliveries with, byte for byte: the one `synctool webhooks register`
registered (kept in the settings table), else ``pos.notification_url`` in config (env
``POS_WEBHOOK_NOTIFICATION_URL``). An organisation's is under its prefix on the host
(``https://HOST/o/NAME/webhooks/pos``): without either, it is made from ``receiver.public_url`` (the host's base
URL), and ``doctor`` fails one that is not under the prefix, since no delivery would verify."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool.platform import Runtime, StoreUnavailable, settings
from synctool.platforms import square

if TYPE_CHECKING:
    from synctool.platform import Connection

#: the settings key `webhooks register` keeps the registered URL under
SETTING = "pos_notification_url"
#: the name the receiver hands it to ``verify_webhook`` under (``WebhookSecrets.get``)
NAME = "POS_WEBHOOK_NOTIFICATION_URL"


def configured(rt: Runtime) -> str | None:
    """``pos.notification_url``; for an organisation without one, its URL under the host's ``receiver.public_url``."""
    given = square.PosConfig.of(rt.config).notification_url
    base = rt.config.receiver.public_url
    if given or not rt.org or not base:
        return given
    return f"{base.rstrip('/')}{rt.path_prefix}/webhooks/pos"


def url(conn: Connection, rt: Runtime) -> str | None:
    return settings.get(conn, SETTING) or configured(rt)


def for_receiver(rt: Runtime) -> dict[str, str | None]:
    """``Webhook.settings``: read once when the receiver starts (a database not there yet: the config's)."""
    if not isinstance(rt.database, str) and not rt.database.exists():
        return {NAME: configured(rt)}
    try:
        conn = rt.open_database(migrate=False)
    except StoreUnavailable:
        return {NAME: configured(rt)}
    try:
        return {NAME: url(conn, rt)}
    finally:
        conn.close()


def checks(conn: Connection, rt: Runtime) -> list[tuple[str, str, str, str]]:
    """``doctor``: Square signs the exact notification URL, so synctool must know it."""
    found = url(conn, rt)
    own = f"{rt.path_prefix}/webhooks/pos"
    if found and rt.org and not found.rstrip("/").endswith(own):
        return [("pos notification url", "fail", f"{found} is not organisation {rt.org}'s (it ends {own})",
                 "Square signs the URL it posts to: synctool --org NAME webhooks register --url https://YOUR.HOST")]  # fmt: skip
    if found:
        return []
    return [("pos notification url", "fail", "not set: Square's deliveries cannot be verified",
             "synctool webhooks register --url https://YOUR.HOST (or set pos.notification_url in config)")]  # fmt: skip
