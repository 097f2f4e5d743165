"""Run-time settings operators change from the CLI, and the small caches, both in the database.

``settings`` holds values as JSON (environment, alert recipients, toggles, default constituent, sync
flags, per-environment CRM base URLs); ``caches`` holds CRM reference lists, donation campaigns, POS
locations and the e-mail -> constituent links. Secrets never go here (see ``secrets.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from synctool import store

#: whether a plan's changed amount or frequency is said in its next contact report (issue 53): written by
#: `synctool settings plans-report-changes`, read by the plan job
PLANS_REPORT_CHANGES = "plans_report_changes"


def plans_report_changes(conn: store.Connection) -> bool:
    """The ``plans-report-changes`` switch (default off)."""
    return get(conn, PLANS_REPORT_CHANGES, "off") in ("on", True)


def get(conn: store.Connection, key: str, default: object = None) -> Any:  # (the JSON stored, any)
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return json.loads(row[0]) if row else default


def put(conn: store.Connection, key: str, value: object) -> None:
    # plain SQL, not sqlite-utils' upsert: cron's idle drain writes its heartbeat here every minute, and
    # importing sqlite-utils for it was a tenth of that tick's CPU (bench/startup.py)
    with store.atomic(conn):
        conn.execute(
            "INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            (key, json.dumps(value), store.iso()),
        )


def cache_get(conn: store.Connection, kind: str, key: str) -> Any:
    row = conn.execute("SELECT value FROM caches WHERE kind = ? AND key = ?", (kind, key)).fetchone()
    return json.loads(row[0]) if row else None


def cache_put(conn: store.Connection, kind: str, key: str, value: object) -> None:
    with store.atomic(conn):
        store.put_row(conn, "caches", {"kind": kind, "key": key}, {"value": json.dumps(value), "refreshed_at": store.iso()})


def cache_delete(conn: store.Connection, kind: str, key: str) -> None:
    with store.atomic(conn):
        conn.execute("DELETE FROM caches WHERE kind = ? AND key = ?", (kind, key))


def cache_replace(conn: store.Connection, kind: str, items: Mapping[str, object]) -> None:
    """Replace every entry of one kind at once (a refreshed reference list)."""
    now = store.iso()
    with store.atomic(conn):
        conn.execute("DELETE FROM caches WHERE kind = ?", (kind,))
        conn.executemany(
            "INSERT INTO caches (kind, key, value, refreshed_at) VALUES (?, ?, ?, ?)",
            [(kind, key, json.dumps(value), now) for key, value in items.items()],
        )


def cache_list(conn: store.Connection, kind: str) -> list[Any]:
    rows = conn.execute("SELECT value FROM caches WHERE kind = ? ORDER BY key", (kind,))
    return [json.loads(r["value"]) for r in rows]


def cache_refreshed_at(conn: store.Connection, kind: str) -> str | None:
    return conn.execute("SELECT max(refreshed_at) FROM caches WHERE kind = ?", (kind,)).fetchone()[0]


#: ``synctool sync-mode``: ``live`` (the default) writes to the CRM; ``preview`` only shows what it would write
MODE_SETTING = "sync_mode"
MODES = ("live", "preview")


def sync_mode(conn: store.Connection) -> str:
    mode = get(conn, MODE_SETTING)
    return mode if mode in MODES else "live"
