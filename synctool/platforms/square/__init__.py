"""Square, the point-of-sale platform: orders and payments become gifts, customers become donors."""

from __future__ import annotations

from typing import Any

from synctool.platforms import Client, Fake, Mappings, Platform, Webhook

PLATFORM = Platform(
    name="square",
    role="pos",
    webhook=Webhook("pos", "synctool.platforms.square.webhook", secret="POS_WEBHOOK_SIGNATURE_KEY"),
    client=Client("pos", "synctool.platforms.square.client:from_runtime", probe="synctool.platforms.square.client:probe"),
    secrets={
        "POS_ACCESS_TOKEN": "Square's access token (orders, customers, locations)",
        "POS_WEBHOOK_SIGNATURE_KEY": "Square's webhook signature key",
    },
    fake=Fake(
        "square",
        "synctool.platforms.square.fake",
        "FakeSquare",
        "POS_ACCESS_TOKEN",
        "demo-square-token",
        "POS_API_BASE_URL",
        "",
        contract="square.json",
    ),
    external_id_prefixes=("pos_order_",),
    mappings=Mappings(types=("default",), payment_case="upper", payment_examples="pos:<tender type> (CARD, CASH, ...)"),
    reconcile="synctool.platforms.square.reconcile",
    backfill=True,
    registration="synctool.platforms.square.registration",
    poll="synctool.platforms.square.poll:poll",
    handlers=("synctool.platforms.deposits", "synctool.platforms.square.rules", "synctool.platforms.square.refunds"),
    commands={"pos": "synctool.platforms.square.commands:app"},
    routes="synctool.platforms.square:routes",
    checks="synctool.platforms.square:checks",
)


def routes(call: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
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


def checks(conn: Any, rt: Any) -> list[tuple[str, str, str, str]]:
    """``doctor``: Square signs the exact notification URL, so synctool must know it."""
    if rt.config.webhooks.pos_notification_url:
        return []
    return [("pos notification url", "warn", "not set", "set webhooks.pos_notification_url to the URL registered with Square")]
