"""Square's admin API routes (``Platform.routes``): each a named handler over this package's ``ops``."""

from __future__ import annotations

from typing import Any

from synctool.platforms import ApiRoute
from synctool.platforms.square import ops
from synctool.validation import ForceQuery


def _locations(call: Any) -> Any:
    return ops.locations(call.conn, call.rt)


def _orders(call: Any) -> Any:
    return ops.orders(call.conn, call.rt, call.query_as(ops.OrdersQuery))


def _enrich(call: Any) -> Any:
    return ops.enrich(call.rt, call.body_as(ops.EnrichBody))


def _resync(call: Any) -> Any:
    return ops.resync(call.conn, call.rt, call.path["orderId"], force=call.query_as(ForceQuery).force)


def _location_overrides(call: Any) -> Any:
    return ops.location_overrides(call.conn)


def _replace_location_overrides(call: Any) -> Any:
    return ops.replace_location_overrides(call.conn, call.body_as(ops.LocationOverrides))


def routes() -> list[ApiRoute]:
    """``Platform.routes``: the admin API routes of this platform."""
    return [
        ApiRoute("GET", "/api/pos/locations", "admin", _locations),
        ApiRoute("GET", "/api/pos/orders", "admin", _orders),
        ApiRoute("POST", "/api/pos/orders/enrich", "admin", _enrich),
        ApiRoute("POST", "/api/pos/orders/{orderId}/resync", "admin", _resync),
        ApiRoute("GET", "/api/pos/location-overrides", "admin", _location_overrides),
        ApiRoute("PUT", "/api/pos/location-overrides", "admin", _replace_location_overrides),
    ]
