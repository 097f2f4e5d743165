"""Stripe, the member portal's payment processor: its checkout events confirm portal payments (the
portal's rules act on them)."""

from __future__ import annotations

from synctool.platform import Client, Fake, Hook, Loaded, Platform, Section, Served, Webhook, section_of


class PaymentsConfig(Section):
    """``payments:`` in config.yaml."""

    base_url: str = "https://api.stripe.com"


#: this platform's config section, typed: ``section(rt.config).base_url``
section = section_of("payments", PaymentsConfig)


PLATFORM = Platform(
    name="stripe",
    role="payments",
    webhook=Webhook("payments", Loaded("synctool.platforms.stripe.webhook"), secret="PAYMENTS_WEBHOOK_SECRET"),
    client=Client(
        "payments", Hook("synctool.platforms.stripe.client:from_runtime"), probe=Hook("synctool.platforms.stripe.client:probe")
    ),
    secrets={
        "PAYMENTS_API_KEY": "Stripe's secret API key (sk_...; registers the webhook endpoint)",
        "PAYMENTS_WEBHOOK_SECRET": "Stripe's endpoint signing secret (whsec_...)",
    },
    fake=Fake(
        "stripe",
        Served("synctool.platforms.stripe.fake:FakeStripe"),
        "PAYMENTS_API_KEY",
        "sk_test_demo",
        "PAYMENTS_API_BASE_URL",
        "",
        contract="stripe.json",
    ),  # fmt: skip
    missed=Hook("synctool.platforms.stripe.deliveries:missed"),
    registration=Loaded("synctool.platforms.stripe.registration"),
    config=PaymentsConfig,
    config_env={"PAYMENTS_API_BASE_URL": "base_url"},
)
