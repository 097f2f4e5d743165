"""Stripe, the member portal's payment processor: its checkout events confirm portal payments (the
portal's rules act on them)."""

from __future__ import annotations

from synctool.platforms import Client, Fake, Platform, Webhook

PLATFORM = Platform(
    name="stripe",
    role="payments",
    webhook=Webhook("payments", "synctool.platforms.stripe.webhook", secret="PAYMENTS_WEBHOOK_SECRET"),
    client=Client("payments", "synctool.platforms.stripe.client:from_runtime", probe="synctool.platforms.stripe.client:probe"),
    secrets={
        "PAYMENTS_API_KEY": "Stripe's secret API key (sk_...; registers the webhook endpoint)",
        "PAYMENTS_WEBHOOK_SECRET": "Stripe's endpoint signing secret (whsec_...)",
    },
    fake=Fake(
        "stripe",
        "synctool.platforms.stripe.fake",
        "FakeStripe",
        "PAYMENTS_API_KEY",
        "sk_test_demo",
        "PAYMENTS_API_BASE_URL",
        "",
        contract="stripe.json",
    ),
    missed="synctool.platforms.stripe.deliveries:missed",
    registration="synctool.platforms.stripe.registration",
)
