"""Portal's admin API routes (``Platform.routes``): each row's handler calls this package's ``ops`` with what the
request (a ``StaffRequest``) carries."""

from __future__ import annotations

from synctool.platform import ApiRoute, ForceQuery
from synctool.platforms.portal import ops


def routes() -> list[ApiRoute]:
    """``Platform.routes``: the admin API routes of this platform: write one portal payment to the CRM now, or queue
    it for the next drain."""
    return [
        ApiRoute("POST", "/api/admin/crm/sync/payment/{paymentId}", "admin",
                 lambda call: ops.sync_now(call.conn, call.rt, "payment", call.path["paymentId"], force=call.query_as(ForceQuery).force)),
        ApiRoute("POST", "/api/admin/crm/sync/queue-payment/{paymentId}", "admin",
                 lambda call: {"job_id": ops.queue_sync(call.conn, "payment", call.path["paymentId"])}),
    ]  # fmt: skip
