"""stripe-donations' own ``doctor`` row: its deliveries come on Stripe's endpoint, so ``stripe`` must be in use too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool.platform import Runtime

if TYPE_CHECKING:
    from synctool.platform import Connection


def checks(conn: Connection, rt: Runtime) -> list[tuple[str, str, str, str]]:
    named = rt.config.platforms
    if named is not None and "stripe" not in named:
        return [
            (
                "stripe-donations endpoint",
                "fail",
                "its events come on Stripe's endpoint (/webhooks/payments), which is not in use: no donation arrives",
                "add stripe to `platforms:` in the config file",
            )
        ]
    return [("stripe-donations endpoint", "ok", "donations are claimed from Stripe's deliveries on /webhooks/payments", "")]
