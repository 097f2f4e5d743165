"""The organisation's member portal: users, memberships, payments, enrollments and family links."""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import TYPE_CHECKING, Any

from synctool.platforms import Platform, Target, Webhook

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sqlite_utils import Database

    from synctool.platforms.reconcile import Expected
    from synctool.platforms.webhook import Adapter
    from synctool.runtime import Runtime


def _adapter() -> Adapter:
    from synctool.platforms.portal import webhook

    return webhook


def _expected(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    from synctool.platforms.portal import reconcile

    return reconcile.expected(conn, rt, start, end)


def _migrations() -> Sequence[Callable[[Database], None]]:
    from synctool.platforms.portal.tables import MIGRATIONS

    return MIGRATIONS


def _handlers() -> None:
    from synctool.platforms.portal import refunds, rules  # noqa: F401


def _commands() -> Any:
    from synctool.platforms.portal.commands import app

    return app


def _routes(call: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
    from synctool.platforms.portal import ops
    from synctool.validation import ForceQuery

    admin = roles["admin"]
    return [
        (
            "POST",
            "/api/admin/crm/sync/payment/{paymentId}",
            admin,
            lambda c: ops.sync_now(c.conn, c.rt, "payment", c.path["paymentId"], force=c.query_as(ForceQuery).force),
        ),
        (
            "POST",
            "/api/admin/crm/sync/queue-payment/{paymentId}",
            admin,
            lambda c: {"job_id": ops.queue_sync(c.conn, "payment", c.path["paymentId"])},
        ),
    ]


PLATFORM = Platform(
    name="portal",
    role="portal",
    webhook=Webhook("portal", _adapter, secret="PORTAL_WEBHOOK_SECRET"),
    secrets={"PORTAL_WEBHOOK_SECRET": "signs the portal's pushes to /webhooks/portal"},
    # its gifts carry the portal's payment ids (no prefix): synctool's gift ledger knows them
    expected=_expected,
    handlers=_handlers,
    commands={"portal": _commands},
    routes=_routes,
    # a portal push or a Stripe event becomes local records, and those CRM jobs: one at a time, before the CRM's
    targets=(Target("portal", first=True, serial=True),),
    tables=(
        "portal_payment_items",
        "portal_payments",
        "portal_memberships",
        "portal_enrollments",
        "portal_family_links",
        "portal_users",
        "portal_products",
    ),  # fmt: skip
    migrations=_migrations,
)
