"""KindDesk's own ``doctor`` row and its admin API route."""

from __future__ import annotations

import sqlite3
from typing import Any

from synctool.platform import ApiRoute, Runtime, mappings
from synctool_kinddesk.models import ROLE


def checks(conn: sqlite3.Connection, rt: Runtime) -> list[tuple[str, str, str, str]]:
    """Whether a KindDesk gift has a fund to go to: the ``kind:default`` mapping or ``kind.default_fund_id``."""
    mapped = mappings.coding(mappings.get(conn, "type_default", f"{ROLE}:default"))
    configured = rt.config.section(ROLE).default_fund_id
    if mapped.get("fund_id") or configured:
        where = "the kind:default mapping" if mapped.get("fund_id") else "kind.default_fund_id"
        return [("kind fund", "ok", f"fund {mapped.get('fund_id') or configured} ({where})", "")]
    return [("kind fund", "warn", "a KindDesk gift goes to no fund", "synctool mappings types set kind:default --fund-id ID")]


def gifts_listed(call: Any) -> list[dict[str, Any]]:
    """``GET /api/kind/gifts``: the gifts KindDesk lists (one request)."""
    from synctool.platform import using

    with using(call.rt, ROLE) as client:
        return client.gifts()


def routes() -> list[ApiRoute]:
    """KindDesk's admin API routes."""
    return [ApiRoute("GET", "/api/kind/gifts", "viewer", gifts_listed)]
