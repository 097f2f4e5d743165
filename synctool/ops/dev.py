"""Test and dev operations (spec: reset-test-data, dev/poll-cron; retry-all-fresh is ``syncs.retry_all``)."""

from __future__ import annotations

from typing import Any

from synctool import platforms, store
from synctool.crm import environment as crm_environment
from synctool.errors import Conflict
from synctool.platforms.runner import runner
from synctool.queue import log
from synctool.runtime import Runtime


def reset_test_data(conn: store.Connection, rt: Runtime) -> dict[str, Any]:
    """Clear deliveries, jobs, ledgers and the platforms' local records; refused unless the CRM environment is sandbox.
    Settings, mappings and users are kept."""
    env = crm_environment.environment(conn, rt)
    if env != "sandbox":
        raise Conflict(
            f"refused: the CRM environment is {env}; reset-test-data runs only in sandbox (synctool crm environment sandbox)"
        )
    counts = log.clear(conn)
    tables = [
        "deliveries",
        "crm_writes",
        "crm_requests",
        "poll_state",
        "locks",
        "plan_events",
        "plans",
        *(table for p in platforms.registered() for table in p.tables),
    ]
    with store.atomic(conn):
        for table in tables:
            counts[table] = conn.execute(f"DELETE FROM {table}").rowcount
        counts["email_links"] = conn.execute("DELETE FROM caches WHERE kind = 'email_link'").rowcount
        # the sandbox CRM is reset with it, so its mirror starts again from a full load
        counts["crm_constituents"] = conn.execute("DELETE FROM crm_constituents").rowcount
        conn.execute("UPDATE crm_mirror_state SET watermark = NULL, refreshed_at = NULL")
    return {"environment": env, "deleted": counts}


def poll_cron(conn: store.Connection, rt: Runtime) -> dict[str, Any]:
    """What cron does, once, now: the backup poll, then a drain."""
    from synctool.ops.poll import poll
    from synctool.queue.worker import drain

    polled = poll(conn, rt)
    summary = drain(runner(rt), max_seconds=55)
    return {"poll": polled, "drain": summary.line()}
