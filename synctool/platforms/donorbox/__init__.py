"""Donorbox, the donation platform: its custom webhooks (donations and plans), its API (donations, plans,
campaigns) for the backup poll, reconcile and backfill, and its recurring plans. ``docs/donorbox.md``.

Each hook names its implementation (``docs/platforms.md``), imported when it is first called: a command that needs
none of them loads none of them. Installed with synctool, in use only when ``platforms:`` names ``donorbox``."""

from __future__ import annotations

from pydantic import Field

from synctool.platform import Client, Fake, Hook, Loaded, Mappings, Platform, PlatformSection, Webhook, handlers_in


class DonorboxConfig(PlatformSection):
    """``donorbox:`` in config.yaml (``DONORBOX_API_BASE_URL`` overrides ``base_url``)."""

    base_url: str = "https://donorbox.org"
    #: the Donorbox account's time zone (IANA): a donation's day on the organisation's calendar
    timezone: str | None = None
    #: the fund (and CRM campaign) of a donation no ``donorbox:`` mapping codes
    default_fund_id: int | None = None
    default_campaign_id: int | None = None
    poll_overlap_minutes: int = Field(60, ge=0)
    poll_first_lookback_hours: int = Field(48, ge=1)


PLATFORM = Platform(
    name="donorbox",
    role="donorbox",
    webhook=Webhook.of(__name__, "DONORBOX_WEBHOOK_SECRET", "the Signature Secret of Donorbox's custom webhook"),
    client=Client(
        Hook(f"{__name__}.client:DonorboxClient"),
        probe=Hook(f"{__name__}.client:probe"),
        key="DONORBOX_API_KEY",
        key_help="Donorbox's API key (backup poll, reconcile, plans)",
        # Donorbox's API takes HTTP Basic auth: the organisation's login e-mail and the key (README, "Make API calls")
        other_secrets={"DONORBOX_ACCOUNT_EMAIL": "the Donorbox login e-mail its API key belongs to (Basic auth)"},
    ),
    fake=Fake.of(__name__, "FakeDonorbox", key="donorbox-demo-key", contract="donorbox.json"),
    external_id_prefixes=("donorbox_",),
    mappings=Mappings(
        types=("recurring", "default"),
        payment_case="lower",
        payment_examples="donorbox:<donation_type> (stripe, paypal...)",
        campaigns=Hook("synctool.platforms.donorbox.client:campaigns"),
    ),
    expected=Hook("synctool.platforms.donorbox.reconcile:expected"),
    backfill=True,
    registration=Loaded("synctool.platforms.donorbox.registration"),
    handlers=handlers_in(__name__, rules=("donation", "refund"), plans=("plan",)),
    plans=Hook("synctool.platforms.donorbox.plans:backfill_plans"),
    poll=Hook("synctool.platforms.donorbox.poll:poll"),
    refetch=Hook("synctool.platforms.donorbox.poll:refetch"),
    checks=Hook("synctool.platforms.donorbox.ops:checks"),
    config=DonorboxConfig,
    config_env={"DONORBOX_API_BASE_URL": "base_url"},
)
