"""Givebutter, the donation platform: donations, tickets, campaigns and refunds, with a backup poll."""

from __future__ import annotations

from typing import Any

from synctool.platforms import Client, Fake, Mappings, Platform, Webhook

PLATFORM = Platform(
    name="givebutter",
    role="donations",
    webhook=Webhook("donations", "synctool.platforms.givebutter.webhook", secret="DONATIONS_WEBHOOK_SECRET"),
    client=Client(
        "donations", "synctool.platforms.givebutter.client:from_runtime", probe="synctool.platforms.givebutter.client:probe"
    ),
    secrets={
        "DONATIONS_API_KEY": "Givebutter's API key (backup poll, campaigns)",
        "DONATIONS_WEBHOOK_SECRET": "Givebutter's webhook signing secret",
    },
    fake=Fake(
        "givebutter",
        "synctool.platforms.givebutter.fake",
        "FakeGivebutter",
        "DONATIONS_API_KEY",
        "demo-givebutter-key",
        "DONATIONS_API_BASE_URL",
        "/v1",
        contract="givebutter.json",
    ),
    external_id_prefixes=("donations_",),
    mappings=Mappings(
        # Givebutter's campaign types (``donations:event``), then a recurring plan's and the fallback
        types=("general", "collect", "fundraise", "event", "recurring", "default"),
        payment_case="lower",
        payment_examples="donations:<method> (card, paypal, check, cash...)",
    ),
    reconcile="synctool.platforms.givebutter.reconcile",
    backfill=True,
    missed="synctool.platforms.givebutter.deliveries:missed",
    registration="synctool.platforms.givebutter.registration",
    handlers=("synctool.platforms.deposits", "synctool.platforms.givebutter.rules", "synctool.platforms.givebutter.refunds"),
    commands={"donations": "synctool.platforms.givebutter.commands:app"},
    routes="synctool.platforms.givebutter:routes",
    poll="synctool.platforms.givebutter.poll:poll",
    refetch="synctool.platforms.givebutter.ops:refetch",
)


def routes(call: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
    from synctool.platforms.givebutter import ops, poll

    admin = roles["admin"]
    return [
        ("GET", "/api/donations/campaigns", admin, lambda c: ops.campaigns(c.conn, c.rt)),
        ("POST", "/api/donations/campaigns/refresh", admin, lambda c: ops.campaigns(c.conn, c.rt, refresh=True)),
        ("POST", "/api/poll-now", admin, lambda c: poll.poll(c.conn, c.rt)),
        ("POST", "/api/dev/poll-now", admin, lambda c: poll.poll(c.conn, c.rt)),
        ("POST", "/api/poll-fresh", admin, lambda c: poll.poll(c.conn, c.rt, fresh=True)),
    ]
