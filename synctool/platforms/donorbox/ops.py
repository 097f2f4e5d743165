"""Donorbox's own ``doctor`` row: whether a donation has a fund to go to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool.platform import Runtime, mappings
from synctool.platforms.donorbox.models import ROLE

if TYPE_CHECKING:
    from synctool.platform import Connection


def checks(conn: Connection, rt: Runtime) -> list[tuple[str, str, str, str]]:
    """The ``donorbox:default`` mapping or ``donorbox.default_fund_id``: else a donation no campaign override codes
    goes to no fund."""
    mapped = mappings.coding(mappings.get(conn, "type_default", f"{ROLE}:default")).get("fund_id")
    configured = rt.config.section(ROLE).default_fund_id
    if mapped or configured:
        where = "the donorbox:default mapping" if mapped else "donorbox.default_fund_id"
        return [("donorbox fund", "ok", f"fund {mapped or configured} ({where})", "")]
    return [("donorbox fund", "warn", "a Donorbox donation no override codes goes to no fund",
             "synctool mappings types set donorbox:default --fund-id ID")]  # fmt: skip
