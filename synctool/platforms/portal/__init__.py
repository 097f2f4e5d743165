"""The organisation's member portal: users, memberships, payments, enrollments and family links."""

from __future__ import annotations

from synctool.platform import Hook, Loaded, Platform, Target, Webhook

#: the payments platform's source (Stripe's role): the portal's handlers run its jobs (``Platform.handles``)
PAYMENTS = "payments"


PLATFORM = Platform(
    name="portal",
    role="portal",
    webhook=Webhook.of(__name__, "PORTAL_WEBHOOK_SECRET", "signs the portal's pushes to /webhooks/portal"),
    # its gifts carry the portal's payment ids (no prefix): synctool's gift ledger knows them
    expected=Hook("synctool.platforms.portal.reconcile:expected"),
    handlers={
        "push": Hook(f"{__name__}.pushes:push"),
        "user": Hook(f"{__name__}.users:user"),
        "payment": Hook(f"{__name__}.payments:payment"),
        "enrollment": Hook(f"{__name__}.payments:enrollment"),
        "membership": Hook(f"{__name__}.memberships:membership"),
        "relationship": Hook(f"{__name__}.relationships:relationship"),
        # Stripe's events and refunds: the portal's rules act on them
        f"{PAYMENTS}:stripe_event": Hook(f"{__name__}.stripe_events:stripe_event"),
        f"{PAYMENTS}:charge_refund": Hook(f"{__name__}.refunds:charge_refund"),
    },
    # Stripe, the portal's payment processor, only parses its events: the portal's handlers run its jobs
    handles=(PAYMENTS,),
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
