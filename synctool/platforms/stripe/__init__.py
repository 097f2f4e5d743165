"""Stripe, the member portal's payment processor: its checkout events confirm portal payments (the
portal's rules act on them)."""

from __future__ import annotations

from synctool.platform import Client, Fake, Hook, Loaded, Platform, PlatformSection, Webhook


class PaymentsConfig(PlatformSection):
    """``payments:`` in config.yaml."""

    base_url: str = "https://api.stripe.com"


PLATFORM = Platform(
    name="stripe",
    role="payments",
    webhook=Webhook.of(__name__, "PAYMENTS_WEBHOOK_SECRET", "Stripe's endpoint signing secret (whsec_...)"),
    client=Client.of(__name__, "PAYMENTS_API_KEY", "Stripe's secret API key (sk_...; registers the webhook endpoint)"),
    fake=Fake.of(__name__, "FakeStripe", key="sk_test_demo", contract="stripe.json"),
    missed=Hook("synctool.platforms.stripe.deliveries:missed"),
    registration=Loaded("synctool.platforms.stripe.registration"),
    config=PaymentsConfig,
    config_env={"PAYMENTS_API_BASE_URL": "base_url"},
)
