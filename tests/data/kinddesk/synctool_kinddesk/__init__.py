"""KindDesk for synctool: a donation platform with HMAC-signed webhooks (gifts and refunds), a gifts API, a
backup poll, reconcile and backfill, payouts, a record of failed deliveries, webhook registration, a config
section, a doctor row, a command group and an admin API route.

The whole platform as synctool sees it: its config section, its secrets, and its hooks, each a function of this
module that imports its implementation only when called (so a command that needs none of them imports none of
KindDesk's modules), typed as ``synctool.platforms.Platform`` says."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import date
from typing import Any

from synctool.config import Section
from synctool.platforms import ApiRoute, Client, Fake, Mappings, Platform, Registration, Webhook
from synctool.platforms.reconcile import Expected, Payout
from synctool.platforms.webhook import Adapter, Missed
from synctool.runtime import Runtime

ROLE = "kind"


class KindConfig(Section):
    """``kind:`` in synctool's config.yaml (``KIND_API_BASE_URL`` overrides ``base_url``)."""

    base_url: str = "https://api.kinddesk.example/v1"
    #: the fund of a gift no ``kind:`` mapping codes
    default_fund_id: int | None = None
    #: the KindDesk account's time zone (IANA): a gift's day when the gift does not name its own
    timezone: str | None = None


def _adapter() -> Adapter:
    from synctool_kinddesk import webhook

    return webhook


def _client(rt: Runtime) -> Any:
    from synctool_kinddesk.client import KindClient

    return KindClient(rt)


def _probe(client: Any) -> str:
    return f"{len(client.gifts())} gift(s) listed"


def _fake(key: str) -> tuple[Any, Any]:
    from synctool_kinddesk.fake import FakeKind, create_app

    made = FakeKind(key)
    return made, create_app(made)


def _handlers() -> None:
    from synctool_kinddesk import rules  # noqa: F401  (importing it registers its @handler functions)


def _poll(conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    from synctool_kinddesk import poll

    return poll.poll(conn, rt, fresh=fresh, lookback=lookback)


def _expected(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    from synctool_kinddesk import reconcile

    return reconcile.expected(conn, rt, start, end)


def _payouts(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Payout], int]:
    from synctool_kinddesk import reconcile

    return reconcile.payouts(conn, rt, start, end)


def _missed(conn: sqlite3.Connection, rt: Runtime, since: str) -> tuple[list[Missed], int]:
    from synctool_kinddesk import poll

    return poll.missed(conn, rt, since)


def _refetch(conn: sqlite3.Connection, rt: Runtime, rows: list[sqlite3.Row]) -> tuple[int, list[str]]:
    from synctool_kinddesk import poll

    return poll.refetch(conn, rt, rows)


def _registration() -> Registration:
    from synctool_kinddesk import registration

    return registration


def _checks(conn: sqlite3.Connection, rt: Runtime) -> list[tuple[str, str, str, str]]:
    from synctool_kinddesk import ops

    return ops.checks(conn, rt)


def _commands() -> Any:
    from synctool_kinddesk.commands import app

    return app


def _gifts_listed(call: Any) -> Any:
    from synctool_kinddesk import ops

    return ops.gifts_listed(call)


def _routes() -> Sequence[ApiRoute]:
    return [ApiRoute("GET", "/api/kind/gifts", "viewer", _gifts_listed)]


PLATFORM = Platform(
    name="kinddesk",
    role=ROLE,
    webhook=Webhook(ROLE, _adapter, secret="KIND_WEBHOOK_SECRET"),
    client=Client(ROLE, _client, probe=_probe),
    secrets={"KIND_API_KEY": "KindDesk's API key", "KIND_WEBHOOK_SECRET": "signs KindDesk's webhooks"},
    fake=Fake("kinddesk", _fake, "KIND_API_KEY", "kind-demo-key", "KIND_API_BASE_URL", "/v1"),
    external_id_prefixes=("kind_",),
    mappings=Mappings(types=("default", "monthly"), payment_case="lower", payment_examples="kind:<method> (card, paypal, ach)"),
    expected=_expected,
    payouts=_payouts,
    backfill=True,
    registration=_registration,
    handlers=_handlers,
    commands={"kind": _commands},
    routes=_routes,
    poll=_poll,
    missed=_missed,
    refetch=_refetch,
    checks=_checks,
    config=KindConfig,
    config_env={"KIND_API_BASE_URL": "base_url"},
)
