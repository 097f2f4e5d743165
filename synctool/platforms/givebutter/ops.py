"""Donation platform operations (spec: /api/donations/campaigns[/refresh])."""

from __future__ import annotations

import sqlite3
from typing import Any

from synctool import platforms, settings
from synctool.platforms.givebutter.rules import CAMPAIGNS
from synctool.runtime import Runtime


def campaigns(conn: sqlite3.Connection, rt: Runtime, *, refresh: bool = False, client=None) -> list[dict[str, Any]]:
    if refresh:
        with platforms.using(rt, "donations", client) as gb:
            found = gb.campaigns()
        settings.cache_replace(conn, CAMPAIGNS, {str(c["id"]): c for c in found})
    return [
        {k: c.get(k) for k in ("id", "code", "title", "type", "status", "goal", "raised")}
        for c in settings.cache_list(conn, CAMPAIGNS)
    ]
