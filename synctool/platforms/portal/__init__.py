"""The organisation's member portal: users, memberships, payments, enrollments and family links."""

from __future__ import annotations

from typing import Any

from synctool.platforms import Webhook

WEBHOOK = Webhook("portal", "synctool.platforms.portal.webhook")
SECRETS = {"PORTAL_WEBHOOK_SECRET": "signs the portal's pushes to /webhooks/portal"}

#: lists the platform's money in a period (``synctool reconcile``)
RECONCILE = "synctool.platforms.portal.reconcile"


def register_handlers() -> None:
    from synctool.platforms.portal import refunds, rules  # noqa: F401  (their @handler rows)


def register_commands() -> dict[str, str]:
    return {"portal": "synctool.platforms.portal.commands:app"}


def register_routes(call: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
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
