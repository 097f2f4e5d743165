"""Givebutter, the donation platform: donations, tickets, campaigns and refunds, with a backup poll.

Each hook names its implementation (``docs/platforms.md``), imported when it is first called: a command that needs
none of them loads none of them."""

from __future__ import annotations

from pydantic import Field

from synctool.platform import Client, Fake, Hook, Loaded, Mappings, Platform, PlatformSection, Webhook, handlers_in


class DonationsConfig(PlatformSection):
    """``donations:`` in config.yaml."""

    base_url: str = "https://api.givebutter.com/v1"
    poll_overlap_minutes: int = Field(60, ge=0)
    poll_first_lookback_hours: int = Field(24, ge=1)
    default_fund_id: int | None = None
    default_campaign_id: int | None = None


PLATFORM = Platform(
    name="givebutter",
    role="donations",
    webhook=Webhook.of(__name__, "DONATIONS_WEBHOOK_SECRET", "Givebutter's webhook signing secret"),
    client=Client.of(__name__, "DONATIONS_API_KEY", "Givebutter's API key (backup poll, campaigns)"),
    fake=Fake.of(__name__, "FakeGivebutter", key="demo-givebutter-key", path="/v1", contract="givebutter.json"),
    external_id_prefixes=("donations_",),
    mappings=Mappings(
        # Givebutter's campaign types (``donations:event``), then a recurring plan's and the fallback
        types=("general", "collect", "fundraise", "event", "recurring", "default"),
        payment_case="lower",
        payment_examples="donations:<method> (card, paypal, check, cash...)",
        campaigns=Hook("synctool.platforms.givebutter.ops:campaign_names"),
    ),
    expected=Hook("synctool.platforms.givebutter.reconcile:expected"),
    payouts=Hook("synctool.platforms.givebutter.reconcile:payouts"),
    backfill=True,
    missed=Hook("synctool.platforms.givebutter.deliveries:missed"),
    registration=Loaded("synctool.platforms.givebutter.registration"),
    handlers={
        **handlers_in(__name__, rules=("transaction", "ticket", "campaign"), refunds=("refund",), plan_job=("plan",)),
        "invitations": Hook(f"{__name__}.events:order_invitations"),
    },
    commands={"donations": Loaded("synctool.platforms.givebutter.commands:app")},
    routes=Hook("synctool.platforms.givebutter.routes:routes"),
    poll=Hook("synctool.platforms.givebutter.poll:poll"),
    refetch=Hook("synctool.platforms.givebutter.ops:refetch"),
    checkins=Hook("synctool.platforms.givebutter.checkins:checkins"),
    plans=Hook("synctool.platforms.givebutter.ops:backfill_plans"),
    # recurring plans (issue 53): recorded in the core's ``plans`` / ``plan_events`` as source ``donations``
    plan_charges=Hook("synctool.platforms.givebutter.plans:charges"),
    config=DonationsConfig,
    config_env={"DONATIONS_API_BASE_URL": "base_url"},
)
