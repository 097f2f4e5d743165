"""Givebutter, the donation platform: donations, tickets, campaigns and refunds, with a backup poll.

Each hook below imports its implementation when it is called, so a command that needs none of them loads none
of them; mypy checks each against the ``Platform`` contract (``docs/platforms.md``)."""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import TYPE_CHECKING, Any

from pydantic import Field

from synctool.config import Section
from synctool.platforms import ApiRoute, Client, Fake, Mappings, Platform, Registration, Webhook

if TYPE_CHECKING:
    from synctool.config import Config
    from synctool.platforms.reconcile import Expected, Payout
    from synctool.platforms.webhook import Adapter, Missed
    from synctool.runtime import Runtime


class DonationsConfig(Section):
    """``donations:`` in config.yaml."""

    base_url: str = "https://api.givebutter.com/v1"
    poll_overlap_minutes: int = Field(60, ge=0)
    poll_first_lookback_hours: int = Field(24, ge=1)
    default_fund_id: int | None = None
    default_campaign_id: int | None = None


def section(config: Config) -> DonationsConfig:
    """This platform's config section, typed."""
    return config.section("donations")


def _adapter() -> Adapter:
    from synctool.platforms.givebutter import webhook

    return webhook


def _client(rt: Runtime) -> Any:
    from synctool.platforms.givebutter.client import from_runtime

    return from_runtime(rt)


def _probe(made: Any) -> str:
    from synctool.platforms.givebutter.client import probe

    return probe(made)


def _fake(key: str) -> tuple[Any, Any]:
    from synctool.platforms.givebutter.fake import FakeGivebutter, create_app

    made = FakeGivebutter(key)
    return made, create_app(made)


def _expected(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    from synctool.platforms.givebutter import reconcile

    return reconcile.expected(conn, rt, start, end)


def _payouts(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    from synctool.platforms.givebutter import reconcile

    return reconcile.payouts(conn, rt, start, end)


def _registration() -> Registration:
    from synctool.platforms.givebutter import registration

    return registration


def _handlers() -> None:
    from synctool.platforms import deposits  # noqa: F401
    from synctool.platforms.givebutter import events, refunds, rules  # noqa: F401


def _commands() -> Any:
    from synctool.platforms.givebutter.commands import app

    return app


def _routes() -> list[ApiRoute]:
    from synctool.platforms.givebutter.routes import routes

    return routes()


def _poll(conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    from synctool.platforms.givebutter import poll

    return poll.poll(conn, rt, fresh=fresh, lookback=lookback)


def _missed(conn: sqlite3.Connection, rt: Runtime, since: str) -> tuple[list[Missed], int]:
    from synctool.platforms.givebutter import deliveries

    return deliveries.missed(conn, rt, since)


def _checkins(conn: sqlite3.Connection, rt: Runtime, campaign_id: str) -> dict[str, Any]:
    from synctool.platforms.givebutter import events

    return events.checkins(conn, rt, campaign_id)


def _refetch(conn: sqlite3.Connection, rt: Runtime, rows: list[sqlite3.Row]) -> tuple[int, list[str]]:
    from synctool.platforms.givebutter import ops

    return ops.refetch(conn, rt, rows)


PLATFORM = Platform(
    name="givebutter",
    role="donations",
    webhook=Webhook("donations", _adapter, secret="DONATIONS_WEBHOOK_SECRET"),
    client=Client("donations", _client, probe=_probe),
    secrets={
        "DONATIONS_API_KEY": "Givebutter's API key (backup poll, campaigns)",
        "DONATIONS_WEBHOOK_SECRET": "Givebutter's webhook signing secret",
    },
    fake=Fake(
        "givebutter",
        _fake,
        "DONATIONS_API_KEY",
        "demo-givebutter-key",
        "DONATIONS_API_BASE_URL",
        "/v1",
        contract="givebutter.json",
    ),  # fmt: skip
    external_id_prefixes=("donations_",),
    mappings=Mappings(
        # Givebutter's campaign types (``donations:event``), then a recurring plan's and the fallback
        types=("general", "collect", "fundraise", "event", "recurring", "default"),
        payment_case="lower",
        payment_examples="donations:<method> (card, paypal, check, cash...)",
    ),
    expected=_expected,
    payouts=_payouts,
    backfill=True,
    missed=_missed,
    registration=_registration,
    handlers=_handlers,
    commands={"donations": _commands},
    routes=_routes,
    poll=_poll,
    refetch=_refetch,
    checkins=_checkins,
    config=DonationsConfig,
    config_env={"DONATIONS_API_BASE_URL": "base_url"},
)
