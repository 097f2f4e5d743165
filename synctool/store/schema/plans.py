"""Monthly donors (issue 53): what synctool wrote to the CRM for recurring plans. LGL's group memberships and
contact reports carry no external id, so these two ledgers are what makes each write happen once
(``crm.group_memberships``, ``crm.contact_reports``). And (issue 60) the plans themselves, every platform's
(``synctool.platforms.plans``): ``plans`` and ``plan_events``, once Givebutter's own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool.store.transactions import run_script

if TYPE_CHECKING:
    from sqlite_utils import Database


def m019_plan_crm_ledgers(db: Database) -> None:
    """``crm_group_memberships``: one row per (constituent, group) synctool put in a group, its LGL id once known
    and its state (pending | unconfirmed | current | ending | ended); ``crm_contact_reports``: one row per contact
    report a caller's key asked for (pending | unconfirmed | done), with the body sent."""
    db.table("crm_group_memberships").create(
        {"constituent_id": str, "group_id": int, "crm_membership_id": int, "date_start": str, "date_end": str,
         "state": str, "job_id": str, "error": str, "updated_at": str},
        pk=("constituent_id", "group_id"),
        not_null={"constituent_id", "group_id", "date_start", "state", "updated_at"},
    )  # fmt: skip
    db.table("crm_group_memberships").create_index(["group_id", "state"])
    db.table("crm_contact_reports").create(
        {"key": str, "constituent_id": str, "crm_report_id": int, "state": str, "body": str, "job_id": str,
         "error": str, "created_at": str, "written_at": str},
        pk="key",
        not_null={"key", "constituent_id", "state", "body", "created_at"},
    )  # fmt: skip
    db.table("crm_contact_reports").create_index(["constituent_id"])


#: the plans' columns after ``source`` (Givebutter's ``givebutter_plans_001`` made the same, with no ``source``)
PLAN_COLUMNS = (
    "plan_id, email, first_name, last_name, phone, contact_id, constituent_id, amount, currency, frequency, status,"
    " platform_status, started_at, ended_at, next_charge, last_charge_at, last_charge_amount, last_charge_transaction,"
    " failures, last_failure_at, changed, news, updated_at, seen_at"
)
EVENT_COLUMNS = "id, plan_id, kind, at, detail, followup"

PLANS = """
    CREATE TABLE plans (
        source TEXT NOT NULL DEFAULT 'donations',
        plan_id TEXT NOT NULL,
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
        seen_at TEXT,
        PRIMARY KEY (source, plan_id)
    );
    CREATE TABLE plan_events (
        source TEXT NOT NULL DEFAULT 'donations',
        id TEXT NOT NULL,
        plan_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        at TEXT NOT NULL,
        detail TEXT,
        followup TEXT,
        PRIMARY KEY (source, id)
    );
"""
PLAN_INDEXES = """
    CREATE INDEX plans_constituent ON plans (constituent_id);
    CREATE INDEX plans_status ON plans (status);
    CREATE INDEX plans_email ON plans (email);
    CREATE INDEX plan_events_plan ON plan_events (source, plan_id, at);
    CREATE INDEX plan_events_kind ON plan_events (kind, at)
"""


def m020_plans_for_every_platform(db: Database) -> None:
    """``plans`` and ``plan_events`` become the core's, every platform's: each row says its platform's role
    (``source``), part of its key, so two platforms' plan ids never collide. A database where Givebutter's set made
    them (``givebutter_plans_001``) has them made again with every row kept, as ``donations``' (in arrival order)."""
    conn = db.conn
    before = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plans'").fetchone() is not None
    if before:
        conn.execute("ALTER TABLE plans RENAME TO plans_before_020")
        conn.execute("ALTER TABLE plan_events RENAME TO plan_events_before_020")
    run_script(conn, PLANS)
    if before:
        conn.execute(f"INSERT INTO plans (source, {PLAN_COLUMNS}) SELECT 'donations', {PLAN_COLUMNS} FROM plans_before_020")
        conn.execute(
            f"INSERT INTO plan_events (source, {EVENT_COLUMNS}) SELECT 'donations', {EVENT_COLUMNS}"
            " FROM plan_events_before_020 ORDER BY rowid"
        )
        conn.execute("DROP TABLE plans_before_020")
        conn.execute("DROP TABLE plan_events_before_020")
    run_script(conn, PLAN_INDEXES)


#: ``m020_plans_for_every_platform`` on a PostgreSQL database whose schema was written before it (``schema_postgres.sql``
#: now holds its result): for PostgreSQL's migrations to apply, in one transaction. Every row kept as ``donations``'.
POSTGRES_M020 = """
ALTER TABLE plans ADD COLUMN source TEXT NOT NULL DEFAULT 'donations';
ALTER TABLE plans DROP CONSTRAINT plans_pkey;
ALTER TABLE plans ADD PRIMARY KEY (source, plan_id);
ALTER TABLE plan_events ADD COLUMN source TEXT NOT NULL DEFAULT 'donations';
ALTER TABLE plan_events DROP CONSTRAINT plan_events_pkey;
ALTER TABLE plan_events ADD PRIMARY KEY (source, id);
DROP INDEX plan_events_plan;
CREATE INDEX plan_events_plan ON plan_events (source, plan_id, at)
"""
