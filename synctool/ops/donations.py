"""Donation platform operations (spec: /api/donations/campaigns[/refresh])."""

from __future__ import annotations

import sqlite3
from typing import Any

from synctool import clients, settings
from synctool.config import Config
from synctool.sync.donations import CAMPAIGNS


def campaigns(conn: sqlite3.Connection, config: Config, *, refresh: bool = False, client=None) -> list[dict[str, Any]]:
    if refresh:
        with clients.using(clients.donations, config, client) as gb:
            found = gb.campaigns()
        settings.cache_replace(conn, CAMPAIGNS, {str(c["id"]): c for c in found})
    return [{k: c.get(k) for k in ("id", "code", "title", "type", "status", "goal", "raised")}
            for c in settings.cache_list(conn, CAMPAIGNS)]
