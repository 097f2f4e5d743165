"""stripe-donations' own table (``Platform.migrations``: the set ``synctool.stripe-donations``): the recurring
donors' subscriptions as its events and the poll last said them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool.platform import store

if TYPE_CHECKING:
    from sqlite_utils import Database


def m001_plans(db: Database) -> None:
    """One row per Stripe subscription: its state in synctool's words, its money, and the event that said it."""
    store.run_script(
        db.conn,
        """
    CREATE TABLE IF NOT EXISTS stripe_donation_plans (
        id TEXT PRIMARY KEY, status TEXT NOT NULL, stripe_status TEXT, customer TEXT, email TEXT,
        amount TEXT, currency TEXT, frequency TEXT, last_event TEXT, updated_at TEXT NOT NULL
    );
    """,
    )


MIGRATIONS = [m001_plans]
