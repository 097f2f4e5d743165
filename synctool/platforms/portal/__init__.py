"""The organisation's member portal: users, memberships, payments, enrollments and family links."""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import TYPE_CHECKING, Any

from synctool.platforms import ApiRoute, Platform, Target, Webhook

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sqlite_utils import Database

    from synctool.platforms.reconcile import Expected
    from synctool.platforms.webhook import Adapter
    from synctool.runtime import Runtime


#: the payments platform's source (Stripe's role): the portal's handlers run its jobs (``Platform.handles``)
PAYMENTS = "payments"


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


def _routes() -> list[ApiRoute]:
    from synctool.platforms.portal.routes import routes

    return routes()


PLATFORM = Platform(
    name="portal",
    role="portal",
    webhook=Webhook("portal", _adapter, secret="PORTAL_WEBHOOK_SECRET"),
    secrets={"PORTAL_WEBHOOK_SECRET": "signs the portal's pushes to /webhooks/portal"},
    # its gifts carry the portal's payment ids (no prefix): synctool's gift ledger knows them
    expected=_expected,
    handlers=_handlers,
    # Stripe, the portal's payment processor, only parses its events: the portal's handlers run its jobs
    handles=(PAYMENTS,),
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
