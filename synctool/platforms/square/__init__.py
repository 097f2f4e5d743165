"""Square, the point-of-sale platform: orders and payments become gifts, customers become donors.

Each hook below imports its implementation when it is called (``docs/platforms.md``)."""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import TYPE_CHECKING, Any

from pydantic import Field

from synctool.config import Section
from synctool.platforms import ApiRoute, Client, Fake, Mappings, Platform, Registration, Webhook, setting_in

if TYPE_CHECKING:
    from synctool.config import Config
    from synctool.platforms.reconcile import Expected, Payout
    from synctool.platforms.webhook import Adapter
    from synctool.runtime import Runtime


class PosConfig(Section):
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


def section(config: Config) -> PosConfig:
    """This platform's config section, typed."""
    return config.section("pos")


def _settings(rt: Runtime) -> dict[str, str | None]:
    from synctool.platforms.square import notification

    return notification.for_receiver(rt)


def _adapter() -> Adapter:
    from synctool.platforms.square import webhook

    return webhook


def _client(rt: Runtime) -> Any:
    from synctool.platforms.square.client import from_runtime

    return from_runtime(rt)


def _probe(made: Any) -> str:
    from synctool.platforms.square.client import probe

    return probe(made)


def _fake(key: str) -> tuple[Any, Any]:
    from synctool.platforms.square.fake import FakeSquare, create_app

    made = FakeSquare(key)
    return made, create_app(made)


def _expected(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    from synctool.platforms.square import reconcile

    return reconcile.expected(conn, rt, start, end)


def _payouts(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    from synctool.platforms.square import reconcile

    return reconcile.payouts(conn, rt, start, end)


def _registration() -> Registration:
    from synctool.platforms.square import registration

    return registration


def _handlers() -> None:
    from synctool.platforms import deposits  # noqa: F401
    from synctool.platforms.square import refunds, rules  # noqa: F401


def _commands() -> Any:
    from synctool.platforms.square.commands import app

    return app


def _routes() -> list[ApiRoute]:
    from synctool.platforms.square.routes import routes

    return routes()


def _poll(conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    from synctool.platforms.square import poll

    return poll.poll(conn, rt, fresh=fresh, lookback=lookback)


def _checks(conn: sqlite3.Connection, rt: Runtime) -> list[tuple[str, str, str, str]]:
    """``doctor``: Square signs the exact notification URL, so synctool must know it."""
    from synctool.platforms.square import notification

    if notification.url(conn, rt):
        return []
    return [("pos notification url", "fail", "not set: Square's deliveries cannot be verified",
             "synctool webhooks register --url https://YOUR.HOST (or set pos.notification_url in config)")]  # fmt: skip


DEFAULT_CONSTITUENT = setting_in(
    "synctool.platforms.square.settings",
    "pos-default-constituent",
    "Show or set the constituent that POS orders without a customer are credited to.",
    "PosDefaultBody",
    example="--email walkin@example.org --first-name Walk-in --last-name Customer",
)


PLATFORM = Platform(
    name="square",
    role="pos",
    webhook=Webhook("pos", _adapter, secret="POS_WEBHOOK_SIGNATURE_KEY", settings=_settings),
    client=Client("pos", _client, probe=_probe),
    secrets={
        "POS_ACCESS_TOKEN": "Square's access token (orders, customers, locations)",
        "POS_WEBHOOK_SIGNATURE_KEY": "Square's webhook signature key",
    },
    fake=Fake("square", _fake, "POS_ACCESS_TOKEN", "demo-square-token", "POS_API_BASE_URL", "", contract="square.json"),
    external_id_prefixes=("pos_order_",),
    mappings=Mappings(types=("default",), payment_case="upper", payment_examples="pos:<tender type> (CARD, CASH, ...)"),
    expected=_expected,
    payouts=_payouts,
    backfill=True,
    registration=_registration,
    poll=_poll,
    handlers=_handlers,
    commands={"pos": _commands},
    settings=(DEFAULT_CONSTITUENT,),
    routes=_routes,
    checks=_checks,
    config=PosConfig,
    config_env={"POS_API_BASE_URL": "base_url", "POS_WEBHOOK_NOTIFICATION_URL": "notification_url"},
)
