"""Square, the point-of-sale platform: orders and payments become gifts, customers become donors.

Each hook names its implementation (``docs/platforms.md``), imported when it is first called."""

from __future__ import annotations

from pydantic import Field

from synctool.platform import Client, Fake, Hook, Loaded, Mappings, Platform, PlatformSection, Webhook, handlers_in, setting_in


class PosConfig(PlatformSection):
    """``pos:`` in config.yaml."""

    base_url: str = "https://connect.squareup.com"
    square_version: str = "2026-08-19"
    #: the exact URL registered with Square, byte for byte: its signature covers it (`webhooks register` saves
    #: the one it registers, which wins)
    notification_url: str | None = None
    #: the backup poll re-reads this much before its watermark (an offline POS sale reaches Square up to 72 h
    #: late, with the time it arrived), and reads this far back on its first run
    poll_overlap_minutes: int = Field(60, ge=0)
    poll_first_lookback_hours: int = Field(24, ge=1)


DEFAULT_CONSTITUENT = setting_in(
    "synctool.platforms.square.settings",
    "pos-default-constituent",
    "Show or set the constituent that POS orders without a customer are credited to.",
    "PosDefaultBody",
    title="Point-of-sale orders without a customer",
    description="A point-of-sale order that names no customer (no e-mail, no name) is credited to this "
    "constituent; while none is set, such an order fails and waits for a person.",
    example="--email walkin@example.org --first-name Walk-in --last-name Customer",
)


PLATFORM = Platform(
    name="square",
    role="pos",
    # Square signs the exact notification URL: the receiver reads it once as it starts
    webhook=Webhook.of(
        __name__,
        "POS_WEBHOOK_SIGNATURE_KEY",
        "Square's webhook signature key",
        settings=Hook(f"{__name__}.notification:for_receiver"),
    ),
    client=Client.of(__name__, "POS_ACCESS_TOKEN", "Square's access token (orders, customers, locations)"),
    fake=Fake.of(__name__, "FakeSquare", key="demo-square-token", contract="square.json"),
    external_id_prefixes=("pos_order_",),
    mappings=Mappings(types=("default",), payment_case="upper", payment_examples="pos:<tender type> (CARD, CASH, ...)"),
    expected=Hook("synctool.platforms.square.reconcile:expected"),
    payouts=Hook("synctool.platforms.square.reconcile:payouts"),
    backfill=True,
    registration=Loaded("synctool.platforms.square.registration"),
    poll=Hook("synctool.platforms.square.poll:poll"),
    handlers=handlers_in(__name__, rules=("order",), refunds=("order_refund",)),
    commands={"pos": Loaded("synctool.platforms.square.commands:app")},
    settings=(DEFAULT_CONSTITUENT,),
    routes=Hook("synctool.platforms.square.routes:routes"),
    # ``doctor``: Square signs the exact notification URL, so synctool must know it
    checks=Hook("synctool.platforms.square.notification:checks"),
    config=PosConfig,
    config_env={"POS_API_BASE_URL": "base_url", "POS_WEBHOOK_NOTIFICATION_URL": "notification_url"},
)
