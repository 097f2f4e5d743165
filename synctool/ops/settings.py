"""The core's operator settings (spec: Settings table): each validates its input and returns the current
value. A platform's own settings live in its package and are declared on it (``Platform.settings``)."""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from synctool import settings, store
from synctool.crm import donor_changes
from synctool.crm import soft_credits as soft
from synctool.runtime import Runtime
from synctool.validation import Body, Email


class RecipientsBody(Body):
    """Spec: PATCH /api/settings/alert-recipients."""

    emails: list[Email]


def alert_recipients(conn: sqlite3.Connection, body: RecipientsBody | None = None) -> dict[str, Any]:
    if body is not None:
        with store.atomic(conn):
            settings.put(conn, "alert_recipients", body.emails)
    return {"emails": settings.get(conn, "alert_recipients", [])}


class SoftCreditsBody(Body):
    """PATCH /api/settings/soft-credits."""

    enabled: bool


class DonorUpdatesBody(Body):
    """PATCH /api/settings/donor-updates."""

    policy: Literal["review", "add", "off"]


class DonorMatchingBody(Body):
    """PATCH /api/settings/donor-matching."""

    policy: Literal["review", "auto", "email"]


def donor_matching(conn: sqlite3.Connection, rt: Runtime, body: DonorMatchingBody | None = None) -> dict[str, Any]:
    """What a gift from a known donor under a new e-mail does (the setting wins over ``donors.matching``)."""
    from synctool.crm import matching

    if body is not None:
        with store.atomic(conn):
            settings.put(conn, matching.SETTING, body.policy)
    return {"policy": matching.policy(conn, rt.config), "held": matching.pending_count(conn)}


def soft_credits(conn: sqlite3.Connection, rt: Runtime, body: SoftCreditsBody | None = None) -> dict[str, Any]:
    """Whether peer-to-peer fundraisers get Soft Credit gifts (the setting wins over ``soft_credits.enabled``)."""
    if body is not None:
        with store.atomic(conn):
            settings.put(conn, soft.SETTING, body.enabled)
    return {
        "enabled": soft.enabled(conn, rt.config),
        "create_fundraisers": rt.config.soft_credits.create_fundraisers,
    }


def donor_updates(conn: sqlite3.Connection, rt: Runtime, body: DonorUpdatesBody | None = None) -> dict[str, Any]:
    """What a known donor's new contact points become (the setting wins over ``donors.updates``)."""
    if body is not None:
        with store.atomic(conn):
            settings.put(conn, donor_changes.SETTING, body.policy)
    return {"policy": donor_changes.policy(conn, rt.config)}
