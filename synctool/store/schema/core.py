"""The core's first tables: deliveries, jobs and their attempts, settings, mappings, caches, the CRM request
ledger, the gift ledger, users and poll state (m001); then named locks, the CRM mirror and the gift ledger's
unconfirmed and deleted writes with the refunds ledger."""

from __future__ import annotations

from typing import TYPE_CHECKING

from synctool.store.transactions import run_script

if TYPE_CHECKING:
    from sqlite_utils import Database


#: the first release's tables, as one script (``run_script``: statement by statement, in the migration's transaction)
CORE_TABLES = """
    CREATE TABLE deliveries (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        event_id TEXT NOT NULL,
        event_type TEXT,
        received_at TEXT NOT NULL,
        headers TEXT NOT NULL DEFAULT '{}',
        body BLOB NOT NULL,
        verified INTEGER NOT NULL DEFAULT 1,
        note TEXT,
        UNIQUE (source, event_id)
    );

    CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        target TEXT NOT NULL DEFAULT 'crm',
        entity_type TEXT NOT NULL,
        entity_id TEXT NOT NULL,
        external_id TEXT,
        delivery_id INTEGER REFERENCES deliveries (id),
        payload TEXT,
        force INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'queued'
            CHECK (status IN ('queued', 'running', 'succeeded', 'skipped', 'failed')),
        attempts INTEGER NOT NULL DEFAULT 0,
        max_attempts INTEGER NOT NULL DEFAULT 3,
        run_after TEXT NOT NULL,
        lease_owner TEXT,
        lease_expires TEXT,
        last_error TEXT,
        message TEXT,
        email TEXT,
        name TEXT,
        amount TEXT,
        crm_constituent_id TEXT,
        crm_gift_id TEXT,
        crm_ids TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        finished_at TEXT,
        resolved_at TEXT,
        resolved_by TEXT,
        notes TEXT
    );
    CREATE INDEX jobs_due ON jobs (target, status, run_after);
    CREATE INDEX jobs_status_source_created ON jobs (status, source, created_at);
    CREATE INDEX jobs_created ON jobs (created_at);
    CREATE INDEX jobs_external ON jobs (external_id);

    CREATE VIRTUAL TABLE jobs_search USING fts5 (
        external_id, email, name, last_error, content='jobs', content_rowid='rowid', tokenize='trigram'
    );
    -- The search index is filled in arrears (jobs.index_search, run by drain and before a search),
    -- so the receiver's insert stays cheap; rows already indexed are kept current by this trigger.
    CREATE TABLE search_state (id INTEGER PRIMARY KEY CHECK (id = 1), indexed_rowid INTEGER NOT NULL);
    INSERT INTO search_state (id, indexed_rowid) VALUES (1, 0);
    CREATE TRIGGER jobs_search_update AFTER UPDATE OF external_id, email, name, last_error ON jobs
    WHEN old.rowid <= (SELECT indexed_rowid FROM search_state WHERE id = 1) BEGIN
        INSERT INTO jobs_search (jobs_search, rowid, external_id, email, name, last_error)
        VALUES ('delete', old.rowid, old.external_id, old.email, old.name, old.last_error);
        INSERT INTO jobs_search (rowid, external_id, email, name, last_error)
        VALUES (new.rowid, new.external_id, new.email, new.name, new.last_error);
    END;

    CREATE TABLE job_attempts (
        id INTEGER PRIMARY KEY,
        job_id TEXT NOT NULL REFERENCES jobs (id),
        number INTEGER NOT NULL,
        worker TEXT,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        outcome TEXT,
        error TEXT,
        crm_requests INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX job_attempts_job ON job_attempts (job_id);

    CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );

    CREATE TABLE mappings (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (kind, key)
    );

    CREATE TABLE caches (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        refreshed_at TEXT NOT NULL,
        PRIMARY KEY (kind, key)
    );

    CREATE TABLE crm_requests (
        id INTEGER PRIMARY KEY,
        at REAL NOT NULL,
        owner TEXT
    );
    CREATE INDEX crm_requests_at ON crm_requests (at);

    CREATE TABLE crm_writes (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
        crm_id TEXT,
        job_id TEXT,
        updated_at TEXT NOT NULL
    );

    CREATE TABLE users (
        id INTEGER PRIMARY KEY,
        email TEXT NOT NULL UNIQUE,
        role TEXT NOT NULL CHECK (role IN ('viewer', 'admin', 'super_admin')),
        active INTEGER NOT NULL DEFAULT 1,
        invited_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        token_version INTEGER NOT NULL DEFAULT 0
    );

    CREATE TABLE poll_state (
        source TEXT PRIMARY KEY,
        watermark TEXT,
        last_run_at TEXT,
        last_result TEXT
    )
    """


def m001_core(db: Database) -> None:
    """The first release's tables."""
    run_script(db.conn, CORE_TABLES)


def m003_locks(db: Database) -> None:
    """Named locks shared by every process (one person's jobs must not run side by side)."""
    db.table("locks").create({"name": str, "owner": str, "expires": float}, pk="name", not_null={"owner", "expires"})


def m004_crm_mirror(db: Database) -> None:
    """The local mirror of the CRM's constituents that matching reads (see crm/mirror.py)."""
    run_script(
        db.conn,
        """
    CREATE TABLE crm_constituents (
        id INTEGER PRIMARY KEY,
        is_org INTEGER NOT NULL DEFAULT 0,
        first_name TEXT, middle_name TEXT, last_name TEXT, nick_name TEXT, maiden_name TEXT, org_name TEXT,
        external_constituent_id TEXT,
        created_at TEXT,
        updated_at TEXT,
        mirrored_at TEXT NOT NULL
    );
    CREATE INDEX crm_constituents_external ON crm_constituents (external_constituent_id);
    CREATE INDEX crm_constituents_last_name ON crm_constituents (last_name COLLATE NOCASE);
    -- one row: the CRM's updated_at watermark and what the last refresh did
    CREATE TABLE crm_mirror_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        watermark TEXT,
        refreshed_at TEXT,
        full_loaded_at TEXT,
        last_kind TEXT,
        last_requests INTEGER NOT NULL DEFAULT 0,
        last_rows INTEGER NOT NULL DEFAULT 0,
        last_seconds REAL NOT NULL DEFAULT 0
    );
    INSERT INTO crm_mirror_state (id) VALUES (1)
    """,
    )
    # each constituent's contact rows, gone with it; looked up by the normalised e-mail or the phone's digits
    for table, columns, lookup in (
        ("crm_constituent_emails", "address TEXT NOT NULL, normalized TEXT NOT NULL", "normalized"),
        ("crm_constituent_phones", "number TEXT NOT NULL, digits TEXT NOT NULL", "digits"),
        ("crm_constituent_addresses", "street TEXT, city TEXT, state TEXT, postal_code TEXT, country TEXT", None),
    ):
        db.conn.execute(
            f"CREATE TABLE {table} (constituent_id INTEGER NOT NULL REFERENCES crm_constituents (id)"
            f" ON DELETE CASCADE, {columns})"
        )
        for column in ("constituent_id", lookup):
            if column:
                db.conn.execute(f"CREATE INDEX {table}_{column} ON {table} ({column})")


def m005_unconfirmed_writes(db: Database) -> None:
    """A gift POST whose answer was lost is ``unconfirmed`` in the ledger until a later search settles it."""
    # statement by statement: executescript would commit the migration's transaction half-way
    for statement in (
        "CREATE TABLE crm_writes_new (key TEXT PRIMARY KEY, kind TEXT NOT NULL,"
        " state TEXT NOT NULL CHECK (state IN ('pending', 'unconfirmed', 'done')), crm_id TEXT, job_id TEXT,"
        " updated_at TEXT NOT NULL)",
        "INSERT INTO crm_writes_new SELECT key, kind, state, crm_id, job_id, updated_at FROM crm_writes",
        "DROP TABLE crm_writes",
        "ALTER TABLE crm_writes_new RENAME TO crm_writes",
    ):
        db.conn.execute(statement)


def m006_refunds(db: Database) -> None:
    """The gift ledger remembers the amounts synctool wrote (so a refund never writes over a person's edit)
    and that a refunded gift was ``deleted``; the ``refunds`` ledger holds each refund, keyed by its own id."""
    for statement in (
        "CREATE TABLE crm_writes_new (key TEXT PRIMARY KEY, kind TEXT NOT NULL,"
        " state TEXT NOT NULL CHECK (state IN ('pending', 'unconfirmed', 'done', 'deleted')), crm_id TEXT, job_id TEXT,"
        " updated_at TEXT NOT NULL, amount TEXT, deductible TEXT)",
        "INSERT INTO crm_writes_new (key, kind, state, crm_id, job_id, updated_at)"
        " SELECT key, kind, state, crm_id, job_id, updated_at FROM crm_writes",
        "DROP TABLE crm_writes",
        "ALTER TABLE crm_writes_new RENAME TO crm_writes",
    ):
        db.conn.execute(statement)
    db.table("refunds").create(
        {
            "key": str,
            "source": str,
            "refund_id": str,
            "gift_external_id": str,
            "crm_gift_id": str,
            "amount": str,
            "amount_before": str,
            "amount_after": str,
            "policy": str,
            "state": str,
            "reason": str,
            "job_id": str,
            "refunded_on": str,
            "created_at": str,
            "updated_at": str,
        },
        pk="key",
        not_null={"source", "refund_id", "gift_external_id", "amount", "state", "created_at", "updated_at"},
    )
    db.table("refunds").create_index(["gift_external_id"])
    db.table("refunds").create_index(["created_at"])
