"""The organisation's member portal: users, memberships, payments, enrollments and family links."""

from __future__ import annotations

from synctool.platform import Hook, Loaded, Platform, Target, Webhook, handlers_in

#: the payments platform's source (Stripe's role): the portal's handlers run its jobs (``Platform.handles``)
PAYMENTS = "payments"


PLATFORM = Platform(
    name="portal",
    role="portal",
    webhook=Webhook.of(__name__, "PORTAL_WEBHOOK_SECRET", "signs the portal's pushes to /webhooks/portal"),
    # its gifts carry the portal's payment ids (no prefix): synctool's gift ledger knows them
    expected=Hook("synctool.platforms.portal.reconcile:expected"),
    # Stripe's events and refunds too (its ``payments`` jobs): the portal's rules act on them
    handlers=handlers_in(
        __name__,
        pushes=("push",),
        users=("user",),
        payments=("payment", "enrollment"),
        memberships=("membership",),
        relationships=("relationship",),
        stripe_events=(f"{PAYMENTS}:stripe_event",),
        refunds=(f"{PAYMENTS}:charge_refund",),
    ),
    # Stripe, the portal's payment processor, only parses its events: the portal's handlers run its jobs
    commands={"portal": Loaded("synctool.platforms.portal.commands:app")},
    routes=Hook("synctool.platforms.portal.routes:routes"),
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
    ),
    migrations=Loaded("synctool.platforms.portal.tables:MIGRATIONS"),
)
