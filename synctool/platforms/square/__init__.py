"""Square, the point-of-sale platform: orders and payments become gifts, customers become donors."""

from __future__ import annotations

from typing import Any

from synctool.platforms import Client, Fake, Webhook

WEBHOOK = Webhook("pos", "synctool.platforms.square.webhook")
CLIENT = Client("pos", "synctool.platforms.square.client:from_runtime", probe="synctool.platforms.square.client:probe")
#: registers and checks the platform's webhook (``synctool webhooks``)
REGISTRATION = "synctool.platforms.square.registration"
SECRETS = {
    "POS_ACCESS_TOKEN": "Square's access token (orders, customers, locations)",
    "POS_WEBHOOK_SIGNATURE_KEY": "Square's webhook signature key",
}
FAKE = Fake(
    "square",
    "synctool.platforms.square.fake",
    "FakeSquare",
    "POS_ACCESS_TOKEN",
    "demo-square-token",
    "POS_API_BASE_URL",
    "",
    contract="square.json",
)

#: lists the platform's money and payouts in a period (``synctool reconcile``)
RECONCILE = "synctool.platforms.square.reconcile"


def register_handlers() -> None:
    from synctool.platforms import reconcile
    from synctool.platforms.square import refunds, rules  # noqa: F401  (their @handler rows)

    reconcile.register_handlers()


def register_commands() -> dict[str, str]:
    return {"pos": "synctool.platforms.square.commands:app"}


def register_routes(call: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
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
    ]
