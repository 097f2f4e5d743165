"""Square's run-time setting: the constituent that POS orders without a customer are credited to
(``pos-default-constituent``; declared on the platform, ``Platform.settings``, so `synctool settings` and a
Settings page find it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from pydantic import Field

from synctool.platform import Body, Email, settings, store

if TYPE_CHECKING:
    from synctool.platform import Connection

#: the key in synctool's settings table (``rules.py`` reads it for an order without a customer)
DEFAULT_CONSTITUENT = "pos_default_constituent"


class PosDefaultBody(Body):
    """``synctool settings pos-default-constituent --email ...``; ``PATCH /api/settings/pos-default-constituent``."""

    email: Email = Field(description="the constituent's e-mail")
    first_name: Optional[str] = Field(None, description="first name")  # noqa: UP045  (the CLI reads it at run time)
    last_name: str = Field(min_length=1, description="last name")


def read(conn: Connection) -> dict[str, Any]:
    return settings.get(conn, DEFAULT_CONSTITUENT) or {"email": None, "first_name": None, "last_name": None}


def write(conn: Connection, body: PosDefaultBody) -> dict[str, Any]:
    with store.atomic(conn):
        settings.put(
            conn, DEFAULT_CONSTITUENT, {"email": body.email, "first_name": body.first_name or None, "last_name": body.last_name}
        )
    return read(conn)
