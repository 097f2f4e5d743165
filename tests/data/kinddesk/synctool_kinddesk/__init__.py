"""KindDesk for synctool: a donation platform with HMAC-signed webhooks, a gifts API and a backup poll.

The whole platform, as synctool sees it: its config section, its secrets, and its hooks, each importing its
implementation only when called."""

from __future__ import annotations

import sqlite3
from datetime import date
from typing import Any

from synctool.config import Section
from synctool.platforms import Client, Fake, Mappings, Platform, Webhook
from synctool.platforms.reconcile import Expected
from synctool.platforms.webhook import Adapter
from synctool.runtime import Runtime

ROLE = "kind"


class KindConfig(Section):
    """``kind:`` in synctool's config.yaml."""

    base_url: str = "https://api.kinddesk.example/v1"
    default_fund_id: int | None = None


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
    from synctool_kinddesk import rules  # noqa: F401


def _expected(conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    from synctool_kinddesk import rules

    return rules.expected(conn, rt, start, end)


def _poll(conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None) -> dict[str, Any]:
    from synctool_kinddesk import rules

    return rules.poll(conn, rt, fresh=fresh, lookback=lookback)


PLATFORM = Platform(
    name="kinddesk",
    role=ROLE,
    webhook=Webhook(ROLE, _adapter, secret="KIND_WEBHOOK_SECRET"),
    client=Client(ROLE, _client, probe=_probe),
    secrets={"KIND_API_KEY": "KindDesk's API key", "KIND_WEBHOOK_SECRET": "signs KindDesk's webhooks"},
    fake=Fake("kinddesk", _fake, "KIND_API_KEY", "kind-demo-key", "KIND_API_BASE_URL", "/v1"),
    external_id_prefixes=("kind_",),
    mappings=Mappings(types=("default",), payment_case="lower", payment_examples="kind:<method> (card, ...)"),
    expected=_expected,
    backfill=True,
    handlers=_handlers,
    poll=_poll,
    config=KindConfig,
    config_env={"KIND_API_BASE_URL": "base_url"},
)
