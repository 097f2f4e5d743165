"""KindDesk for synctool: a donation platform with HMAC-signed webhooks (gifts, refunds, subscriptions), a gifts API, a
backup poll, reconcile and backfill, payouts, a record of failed deliveries, webhook registration, a config
section, a doctor row, a command group and an admin API route.

The whole platform as synctool sees it: its config section, its secrets, and its hooks, each naming the function
(or module) that implements it, imported only when the hook is first called (so a command that needs none of them
imports none of KindDesk's modules), as ``docs/platforms.md`` says."""

from __future__ import annotations

from synctool.platform import Client, Fake, Hook, Loaded, Mappings, Platform, Section, Served, Webhook

ROLE = "kind"


class KindConfig(Section):
    """``kind:`` in synctool's config.yaml (``KIND_API_BASE_URL`` overrides ``base_url``)."""

    base_url: str = "https://api.kinddesk.example/v1"
    #: the fund of a gift no ``kind:`` mapping codes
    default_fund_id: int | None = None
    #: the KindDesk account's time zone (IANA): a gift's day when the gift does not name its own
    timezone: str | None = None


PLATFORM = Platform(
    name="kinddesk",
    role=ROLE,
    webhook=Webhook(Loaded("synctool_kinddesk.webhook"), secret="KIND_WEBHOOK_SECRET", secret_help="signs KindDesk's webhooks"),
    client=Client(
        Hook("synctool_kinddesk.client:KindClient"),
        probe=Hook("synctool_kinddesk.client:probe"),
        key="KIND_API_KEY",
        key_help="KindDesk's API key",
    ),
    fake=Fake(make=Served("synctool_kinddesk.fake:FakeKind"), key="kind-demo-key", path="/v1"),
    external_id_prefixes=("kind_",),
    mappings=Mappings(types=("default", "monthly"), payment_case="lower", payment_examples="kind:<method> (card, paypal, ach)"),
    expected=Hook("synctool_kinddesk.reconcile:expected"),
    payouts=Hook("synctool_kinddesk.reconcile:payouts"),
    backfill=True,
    registration=Loaded("synctool_kinddesk.registration"),
    handlers={
        "gift": Hook("synctool_kinddesk.rules:kind_gift"),
        "refund": Hook("synctool_kinddesk.rules:kind_refund"),
        "plan": Hook("synctool_kinddesk.rules:kind_plan"),
    },
    commands={"kind": Loaded("synctool_kinddesk.commands:app")},
    routes=Hook("synctool_kinddesk.ops:routes"),
    poll=Hook("synctool_kinddesk.poll:poll"),
    missed=Hook("synctool_kinddesk.poll:missed"),
    refetch=Hook("synctool_kinddesk.poll:refetch"),
    checks=Hook("synctool_kinddesk.ops:checks"),
    config=KindConfig,
    config_env={"KIND_API_BASE_URL": "base_url"},
)
