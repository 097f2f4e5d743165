"""`synctool init`: a starter config and a migrated database."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synctool import settings, store
from synctool.config import DEFAULT_DB, STARTER_CONFIG, config_path
from synctool.runtime import Runtime


def init(explicit_config: str | None, environ: Mapping[str, str], *, force: bool = False) -> dict[str, Any]:
    """Write the starter config (unless one exists) and create the database; ``environ`` is read once."""
    path, _ = config_path(explicit_config, environ)
    wrote = False
    if force or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STARTER_CONFIG.format(database=DEFAULT_DB), encoding="utf-8")
        wrote = True
    rt = Runtime.from_environ(path, environ)
    new_database = not rt.db_path.exists()
    conn = store.connect(rt.db_path)
    try:
        migrations = store.applied_migrations(conn)
        if new_database:  # a new install writes nothing to the CRM until someone has seen what it would write
            with store.atomic(conn):
                settings.put(conn, settings.MODE_SETTING, "preview")
        mode = settings.sync_mode(conn)
    finally:
        conn.close()
    return {
        "config": str(path),
        "config_written": wrote,
        "database": str(rt.db_path),
        "migrations": len(migrations),
        "keyring": rt.secrets.keyring_notice() or "available",
        "sync_mode": mode,
        "next": "preview mode: drain shows what it would write (`synctool preview`); `synctool sync-mode live` to write"
        if mode == "preview"
        else "",
    }
