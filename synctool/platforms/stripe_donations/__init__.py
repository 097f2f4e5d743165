"""Stripe donations: the payments a nonprofit's own Stripe account takes that the member portal did not make
(Payment Links, Checkout, donation tools that charge on the account, subscriptions), each one CRM gift.

Its deliveries come on Stripe's endpoint (``/webhooks/payments``, ``PAYMENTS_WEBHOOK_SECRET``): Stripe's adapter
verifies and parses them, and this platform claims the donations (``Platform.claims``) while it is in use, beside
``stripe``. Its API reads use the account's secret key (``PAYMENTS_API_KEY``). ``docs/stripe-donations.md``.
"""

from __future__ import annotations

from typing import Optional

from synctool.platform import Client, Fake, Hook, Loaded, Mappings, Platform, PlatformSection, Served, handlers_in

ROLE = "stripe-donations"


class DonationsConfig(PlatformSection):
    """``stripe-donations:`` in config.yaml (``STRIPE_DONATIONS_API_BASE_URL`` overrides ``base_url``)."""

    #: Stripe's API (None: ``payments.base_url``, the same account's)
    base_url: Optional[str] = None
    #: the fund of a gift no mapping codes
    default_fund_id: Optional[int] = None
    #: the Stripe account's time zone (IANA): a gift's day (None: the organisation's ``timezone:``)
    timezone: Optional[str] = None


PLATFORM = Platform(
    name="stripe-donations",
    role=ROLE,
    client=Client(
        Hook(f"{__name__}.client:from_runtime"),
        probe=Hook(f"{__name__}.client:probe"),
        key="PAYMENTS_API_KEY",
        key_help="Stripe's secret API key (sk_..., or a restricted key that reads charges, sessions, invoices, subscriptions and payouts)",
    ),
    fake=Fake(make=Served("synctool.platforms.stripe.fake:FakeStripe"), key="sk_test_demo", contract="stripe.json"),
    external_id_prefixes=("stripe_",),
    mappings=Mappings(
        types=("default", "recurring"),
        payment_case="lower",
        payment_examples="stripe-donations:<method> (card, us_bank_account, link)",
    ),
    claims={"payments": Hook(f"{__name__}.webhook:claim")},
    handlers=handlers_in(__name__, rules=("gift", "refund", "dispute_refund"), plans=("plan",)),
    expected=Hook(f"{__name__}.reconcile:expected"),
    payouts=Hook(f"{__name__}.reconcile:payouts"),
    backfill=True,
    poll=Hook(f"{__name__}.poll:poll"),
    plans=Hook(f"{__name__}.plans:backfill_plans"),
    registration=Loaded(f"{__name__}.registration"),
    checks=Hook(f"{__name__}.ops:checks"),
    config=DonationsConfig,
    config_env={"STRIPE_DONATIONS_API_BASE_URL": "base_url"},
)
