"""Givebutter's recurring plans as synctool records them (``Platform.migrations``: the migration set
``synctool.givebutter``): ``plans`` (one row a plan: its donor, amount, frequency, status, charges and failures) and
``plan_events`` (each plan event applied: a webhook's, a poll's or backfill's, and each charge). Written by
``plans.py``; read by ``synctool plans``, the Plans page, reconcile and the overview."""

from __future__ import annotations

from synctool.platform import store


def givebutter_plans_001(conn: store.Connection) -> None:
    """The plans and their events (issue 53's shared design, "Tables")."""
    store.run_script(
        conn,
        """
    CREATE TABLE IF NOT EXISTS plans (
        plan_id TEXT PRIMARY KEY,
        email TEXT, first_name TEXT, last_name TEXT, phone TEXT, contact_id TEXT,
        constituent_id TEXT,
        amount TEXT,
        currency TEXT NOT NULL DEFAULT 'USD',
        frequency TEXT,
        status TEXT NOT NULL,
        platform_status TEXT,
        started_at TEXT,
        ended_at TEXT,
        next_charge TEXT,
        last_charge_at TEXT, last_charge_amount TEXT, last_charge_transaction TEXT,
        failures INTEGER NOT NULL DEFAULT 0,
        last_failure_at TEXT,
        changed TEXT,
        news TEXT,
        updated_at TEXT NOT NULL,
        seen_at TEXT
    );
    CREATE INDEX IF NOT EXISTS plans_constituent ON plans (constituent_id);
    CREATE INDEX IF NOT EXISTS plans_status ON plans (status);
    CREATE INDEX IF NOT EXISTS plans_email ON plans (email);
    CREATE TABLE IF NOT EXISTS plan_events (
        id TEXT PRIMARY KEY,
        plan_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        at TEXT NOT NULL,
        detail TEXT,
        followup TEXT
    );
    CREATE INDEX IF NOT EXISTS plan_events_plan ON plan_events (plan_id, at);
    CREATE INDEX IF NOT EXISTS plan_events_kind ON plan_events (kind, at)
    """,
    )


MIGRATIONS = [givebutter_plans_001]
