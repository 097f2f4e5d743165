"""Square, the point-of-sale platform: orders and payments become gifts, customers become donors.

Each hook below imports its implementation when it is called (``docs/platforms.md``)."""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import TYPE_CHECKING, Any

from synctool.platforms import Client, Fake, Mappings, Platform, Registration, Webhook

if TYPE_CHECKING:
    from synctool.platforms.reconcile import Expected, Payout
    from synctool.platforms.webhook import Adapter
    from synctool.runtime import Runtime


def _adapter() -> Adapter:
    from synctool.platforms.square import webhook

    return webhook


def _client(rt: Runtime) -> Any:
    from synctool.platforms.square.client import from_runtime

    return from_runtime(rt)


def _probe(made: Any) -> str:
    from synctool.platforms.square.client import probe

    return probe(made)


def _fake(key: str) -> tuple[Any, Any]:
    from synctool.platforms.square.fake import FakeSquare, create_app

    made = FakeSquare(key)
    return made, create_app(made)


def _expected(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    from synctool.platforms.square import reconcile

    return reconcile.expected(conn, rt, start, end)


def _payouts(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    from synctool.platforms.square import reconcile

    return reconcile.payouts(conn, rt, start, end)


def _registration() -> Registration:
    from synctool.platforms.square import registration

    return registration


def _handlers() -> None:
    from synctool.platforms import deposits  # noqa: F401
    from synctool.platforms.square import refunds, rules  # noqa: F401


def _commands() -> Any:
    from synctool.platforms.square.commands import app

    return app


def _routes(call: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
    from synctool.platforms.square import ops
    from synctool.validation import ForceQuery

    admin = roles["admin"]
    return [
        ("GET", "/api/pos/locations", admin, lambda c: ops.locations(c.conn, c.rt)),
        ("GET", "/api/pos/orders", admin, lambda c: ops.orders(c.conn, c.rt, c.query_as(ops.OrdersQuery))),
        ("POST", "/api/pos/orders/enrich", admin, lambda c: ops.enrich(c.rt, c.body_as(ops.EnrichBody))),
        (
            "POST",
            "/api/pos/orders/{orderId}/resync",
            admin,
            lambda c: ops.resync(c.conn, c.rt, c.path["orderId"], force=c.query_as(ForceQuery).force),
        ),
        ("GET", "/api/pos/location-overrides", admin, lambda c: ops.location_overrides(c.conn)),
        (
            "PUT",
            "/api/pos/location-overrides",
            admin,
            lambda c: ops.replace_location_overrides(c.conn, c.body_as(ops.LocationOverrides)),
        ),
    ]


def _poll(conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    from synctool.platforms.square import poll

    return poll.poll(conn, rt, fresh=fresh, lookback=lookback)


def _checks(conn: sqlite3.Connection, rt: Runtime) -> list[tuple[str, str, str, str]]:
    """``doctor``: Square signs the exact notification URL, so synctool must know it."""
    if rt.config.webhooks.pos_notification_url:
        return []
    return [("pos notification url", "warn", "not set", "set webhooks.pos_notification_url to the URL registered with Square")]


PLATFORM = Platform(
    name="square",
    role="pos",
    webhook=Webhook("pos", _adapter, secret="POS_WEBHOOK_SIGNATURE_KEY"),
    client=Client("pos", _client, probe=_probe),
    secrets={
        "POS_ACCESS_TOKEN": "Square's access token (orders, customers, locations)",
        "POS_WEBHOOK_SIGNATURE_KEY": "Square's webhook signature key",
    },
    fake=Fake("square", _fake, "POS_ACCESS_TOKEN", "demo-square-token", "POS_API_BASE_URL", "", contract="square.json"),
    external_id_prefixes=("pos_order_",),
    mappings=Mappings(types=("default",), payment_case="upper", payment_examples="pos:<tender type> (CARD, CASH, ...)"),
    expected=_expected,
    payouts=_payouts,
    backfill=True,
    registration=_registration,
    poll=_poll,
    handlers=_handlers,
    commands={"pos": _commands},
    routes=_routes,
    checks=_checks,
)
