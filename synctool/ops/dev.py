"""Test and dev operations (spec: retry-all-fresh, reset-test-data, dev/poll-cron)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from synctool import clients, crm as crm_target, store
from synctool.config import Config
from synctool.errors import Conflict, SynctoolError
from synctool.ops.syncs import SourceQuery, retry_all


def retry_all_fresh(conn: sqlite3.Connection, config: Config, query: SourceQuery | None = None) -> dict[str, Any]:
    """Re-fetch each failed donation's transaction from the platform, then retry every failed job.
    (POS orders are fetched afresh by every attempt anyway; mailing events have nothing to re-fetch.)"""
    query = query or SourceQuery()
    source = query.source
    refreshed, errors = 0, []
    failed = conn.execute("SELECT id, entity_id, payload FROM jobs WHERE status = 'failed' AND resolved_at IS NULL"
                          " AND entity_type = 'transaction'" + (" AND source = ?" if source else ""),
                          (source,) if source else ()).fetchall()
    if failed:
        with clients.using(clients.donations, config) as donations:
            for row in failed:
                try:
                    txn = donations.transaction(row["entity_id"])
                except SynctoolError as exc:
                    errors.append(f"{row['entity_id']}: {exc}")
                    continue
                payload = {**(json.loads(row["payload"]) if row["payload"] else {}), "transaction": txn, "fresh": True}
                with store.transaction(conn):
                    conn.execute("UPDATE jobs SET payload = ? WHERE id = ?", (json.dumps(payload), row["id"]))
                refreshed += 1
    result = retry_all(conn, query)
    return {**result, "refetched": refreshed, "refetch_errors": errors}


def reset_test_data(conn: sqlite3.Connection, config: Config) -> dict[str, Any]:
    """Clear deliveries, jobs, ledgers and portal records; refused unless the CRM environment is sandbox.
    Settings, mappings and users are kept."""
    env = crm_target.environment(conn, config)
    if env != "sandbox":
        raise Conflict(f"refused: the CRM environment is {env}; reset-test-data runs only in sandbox "
                       "(synctool crm environment sandbox)")
    counts = {}
    tables = ["job_attempts", "jobs", "deliveries", "crm_writes", "crm_requests", "poll_state", "locks",
              "portal_payment_items", "portal_payments", "portal_memberships", "portal_enrollments",
              "portal_family_links", "portal_users", "portal_products"]
    with store.transaction(conn):
        for table in tables:
            counts[table] = conn.execute(f"DELETE FROM {table}").rowcount
        counts["email_links"] = conn.execute("DELETE FROM caches WHERE kind = 'email_link'").rowcount
        # the sandbox CRM is reset with it, so its mirror starts again from a full load
        counts["crm_constituents"] = conn.execute("DELETE FROM crm_constituents").rowcount
        conn.execute("UPDATE crm_mirror_state SET watermark = NULL, refreshed_at = NULL")
        conn.execute("DELETE FROM jobs_search")
        conn.execute("UPDATE search_state SET indexed_rowid = 0")
    return {"environment": env, "deleted": counts}


def poll_cron(conn: sqlite3.Connection, config: Config) -> dict[str, Any]:
    """What cron does, once, now: the backup poll, then a drain."""
    from synctool.ops.poll import poll
    from synctool.worker import drain

    polled = poll(conn, config)
    summary = drain(config, max_seconds=55)
    return {"poll": polled, "drain": summary.line()}
