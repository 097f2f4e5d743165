"""PayPal, the payment platform: donations through PayPal Checkout (captures), subscriptions and their payments,
refunds, reversals and lost disputes, with a backup poll through Transaction Search (issue 60).

A built-in that is in use only when ``platforms:`` names it. Each hook names its implementation
(``docs/platforms.md``), imported when it is first called."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from synctool.platform import Client, Fake, Hook, Loaded, Mappings, Platform, PlatformSection, Webhook

PACKAGE = __name__


class PayPalConfig(PlatformSection):
    """``paypal:`` in config.yaml (``PAYPAL_API_BASE_URL`` overrides ``base_url``)."""

    #: live; the sandbox is https://api-m.sandbox.paypal.com
    base_url: str = "https://api-m.paypal.com"
    #: the id PayPal gave synctool's webhook (``webhooks register`` keeps it as the secret ``PAYPAL_WEBHOOK_ID``)
    webhook_id: str | None = Field(None, max_length=50)
    #: how a delivery's signature is checked: ``certificate`` (PayPal's certificate, fetched once from PayPal's own
    #: host) or ``api`` (PayPal's verify-webhook-signature API, one request per delivery)
    verification: Literal["certificate", "api"] = "certificate"
    #: more places PayPal's certificates may be fetched from, beside PayPal's own (a test's fake): each a URL
    #: ending in ``/``; https, or http on a loopback or ``.invalid`` host only
    cert_url_prefixes: list[str] = []
    #: Transaction Search runs ~3 h behind: the poll reads this far before its last run's start
    poll_overlap_minutes: int = Field(240, ge=0)
    poll_first_lookback_hours: int = Field(24, ge=1)
    #: the fund of a PayPal gift that no ``paypal:`` mapping codes
    default_fund_id: int | None = None
    #: the PayPal account's time zone (IANA): a gift's day
    timezone: str | None = None

    @field_validator("cert_url_prefixes")
    @classmethod
    def _prefixes(cls, value: list[str]) -> list[str]:
        for prefix in value:
            parts = urlsplit(prefix)
            local = parts.hostname in ("127.0.0.1", "localhost", "::1") or str(parts.hostname).endswith(".invalid")
            if not prefix.endswith("/") or parts.query or parts.fragment or not (parts.scheme == "https" or local):
                raise ValueError(f"not a certificate folder: {prefix!r} (https://HOST/PATH/, or http on a loopback host)")
        return value


PLATFORM = Platform(
    name="paypal",
    role="paypal",
    webhook=Webhook(
        Loaded(f"{PACKAGE}.webhook"),
        secret="PAYPAL_WEBHOOK_ID",
        secret_help="the id of synctool's webhook at PayPal (its signatures cover it; `webhooks register` keeps it)",
        settings=Hook(f"{PACKAGE}.webhook:settings"),
    ),
    client=Client(
        Hook(f"{PACKAGE}.client:from_runtime"),
        probe=Hook(f"{PACKAGE}.client:probe"),
        key="PAYPAL_CLIENT_SECRET",
        key_help="PayPal's REST app secret (OAuth client credentials)",
        other_secrets={"PAYPAL_CLIENT_ID": "PayPal's REST app client id"},
    ),
    fake=Fake.of(__name__, "FakePayPal", key="demo-paypal-secret", contract="paypal.json"),
    external_id_prefixes=("paypal_",),
    mappings=Mappings(
        types=("default", "recurring"),
        payment_case="lower",
        payment_examples="paypal:<source> (paypal, card, venmo)",
        campaigns=Hook(f"{PACKAGE}.ops:campaigns"),
    ),
    expected=Hook(f"{PACKAGE}.reconcile:expected"),
    payouts=Hook(f"{PACKAGE}.reconcile:payouts"),
    backfill=True,
    missed=Hook(f"{PACKAGE}.poll:missed"),
    registration=Loaded(f"{PACKAGE}.registration"),
    handlers={
        "capture": Hook(f"{PACKAGE}.rules:capture"),
        "sale": Hook(f"{PACKAGE}.rules:sale"),
        "refund": Hook(f"{PACKAGE}.rules:refund"),
        "plan": Hook(f"{PACKAGE}.plans:plan"),
    },
    plans=Hook(f"{PACKAGE}.plans:backfill"),
    poll=Hook(f"{PACKAGE}.poll:poll"),
    refetch=Hook(f"{PACKAGE}.poll:refetch"),
    checks=Hook(f"{PACKAGE}.ops:checks"),
    config=PayPalConfig,
    config_env={"PAYPAL_API_BASE_URL": "base_url"},
)
