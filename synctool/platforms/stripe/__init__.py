"""Stripe, the member portal's payment processor: its checkout events confirm portal payments (the
portal's rules act on them)."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from synctool.config import Section
from synctool.platforms import Client, Fake, Platform, Registration, Webhook

if TYPE_CHECKING:
    from synctool.config import Config
    from synctool.platforms.webhook import Adapter, Missed
    from synctool.runtime import Runtime


class PaymentsConfig(Section):
    """``payments:`` in config.yaml."""

    base_url: str = "https://api.stripe.com"


def section(config: Config) -> PaymentsConfig:
    """This platform's config section, typed."""
    return config.section("payments")


def _adapter() -> Adapter:
    from synctool.platforms.stripe import webhook

    return webhook


def _client(rt: Runtime) -> Any:
    from synctool.platforms.stripe.client import from_runtime

    return from_runtime(rt)


def _probe(made: Any) -> str:
    from synctool.platforms.stripe.client import probe

    return probe(made)


def _fake(key: str) -> tuple[Any, Any]:
    from synctool.platforms.stripe.fake import FakeStripe, create_app

    made = FakeStripe(key)
    return made, create_app(made)


def _registration() -> Registration:
    from synctool.platforms.stripe import registration

    return registration


def _missed(conn: sqlite3.Connection, rt: Runtime, since: str) -> tuple[list[Missed], int]:
    from synctool.platforms.stripe import deliveries

    return deliveries.missed(conn, rt, since)


PLATFORM = Platform(
    name="stripe",
    role="payments",
    webhook=Webhook("payments", _adapter, secret="PAYMENTS_WEBHOOK_SECRET"),
    client=Client("payments", _client, probe=_probe),
    secrets={
        "PAYMENTS_API_KEY": "Stripe's secret API key (sk_...; registers the webhook endpoint)",
        "PAYMENTS_WEBHOOK_SECRET": "Stripe's endpoint signing secret (whsec_...)",
    },
    fake=Fake("stripe", _fake, "PAYMENTS_API_KEY", "sk_test_demo", "PAYMENTS_API_BASE_URL", "", contract="stripe.json"),
    missed=_missed,
    registration=_registration,
    config=PaymentsConfig,
    config_env={"PAYMENTS_API_BASE_URL": "base_url"},
)
