"""What keeps reads cheap at years of records and a million jobs: the search index, hourly job counts and each gift
job's campaign with its hourly counts, all kept by triggers in the writer's own transaction."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from synctool.store import dialect
from synctool.store.engine import Connection
from synctool.store.transactions import run_script

if TYPE_CHECKING:
    from sqlite_utils import Database


#: a job's counter in ``job_counts``: the hour it was created in, its source, its status, and whether it came from
#: a platform's poll (the daily summary's "recovered by the backup poll"), as SQL on a row (``new``, ``old``)
_POLLED = "CASE WHEN json_valid({0}.payload) THEN coalesce(json_extract({0}.payload, '$.origin') = 'poll', 0) ELSE 0 END"
_COUNTER = ("substr({0}.created_at, 1, 13)", "{0}.source", "{0}.status", _POLLED)
#: whether a job came from a poll, as SQL on a row in the engine's words (PostgreSQL: schema_postgres.sql's
#: ``job_polled``, what its ``job_counts`` trigger counts with)
JOB_POLLED = dialect.Spelt(_POLLED, "job_polled({0}.payload)")


def _counter(row: str) -> str:
    return ", ".join(part.format(row) for part in _COUNTER)


def m015_years_of_records(db: Database) -> None:
    """Years of records: what the staff page and the CLI read costs what they show, not the whole log.

    - The search index follows every job as it is written, changed and deleted (triggers, in the writer's own
      transaction); it was filled in arrears by the first search, which held the write lock for seconds.
    - ``job_counts``: jobs per hour created, source, status and origin, kept by triggers as jobs change, so a
      window's counts (the overview, ``stats``, the daily summary) read its hours, not its rows.
    - Open failures have an index of their own (the overview, doctor and the summary count them).
    - ``store_meta`` records which synctool migrated the database (an older one refuses it); ``store_sizes`` the
      database's size each day ``prune`` runs (``doctor``'s growth per month)."""
    conn = db.conn
    mark = conn.execute("SELECT indexed_rowid FROM search_state WHERE id = 1").fetchone()[0]
    conn.execute(
        "INSERT INTO jobs_search (rowid, external_id, email, name, last_error)"
        " SELECT rowid, external_id, email, name, last_error FROM jobs WHERE rowid > ?",
        (mark,),
    )
    conn.execute("DROP TRIGGER jobs_search_update")
    conn.execute("DROP TABLE search_state")
    columns = "external_id, email, name, last_error"
    add = f"INSERT INTO jobs_search (rowid, {columns}) VALUES (new.rowid, new.external_id, new.email, new.name, new.last_error);"
    remove = (
        f"INSERT INTO jobs_search (jobs_search, rowid, {columns})"
        " VALUES ('delete', old.rowid, old.external_id, old.email, old.name, old.last_error);"
    )
    conn.execute(f"CREATE TRIGGER jobs_search_insert AFTER INSERT ON jobs BEGIN {add} END")
    conn.execute(f"CREATE TRIGGER jobs_search_update AFTER UPDATE OF {columns} ON jobs BEGIN {remove} {add} END")
    conn.execute(f"CREATE TRIGGER jobs_search_delete AFTER DELETE ON jobs BEGIN {remove} END")

    conn.execute(
        "CREATE TABLE job_counts (hour TEXT NOT NULL, source TEXT NOT NULL, status TEXT NOT NULL, polled INTEGER NOT NULL,"
        " n INTEGER NOT NULL, PRIMARY KEY (hour, source, status, polled)) WITHOUT ROWID"
    )
    conn.execute(
        f"INSERT INTO job_counts (hour, source, status, polled, n) SELECT {_counter('jobs')}, count(*) FROM jobs"
        " GROUP BY 1, 2, 3, 4"
    )
    count = "INSERT INTO job_counts (hour, source, status, polled, n) VALUES ({}, {}) ON CONFLICT (hour, source, status, polled) DO UPDATE SET n = n + excluded.n;"
    plus, minus = count.format(_counter("new"), 1), count.format(_counter("old"), -1)
    moved = " OR ".join(f"{part.format('old')} IS NOT {part.format('new')}" for part in _COUNTER)
    conn.execute(f"CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN {plus} END")
    conn.execute(
        f"CREATE TRIGGER job_counts_update AFTER UPDATE OF status, source, created_at, payload ON jobs WHEN {moved}"
        f" BEGIN {minus} {plus} END"
    )
    conn.execute(f"CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN {minus} END")

    conn.execute("CREATE INDEX jobs_open_failures ON jobs (status, finished_at) WHERE status = 'failed' AND resolved_at IS NULL")
    conn.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("CREATE TABLE store_sizes (day TEXT PRIMARY KEY, bytes INTEGER NOT NULL, free_bytes INTEGER NOT NULL)")


#: a gift job's campaign as SQL on a row (``new``, ``old``, ``j``): in the payload a poll or a re-queue kept
JOB_CAMPAIGN = "CASE WHEN json_valid({0}.payload) THEN json_extract({0}.payload, '$.transaction.campaign_id') END"
#: ... or else in the body of the delivery the platform sent (``{0}``: the delivery's row)
DELIVERY_CAMPAIGN = (
    "CASE WHEN json_valid(CAST({0}.body AS TEXT)) THEN json_extract(CAST({0}.body AS TEXT), '$.data.campaign_id') END"
)


def m017_overview_at_a_million(db: Database) -> None:
    """The overview at a million records: the campaigns with gifts in a window (its unmapped campaigns) cost the
    window's hours, not every job's payload and delivery.

    - ``job_campaigns``: each gift job (``crm`` ``transaction``) with the campaign its payload or else its delivery
      names, kept by triggers as jobs are written, changed and deleted and as a delivery's body is pruned
      (``delivery_id`` is set when the campaign came from the delivery; a body is written before its jobs).
    - ``campaign_hours``: per source, campaign and hour, the gifts whose latest job of that campaign was created in
      that hour, kept by triggers on ``job_campaigns``; a window counts its whole hours from here and its first,
      partial hour from ``job_campaigns`` (as ``job_counts`` does for jobs)."""
    conn = db.conn
    conn.execute(
        "CREATE TABLE job_campaigns (job TEXT PRIMARY KEY, source TEXT NOT NULL, campaign_id NOT NULL,"
        " entity_id TEXT NOT NULL, created_at TEXT NOT NULL, delivery_id INTEGER) WITHOUT ROWID"
    )  # campaign_id untyped: kept as the JSON gave it (118722 and "118722" stay two, as they were)
    conn.execute("CREATE INDEX job_campaigns_gift ON job_campaigns (source, campaign_id, entity_id, created_at)")
    conn.execute("CREATE INDEX job_campaigns_window ON job_campaigns (source, created_at, campaign_id, entity_id)")
    conn.execute("CREATE INDEX job_campaigns_delivery ON job_campaigns (delivery_id) WHERE delivery_id IS NOT NULL")
    conn.execute(
        "CREATE TABLE campaign_hours (source TEXT NOT NULL, hour TEXT NOT NULL, campaign_id NOT NULL, gifts INTEGER NOT NULL,"
        " PRIMARY KEY (source, hour, campaign_id)) WITHOUT ROWID"
    )
    conn.execute(
        f"INSERT INTO job_campaigns ({_CAMPAIGN_COLUMNS}) SELECT id, source, coalesce(p, d), entity_id, created_at,"
        " CASE WHEN p IS NULL THEN delivery_id END FROM (SELECT j.id, j.source, j.entity_id, j.created_at, j.delivery_id,"
        f" {JOB_CAMPAIGN.format('j')} AS p, {DELIVERY_CAMPAIGN.format('d')} AS d FROM jobs j"
        f" LEFT JOIN deliveries d ON d.id = j.delivery_id WHERE {_GIFT.format('j')}) WHERE coalesce(p, d) IS NOT NULL"
    )
    conn.execute(
        "INSERT INTO campaign_hours (source, hour, campaign_id, gifts) SELECT source, substr(latest, 1, 13), campaign_id,"
        " count(*) FROM (SELECT source, campaign_id, max(created_at) AS latest FROM job_campaigns"
        " GROUP BY source, campaign_id, entity_id) GROUP BY 1, 2, 3"
    )
    _file_jobs_by_campaign(conn)
    _count_campaign_hours(conn)


#: a gift job, as SQL on a row
_GIFT = "{0}.target = 'crm' AND {0}.entity_type = 'transaction'"
_CAMPAIGN_COLUMNS = "job, source, campaign_id, entity_id, created_at, delivery_id"


def _filed_under_campaign(row: str) -> str:
    """The statement that files job ``row`` under its campaign, if it names one."""
    found = (
        f"SELECT p, CASE WHEN p IS NULL THEN (SELECT {DELIVERY_CAMPAIGN.format('d')} FROM deliveries d"
        f" WHERE d.id = {row}.delivery_id) END AS d FROM (SELECT {JOB_CAMPAIGN.format(row)} AS p)"
    )
    return (
        f"INSERT OR IGNORE INTO job_campaigns ({_CAMPAIGN_COLUMNS}) SELECT {row}.id, {row}.source, coalesce(p, d),"
        f" {row}.entity_id, {row}.created_at, CASE WHEN p IS NULL THEN {row}.delivery_id END FROM ({found})"
        f" WHERE coalesce(p, d) IS NOT NULL AND {_GIFT.format(row)};"
    )


def _file_jobs_by_campaign(conn: sqlite3.Connection) -> None:
    """``job_campaigns`` follows the jobs as they are written, changed and deleted, and their deliveries' bodies."""
    add = _filed_under_campaign
    conn.execute(f"CREATE TRIGGER job_campaigns_insert AFTER INSERT ON jobs WHEN {_GIFT.format('new')} BEGIN {add('new')} END")
    watched = ("id", "source", "target", "entity_type", "entity_id", "delivery_id", "payload", "created_at")
    moved = " OR ".join(f"old.{c} IS NOT new.{c}" for c in watched)
    conn.execute(
        f"CREATE TRIGGER job_campaigns_update AFTER UPDATE OF {', '.join(watched)} ON jobs WHEN {moved}"
        f" BEGIN DELETE FROM job_campaigns WHERE job = old.id; {add('new')} END"
    )
    conn.execute(
        f"CREATE TRIGGER job_campaigns_delete AFTER DELETE ON jobs WHEN {_GIFT.format('old')}"
        " BEGIN DELETE FROM job_campaigns WHERE job = old.id; END"
    )
    body = DELIVERY_CAMPAIGN.format("new")
    conn.execute(
        "CREATE TRIGGER job_campaigns_delivery_body AFTER UPDATE OF body ON deliveries WHEN old.body IS NOT new.body BEGIN"
        f" DELETE FROM job_campaigns WHERE delivery_id = new.id AND ({body}) IS NULL;"
        f" UPDATE job_campaigns SET campaign_id = ({body}) WHERE delivery_id = new.id AND ({body}) IS NOT NULL; END"
    )
    conn.execute(
        "CREATE TRIGGER job_campaigns_delivery_delete AFTER DELETE ON deliveries BEGIN"
        " DELETE FROM job_campaigns WHERE delivery_id = old.id; END"
    )


# a gift counts in the hour of its latest job of the campaign: a row that becomes the latest moves it there, and
# when the latest goes the gift moves back to the latest left (or is no longer counted)
_HOUR_COUNT = (
    "INSERT INTO campaign_hours (source, hour, campaign_id, gifts) SELECT {0}.source, substr({1}, 1, 13),"
    " {0}.campaign_id, {2} WHERE {3} ON CONFLICT (source, hour, campaign_id) DO UPDATE SET gifts = gifts + excluded.gifts;"
)
_OTHER_JOBS = (
    "(SELECT max(created_at) FROM job_campaigns WHERE source = {0}.source AND campaign_id = {0}.campaign_id"
    " AND entity_id = {0}.entity_id AND job IS NOT {0}.job)"
)


def _filed(row: str) -> str:
    before = _OTHER_JOBS.format(row)
    return _HOUR_COUNT.format(row, before, -1, f"{row}.created_at > {before}") + _HOUR_COUNT.format(
        row, f"{row}.created_at", 1, f"{before} IS NULL OR {row}.created_at > {before}"
    )


def _unfiled(row: str) -> str:
    left = _OTHER_JOBS.format(row)
    return _HOUR_COUNT.format(row, f"{row}.created_at", -1, f"{left} IS NULL OR {row}.created_at > {left}") + _HOUR_COUNT.format(
        row, left, 1, f"{row}.created_at > {left}"
    )


def _count_campaign_hours(conn: sqlite3.Connection) -> None:
    """``campaign_hours`` follows ``job_campaigns``."""
    conn.execute(f"CREATE TRIGGER campaign_hours_insert AFTER INSERT ON job_campaigns BEGIN {_filed('new')} END")
    conn.execute(f"CREATE TRIGGER campaign_hours_delete AFTER DELETE ON job_campaigns BEGIN {_unfiled('old')} END")
    conn.execute(
        "CREATE TRIGGER campaign_hours_update AFTER UPDATE ON job_campaigns WHEN old.campaign_id IS NOT new.campaign_id"
        f" OR old.source IS NOT new.source OR old.entity_id IS NOT new.entity_id OR old.created_at IS NOT new.created_at"
        f" BEGIN {_unfiled('old')} {_filed('new')} END"
    )


#: how many rows each of PostgreSQL's counters is spread over: a writer adds to the row of its own connection's
#: shard (``pg_backend_pid()``), so two connections writing the same counter at once rarely share a row
SHARDS = 64

_SHARDED_COUNTERS = f"""
ALTER TABLE job_counts ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_counts DROP CONSTRAINT job_counts_pkey;
ALTER TABLE job_counts ADD PRIMARY KEY (hour, source, status, polled, shard);
ALTER TABLE campaign_hours ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_hours DROP CONSTRAINT campaign_hours_pkey;
ALTER TABLE campaign_hours ADD PRIMARY KEY (source, hour, campaign_id, shard);
CREATE OR REPLACE FUNCTION job_counts_add(hour TEXT, source TEXT, status TEXT, polled BIGINT, n BIGINT) RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO job_counts (hour, source, status, polled, shard, n) VALUES (hour, source, status, polled, pg_backend_pid() % {SHARDS}, n)
    ON CONFLICT (hour, source, status, polled, shard) DO UPDATE SET n = job_counts.n + excluded.n
$$;
CREATE OR REPLACE FUNCTION campaign_hours_add(source TEXT, hour TEXT, campaign_id TEXT, gifts BIGINT) RETURNS VOID
LANGUAGE sql AS $$
    INSERT INTO campaign_hours (source, hour, campaign_id, shard, gifts) VALUES (source, hour, campaign_id, pg_backend_pid() % {SHARDS}, gifts)
    ON CONFLICT (source, hour, campaign_id, shard) DO UPDATE SET gifts = campaign_hours.gifts + excluded.gifts
$$;
"""


def m021_counters_without_a_hot_row(conn: Connection) -> None:
    """Receivers and drains on several machines: no counter row that every writer waits on.

    On PostgreSQL each counter of ``job_counts`` and ``campaign_hours`` is kept in up to ``SHARDS`` rows (a
    ``shard`` column in the key: the writing connection's), since a counter's row stays locked until its writer
    commits, and two receivers storing one platform's deliveries in one hour would otherwise commit one at a time.
    Every reader sums a counter's rows (they always summed the hours of a window). SQLite has one writer at a time:
    its counters stay one row each, nothing changes there."""
    if dialect.on_postgres(conn):
        run_script(conn, _SHARDED_COUNTERS)
