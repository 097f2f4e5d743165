"""Run `drain` in a separate process with handlers registered by the tests.

    python -m tests.drain_harness {slow|record|locker} MAX_SECONDS

``slow`` sleeps 30 s before doing its work (to be killed mid-job); ``record`` writes one row per run
into the ``effects`` table, noting when it started and ended, so tests can count runs and overlap.
"""

from __future__ import annotations

import sys
import time

from synctool import platforms, store
from synctool.platforms.runner import runner
from synctool.queue.handlers import ANY_SOURCE
from synctool.queue.worker import drain, handler
from synctool.runtime import Runtime


def effect(ctx, started: float) -> None:
    ctx.conn.execute("CREATE TABLE IF NOT EXISTS effects (job_id TEXT, started REAL, ended REAL)")
    ctx.conn.execute("INSERT INTO effects VALUES (?, ?, ?)", (ctx.row["id"], started, time.time()))


@handler(ANY_SOURCE, "slow")
def slow(event, ctx):
    started = time.time()
    time.sleep(30)
    effect(ctx, started)


@handler(ANY_SOURCE, "locker")
def locker(event, ctx):
    with store.named_lock(ctx.conn, ["person:ada"]):  # a donor being matched when the drain is killed
        time.sleep(30)


@handler(ANY_SOURCE, "record")
def record(event, ctx):
    started = time.time()
    time.sleep(0.05)
    effect(ctx, started)


if __name__ == "__main__":
    platforms.registered()
    config = Runtime.from_environ()
    config.open_database().close()  # the configured database (SQLite's file or PostgreSQL's URL), migrated
    print(drain(runner(config), max_seconds=float(sys.argv[2])).line(), flush=True)
