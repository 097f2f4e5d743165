"""Operator settings (spec: Settings table): each validates its input and returns the current value."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from synctool import settings, store
from synctool.errors import InvalidInput

EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _email(value: str) -> str:
    value = (value or "").strip()
    if not EMAIL.match(value):
        raise InvalidInput(f"not an e-mail address: {value!r}")
    return value


def alert_recipients(conn: sqlite3.Connection, emails: list[str] | None = None) -> dict[str, Any]:
    if emails is not None:
        clean = [_email(e) for e in emails]
        with store.transaction(conn):
            settings.put(conn, "alert_recipients", clean)
    return {"emails": settings.get(conn, "alert_recipients", [])}


def mailing_sync_enabled(conn: sqlite3.Connection, enabled: bool | None = None) -> dict[str, Any]:
    if enabled is not None:
        with store.transaction(conn):
            settings.put(conn, "mailing_sync_enabled", bool(enabled))
    return {"enabled": settings.get(conn, "mailing_sync_enabled", True)}


def pos_default_constituent(conn: sqlite3.Connection, *, email: str | None = None, first_name: str | None = None,
                            last_name: str | None = None) -> dict[str, Any]:
    if email is not None or first_name is not None or last_name is not None:
        if email is None:
            raise InvalidInput("the default constituent needs an e-mail", "--email is required")
        value = {"email": _email(email), "first_name": (first_name or "").strip() or None,
                 "last_name": (last_name or "").strip() or None}
        if not value["last_name"]:
            raise InvalidInput("the default constituent needs a last name", "e.g. --first-name Walk-in --last-name Customer")
        with store.transaction(conn):
            settings.put(conn, "pos_default_constituent", value)
    return settings.get(conn, "pos_default_constituent") or {"email": None, "first_name": None, "last_name": None}
