"""Givebutter, the donation platform: donations, tickets, campaigns and refunds, with a backup poll."""

from __future__ import annotations

from typing import Any

from synctool.platforms import Client, Fake, Webhook

WEBHOOK = Webhook("donations", "synctool.platforms.givebutter.webhook")
CLIENT = Client(
    "donations", "synctool.platforms.givebutter.client:from_runtime", probe="synctool.platforms.givebutter.client:probe"
)
#: registers and checks the platform's webhook (``synctool webhooks``)
REGISTRATION = "synctool.platforms.givebutter.registration"
SECRETS = {
    "DONATIONS_API_KEY": "Givebutter's API key (backup poll, campaigns)",
    "DONATIONS_WEBHOOK_SECRET": "Givebutter's webhook signing secret",
}
FAKE = Fake(
    "givebutter",
    "synctool.platforms.givebutter.fake",
    "FakeGivebutter",
    "DONATIONS_API_KEY",
    "demo-givebutter-key",
    "DONATIONS_API_BASE_URL",
    "/v1",
    contract="givebutter.json",
)

#: lists the platform's money and payouts in a period (``synctool reconcile``)
RECONCILE = "synctool.platforms.givebutter.reconcile"


def register_handlers() -> None:
    from synctool.platforms import reconcile
    from synctool.platforms.givebutter import refunds, rules  # noqa: F401  (their @handler rows)

    reconcile.register_handlers()


def register_commands() -> dict[str, str]:
    return {"donations": "synctool.platforms.givebutter.commands:app"}


def register_routes(call: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
    from synctool.platforms.givebutter import ops, poll

    admin = roles["admin"]
    return [
        ("GET", "/api/donations/campaigns", admin, lambda c: ops.campaigns(c.conn, c.rt)),
        ("POST", "/api/donations/campaigns/refresh", admin, lambda c: ops.campaigns(c.conn, c.rt, refresh=True)),
        ("POST", "/api/poll-now", admin, lambda c: poll.poll(c.conn, c.rt)),
        ("POST", "/api/dev/poll-now", admin, lambda c: poll.poll(c.conn, c.rt)),
        ("POST", "/api/poll-fresh", admin, lambda c: poll.poll(c.conn, c.rt, fresh=True)),
    ]
