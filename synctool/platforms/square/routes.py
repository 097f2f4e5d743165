"""Square's admin API routes (``Platform.routes``): each row's handler calls this package's ``ops`` with what the
request (a ``StaffRequest``) carries."""

from __future__ import annotations

from synctool.platform import ApiRoute, ForceQuery
from synctool.platforms.square import ops


def routes() -> list[ApiRoute]:
    """``Platform.routes``: the admin API routes of this platform."""
    return [
        ApiRoute("GET", "/api/pos/locations", "admin", lambda call: ops.locations(call.conn, call.rt)),
        ApiRoute("GET", "/api/pos/orders", "admin", lambda call: ops.orders(call.conn, call.rt, call.query_as(ops.OrdersQuery))),
        ApiRoute("POST", "/api/pos/orders/enrich", "admin", lambda call: ops.enrich(call.rt, call.body_as(ops.EnrichBody))),
        ApiRoute("POST", "/api/pos/orders/{orderId}/resync", "admin",
                 lambda call: ops.resync(call.conn, call.rt, call.path["orderId"], force=call.query_as(ForceQuery).force)),
        ApiRoute("GET", "/api/pos/location-overrides", "admin", lambda call: ops.location_overrides(call.conn)),
        ApiRoute("PUT", "/api/pos/location-overrides", "admin",
                 lambda call: ops.replace_location_overrides(call.conn, call.body_as(ops.LocationOverrides))),
    ]  # fmt: skip
