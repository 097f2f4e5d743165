"""The organisation's member portal: users, memberships, payments, enrollments and family links."""

from __future__ import annotations

from typing import Any

from synctool.platforms import Platform, Target, Webhook

PLATFORM = Platform(
    name="portal",
    role="portal",
    webhook=Webhook("portal", "synctool.platforms.portal.webhook", secret="PORTAL_WEBHOOK_SECRET"),
    secrets={"PORTAL_WEBHOOK_SECRET": "signs the portal's pushes to /webhooks/portal"},
    # its gifts carry the portal's payment ids (no prefix): synctool's gift ledger knows them
    reconcile="synctool.platforms.portal.reconcile",
    handlers=("synctool.platforms.portal.rules", "synctool.platforms.portal.refunds"),
    commands={"portal": "synctool.platforms.portal.commands:app"},
    routes="synctool.platforms.portal:routes",
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
)


def routes(call: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
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
