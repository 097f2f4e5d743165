"""Portal's admin API routes (``Platform.routes``): each a named handler over this package's ``ops``."""

from __future__ import annotations

from typing import Any

from synctool.platforms import ApiRoute
from synctool.platforms.portal import ops
from synctool.validation import ForceQuery


def _sync_payment(call: Any) -> Any:
    """Write one portal payment to the CRM now."""
    return ops.sync_now(call.conn, call.rt, "payment", call.path["paymentId"], force=call.query_as(ForceQuery).force)


def _queue_payment(call: Any) -> Any:
    """Queue one portal payment for the next drain."""
    return {"job_id": ops.queue_sync(call.conn, "payment", call.path["paymentId"])}


def routes() -> list[ApiRoute]:
    """``Platform.routes``: the admin API routes of this platform."""
    return [
        ApiRoute("POST", "/api/admin/crm/sync/payment/{paymentId}", "admin", _sync_payment),
        ApiRoute("POST", "/api/admin/crm/sync/queue-payment/{paymentId}", "admin", _queue_payment),
    ]
