"""Givebutter's admin API routes (``Platform.routes``): each a named handler over this package's ``ops``."""

from __future__ import annotations

from typing import Any

from synctool.platform import ApiRoute
from synctool.platforms.givebutter import ops


def _campaigns(call: Any) -> Any:
    """``GET /api/donations/campaigns``: the campaigns as cached."""
    return ops.campaigns(call.conn, call.rt)


def _refresh_campaigns(call: Any) -> Any:
    """``POST /api/donations/campaigns/refresh``: read them again from Givebutter."""
    return ops.campaigns(call.conn, call.rt, refresh=True)


def routes() -> list[ApiRoute]:
    """``Platform.routes``: the admin API routes of this platform."""
    return [
        ApiRoute("GET", "/api/donations/campaigns", "admin", _campaigns),
        ApiRoute("POST", "/api/donations/campaigns/refresh", "admin", _refresh_campaigns),
    ]
