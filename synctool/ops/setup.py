"""`synctool init`: a starter config and a migrated database."""

from __future__ import annotations

from typing import Any

from synctool import store
from synctool.config import STARTER_CONFIG, DEFAULT_DB, config_path, load_config


def init(explicit_config: str | None, *, force: bool = False) -> dict[str, Any]:
    path, _ = config_path(explicit_config)
    wrote = False
    if force or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STARTER_CONFIG.format(database=DEFAULT_DB), encoding="utf-8")
        wrote = True
    config = load_config(path)
    conn = store.connect(config.db_path)
    try:
        migrations = store.applied_migrations(conn)
    finally:
        conn.close()
    from synctool.secrets import keyring_notice

    return {
        "config": str(path),
        "config_written": wrote,
        "database": str(config.db_path),
        "migrations": len(migrations),
        "keyring": keyring_notice() or "available",
    }
