"""Recurring plans as a contract part (issue 60): the core's ``plans`` and ``plan_events`` hold every platform's plans,
each under its platform's role (``source``), so two platforms' plan ids never collide; a database whose plans
Givebutter's own migration made keeps every row (as ``donations``'); another platform's plan handler records its plans
with ``synctool.platform.plans.apply`` and its donor joins the one monthly-donors group, a failure followed up once,
through the same surfaces (``synctool plans``, ``/api/plans``)."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal

import pytest

from synctool import mappings, store
from synctool.platform import Person, PlanEvent, PlanRecord, plans
from synctool.platforms.runner import runner
from tests import helpers
from tests.helpers import runtime
from tests.test_plan_crm_writes import GROUP

#: ``givebutter_plans_001`` as Givebutter's set made it before plans were the core's (synctool.givebutter)
OLD_GIVEBUTTER_PLANS = """
    CREATE TABLE plans (
        plan_id TEXT PRIMARY KEY, email TEXT, first_name TEXT, last_name TEXT, phone TEXT, contact_id TEXT,
        constituent_id TEXT, amount TEXT, currency TEXT NOT NULL DEFAULT 'USD', frequency TEXT, status TEXT NOT NULL,
        platform_status TEXT, started_at TEXT, ended_at TEXT, next_charge TEXT, last_charge_at TEXT,
        last_charge_amount TEXT, last_charge_transaction TEXT, failures INTEGER NOT NULL DEFAULT 0, last_failure_at TEXT,
        changed TEXT, news TEXT, updated_at TEXT NOT NULL, seen_at TEXT
    );
    CREATE INDEX plans_constituent ON plans (constituent_id);
    CREATE INDEX plans_status ON plans (status);
    CREATE INDEX plans_email ON plans (email);
    CREATE TABLE plan_events (
        id TEXT PRIMARY KEY, plan_id TEXT NOT NULL, kind TEXT NOT NULL, at TEXT NOT NULL, detail TEXT, followup TEXT
    );
    CREATE INDEX plan_events_plan ON plan_events (plan_id, at);
    CREATE INDEX plan_events_kind ON plan_events (kind, at)
"""


def givebutter_plans_001(db) -> None:
    store.run_script(db.conn, OLD_GIVEBUTTER_PLANS)


@pytest.mark.sqlite_only  # reason: PostgreSQL's schema is written whole (schema_postgres.sql); this is SQLite's upgrade
@pytest.mark.no_database
def test_a_database_whose_plans_givebutter_made_keeps_every_row(tmp_path, env, cli):
    from synctool.store.migrations import MIGRATIONS, migrations
    from synctool.store.schema.plans import m020_plans_for_every_platform as plans_m020
    from synctool.store.tables import database

    path = tmp_path / "older.db"
    conn = store.connect(path, migrate=False)  # made as the synctool before: the core's migrations to m019, Givebutter's set
    db = database(conn)
    migrations("synctool", MIGRATIONS[: MIGRATIONS.index(plans_m020)]).apply(db)
    migrations("synctool.givebutter", [givebutter_plans_001]).apply(db)
    conn.execute(
        "INSERT INTO plans (plan_id, email, first_name, constituent_id, amount, frequency, status, started_at, updated_at)"
        " VALUES ('GB1', 'ada@example.org', 'Ada', '959480', '10.00', 'monthly', 'active', '2026-01-02T00:00:00.000000Z',"
        " '2026-01-02T00:00:00.000000Z')"
    )
    written = [("z-created", "created"), ("charge:T1", "charged"), ("a-failed", "failed")]  # arrival order, not id order
    for event_id, kind in written:
        conn.execute(
            "INSERT INTO plan_events (id, plan_id, kind, at, detail) VALUES (?, 'GB1', ?, '2026-01-03T00:00:00.000000Z', ?)",
            (event_id, kind, json.dumps({"transaction_id": "T1", "amount": "10.00"} if kind == "charged" else {})),
        )
    conn.execute("PRAGMA user_version = 0")
    conn.close()

    env["SYNCTOOL_DB"] = str(path)
    upgraded = store.connect(path)
    row = upgraded.execute("SELECT * FROM plans").fetchone()
    assert (row["source"], row["plan_id"], row["email"], row["amount"], row["status"]) == (
        "donations", "GB1", "ada@example.org", "10.00", "active"
    )  # fmt: skip
    arrival = store.dialect.arrival()
    events = upgraded.execute(f"SELECT source, id FROM plan_events ORDER BY {arrival}").fetchall()
    assert [tuple(e) for e in events] == [("donations", i) for i, _ in written]
    upgraded.close()

    shown = cli("plans", "show", "GB1", "--json")
    assert shown.exit_code == 0, shown.stdout
    detail = json.loads(shown.stdout)
    assert detail["ref"] == "GB1" and {e["id"] for e in detail["events"]} == {i for i, _ in written}
    assert [c["external_id"] for c in detail["charges"]] == ["donations_T1"]  # Givebutter's gift, as it was named
    assert cli("doctor").exit_code in (0, 1)  # opens the upgraded database without refusing it as newer


def kind_plan(
    plan_id: str, *, status: str | None = "active", amount: str = "15.00", email: str = "pat@example.org"
) -> PlanRecord:
    return PlanRecord(
        id=plan_id,
        person=Person(first_name="Pat", last_name="Example", email=email),
        amount=Decimal(amount),
        currency="usd",
        frequency="Monthly",
        status=status,
        platform_status=(status or "weird").upper(),
        started_at="2026-01-05T10:00:00Z",
        next_charge="2026-02-05",
    )


def apply(event: PlanEvent, found: PlanRecord, source: str = "kind", job_id: str = "plan-job-1"):
    """A plan job of ``source`` as drain runs one (its unit committed at its end), calling the contract's ``apply``."""
    jobs_runner = runner(runtime())
    conn = store.connect(helpers.CURRENT["env"]["SYNCTOOL_DB"])
    try:
        job = jobs_runner.context({"id": job_id, "force": 0, "source": source}, conn, "test-owner", store.iso())  # type: ignore[arg-type]
        with job.unit.bind():
            said = plans.apply(job, source, found, event, platform="KindDesk")
            job.unit.commit("job end")
        return said
    finally:
        jobs_runner.close()
        conn.close()


@pytest.fixture
def grouped(world, env, db):
    env["CRM_CONFIRM_AFTER_S"] = "0"
    mappings.put(db, "plans", "*", {"group_id": GROUP, "contact_report_type_id": 2183})
    return world


def test_another_platforms_plan_joins_the_group_and_its_failure_is_followed_up_once(grouped, db, cli):
    said = apply(PlanEvent("evt-1", "created", "2026-01-05T10:00:00Z"), kind_plan("P1"))
    assert said.status == "succeeded" and "group membership" in said.message
    row = plans.get(db, "kind", "P1")
    assert (row["amount"], row["currency"], row["frequency"], row["status"]) == ("15.00", "USD", "monthly", "active")
    cid = row["constituent_id"]
    [member] = [m for m in grouped.crm.group_memberships.values() if str(m["constituent_id"]) == str(cid)]
    assert member["group_id"] == GROUP and member["is_current"]

    for job_id in ("plan-job-2", "plan-job-3"):  # the same event twice: one report
        apply(PlanEvent("evt-2", "failed", "2026-02-05T10:00:00Z"), kind_plan("P1", status="failed"), job_id=job_id)
    [report] = [r for r in grouped.crm.contact_reports.values() if str(r["constituent_id"]) == str(cid)]
    assert report["text"].startswith("KindDesk recurring plan P1 (15.00 USD monthly) failed to charge: Pat Example")
    assert "KindDesk says: status FAILED, 1 failed charge(s)" in report["text"]
    keys = [r["key"] for r in db.execute("SELECT key FROM crm_contact_reports")]
    assert keys == ["plan:kind:P1:evt-2"]

    listed = json.loads(cli("plans", "list", "--json").stdout)
    assert [(p["source"], p["ref"], p["status"]) for p in listed["items"]] == [("kind", "kind:P1", "failed")]
    shown = json.loads(cli("plans", "show", "kind:P1", "--json").stdout)
    assert [f["key"] for f in shown["follow_ups"]] == ["plan:kind:P1:evt-2"] and shown["membership"]["state"] == "current"
    assert cli("plans", "show", "P1", "--json").exit_code == 0  # a bare id one platform alone has
    assert cli("plans", "show", "other:P1").exit_code != 0


def test_two_platforms_plan_ids_never_collide_and_a_donor_gives_while_either_plan_does(grouped, db, cli):
    apply(PlanEvent("evt-1", "created", "2026-01-05T10:00:00Z"), kind_plan("SAME"))
    apply(PlanEvent("evt-1", "created", "2026-01-06T10:00:00Z"), kind_plan("SAME", amount="40.00"), source="donations",
          job_id="plan-job-2")  # fmt: skip
    both = {r["source"]: r for r in db.execute("SELECT * FROM plans WHERE plan_id = 'SAME'")}
    assert set(both) == {"kind", "donations"} and both["donations"]["amount"] == "40.00"
    assert both["kind"]["constituent_id"] == both["donations"]["constituent_id"]
    assert db.execute("SELECT count(*) FROM plan_events WHERE id = 'evt-1'").fetchone()[0] == 2

    apply(PlanEvent("evt-2", "canceled", "2026-03-01T10:00:00Z"), kind_plan("SAME", status="canceled"), job_id="plan-job-3")
    cid = both["kind"]["constituent_id"]
    members = [m for m in grouped.crm.group_memberships.values() if str(m["constituent_id"]) == str(cid)]
    assert [m["is_current"] for m in members] == [True]  # Givebutter's plan still gives: the donor stays
    shown = json.loads(cli("plans", "show", "SAME", "--json").stdout)
    assert shown["source"] == "donations" and shown["amount"] == "40.00"  # the bare id is Givebutter's, as before


def test_a_polled_state_is_compared_and_a_fix_job_applies_the_plan_as_held(grouped, db):
    assert plans.differs(db, "kind", kind_plan("P2"))
    apply(PlanEvent(plans.poll_key(kind_plan("P2")), None, "2026-01-05T10:00:00Z", "poll"), kind_plan("P2"))
    assert plans.get(db, "kind", "P2")["status"] == "active"
    assert not plans.differs(db, "kind", kind_plan("P2"))
    assert not plans.differs(db, "kind", kind_plan("P2", status=None))  # an unknown word keeps the record's
    assert plans.differs(db, "kind", kind_plan("P2", status="paused"))
    held = plans.held(db, "kind", "P2")
    assert held is not None and held.amount == Decimal("15.00") and held.person.email == "pat@example.org"
    assert plans.held(db, "kind", "nope") is None
    later = dataclasses.replace(kind_plan("P2"), next_charge="2026-03-05T00:00:00Z")  # a time: its day is kept
    assert plans.differs(db, "kind", later) and plans.poll_key(later).endswith(":2026-03-05")
    assert not plans.differs(db, "kind", dataclasses.replace(kind_plan("P2"), next_charge="soon"))  # no date: unsaid


def test_reconcile_fix_queues_another_platforms_plan_as_held_and_applying_it_puts_the_donor_in_the_group(grouped, db, cli):
    apply(PlanEvent("evt-1", "created", "2026-01-05T10:00:00Z"), kind_plan("P3"))
    cid = plans.get(db, "kind", "P3")["constituent_id"]
    with store.atomic(db):  # the membership lost from synctool's ledger and the CRM (a person removed it)
        db.execute("DELETE FROM crm_group_memberships")
    grouped.crm.group_memberships.clear()
    out = cli("reconcile", "--from", "2026-01-01", "--to", "2026-01-31", "--fix", "--json")
    found = json.loads(out.stdout)["plans"]
    [fixed] = found["fixed"]
    assert (fixed["plan_id"], fixed["status"]) == ("kind:P3", "not_in_group")
    job = db.execute("SELECT source, entity_type, entity_id, payload FROM jobs WHERE id = ?", (fixed["job_id"],)).fetchone()
    assert (job["source"], job["entity_type"], job["entity_id"]) == ("kind", "plan", "P3")
    assert json.loads(job["payload"]) == {"held": True, "origin": "reconcile --fix"}

    jobs_runner = runner(runtime())
    conn = store.connect(helpers.CURRENT["env"]["SYNCTOOL_DB"])
    try:
        row = {"id": fixed["job_id"], "force": 1, "source": "kind", "entity_id": "P3", "created_at": store.iso()}
        job_ctx = jobs_runner.context(row, conn, "test-owner", store.iso())  # type: ignore[arg-type]
        with job_ctx.unit.bind():
            said = plans.apply_held(job_ctx, "kind", platform="KindDesk")
            job_ctx.unit.commit("job end")
    finally:
        jobs_runner.close()
        conn.close()
    assert said.status == "succeeded" and "group membership" in said.message
    assert [m["is_current"] for m in grouped.crm.group_memberships.values() if str(m["constituent_id"]) == str(cid)] == [True]


def test_a_postgresql_schema_written_before_takes_the_plans_source_with_every_row(pg_url):
    """``POSTGRES_M020``, for PostgreSQL's migrations: the old shape (as schema_postgres.sql wrote it) in a scratch
    schema, its rows kept as ``donations``' and two platforms' plans with one id then both recorded."""
    import psycopg

    from synctool.store.schema.plans import POSTGRES_M020

    old = """
    CREATE TABLE plans (plan_id TEXT PRIMARY KEY, email TEXT, status TEXT NOT NULL, updated_at TEXT NOT NULL);
    CREATE TABLE plan_events (id TEXT PRIMARY KEY, plan_id TEXT NOT NULL, kind TEXT NOT NULL, at TEXT NOT NULL,
        detail TEXT, followup TEXT, seq BIGINT GENERATED BY DEFAULT AS IDENTITY NOT NULL);
    CREATE INDEX plan_events_plan ON plan_events (plan_id, at);
    INSERT INTO plans (plan_id, email, status, updated_at) VALUES ('GB1', 'ada@example.org', 'active', 'now');
    INSERT INTO plan_events (id, plan_id, kind, at) VALUES ('evt-1', 'GB1', 'created', 'then');
    """
    with psycopg.connect(pg_url, autocommit=True) as raw:
        raw.execute("CREATE SCHEMA before_020")
        raw.execute("SET search_path TO before_020")
        raw.execute(old)
        with raw.transaction():
            raw.execute(POSTGRES_M020)
        assert raw.execute("SELECT source, plan_id, email FROM plans").fetchall() == [("donations", "GB1", "ada@example.org")]
        assert raw.execute("SELECT source, id FROM plan_events").fetchall() == [("donations", "evt-1")]
        raw.execute("INSERT INTO plans (source, plan_id, status, updated_at) VALUES ('kind', 'GB1', 'active', 'now')")
        raw.execute("INSERT INTO plan_events (source, id, plan_id, kind, at) VALUES ('kind', 'evt-1', 'GB1', 'created', 'then')")
        assert raw.execute("SELECT count(*) FROM plans WHERE plan_id = 'GB1'").fetchone()[0] == 2
        raw.execute("DROP SCHEMA before_020 CASCADE")
