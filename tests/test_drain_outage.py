"""`drain --watch` when its database is out of reach for a moment (a PostgreSQL restart or failover ends every
session): the service says so in one line and tries again, as systemd would restart it; any other configuration
problem still ends it. The real processes through a real restart: tests/drills/test_postgres_drill.py."""

from __future__ import annotations

import logging
import sqlite3
import threading

import pytest

from synctool.errors import ConfigError
from synctool.queue import worker


def test_watch_rides_out_a_lost_connection_and_a_database_out_of_reach(monkeypatch, caplog):
    stop = threading.Event()
    runs: list[int] = []

    def drain(runner, **options) -> worker.DrainSummary:
        runs.append(1)
        if len(runs) == 1:
            raise sqlite3.OperationalError("terminating connection due to administrator command")  # store.Error
        if len(runs) == 2:
            raise ConfigError("database", "postgresql://synctool@db.example.org/synctool", "cannot connect: refused")
        stop.set()
        return worker.DrainSummary(claimed=1, succeeded=1)

    monkeypatch.setattr(worker, "drain", drain)
    with caplog.at_level(logging.WARNING, logger="synctool.drain"):
        totals = worker.watch(object(), stop, interval_s=0)  # type: ignore[arg-type]
    assert len(runs) == 3 and totals.succeeded == 1
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and all(line.startswith("drain --watch: the database failed; trying again") for line in said)
    assert "Traceback" not in caplog.text


def test_watch_still_stops_on_any_other_configuration_problem(monkeypatch):
    def drain(runner, **options) -> worker.DrainSummary:
        raise ConfigError("crm", "environment", "no CRM key")

    monkeypatch.setattr(worker, "drain", drain)
    with pytest.raises(ConfigError, match="no CRM key"):
        worker.watch(object(), threading.Event(), interval_s=0)  # type: ignore[arg-type]
