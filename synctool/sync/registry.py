"""Where the sync rules register their handlers, and what a handler gets to work with.

Handlers are found by ``(target, entity_type)``. A handler returns an ``Outcome`` or raises: ``Skip``
ends the job as skipped, ``TransientError`` retries it later, ``PermanentError`` fails it at once.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from synctool import jobs, store
from synctool.config import Config
from synctool.platforms import adapter

Handler = Callable[["JobContext"], "jobs.Outcome | None"]
HANDLERS: dict[tuple[str, str], Handler] = {}


def handler(target: str, entity_type: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[(target, entity_type)] = fn
        return fn

    return register


@dataclass
class JobContext:
    """What a handler gets: its job, a connection of its own, the config and the outside clients."""

    job: sqlite3.Row
    conn: sqlite3.Connection
    config: Config
    owner: str
    services: Any = None
    #: when this job's run (a drain, or one operator command) started: the CRM mirror is refreshed at
    #: most once per run, and must have been refreshed since then before a constituent is created
    run_started: str = field(default_factory=store.iso)
    crm_requests: int = 0
    _clients: dict[str, Any] = field(default_factory=dict)

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.job["payload"]) if self.job["payload"] else {}

    def delivery(self) -> dict[str, Any] | None:
        """The stored delivery's body, decoded by its platform's adapter (JSON, or Mailchimp's form), or
        None for jobs without one."""
        if self.job["delivery_id"] is None:
            return None
        row = self.conn.execute("SELECT source, body FROM deliveries WHERE id = ?", (self.job["delivery_id"],)).fetchone()
        if row is None:
            return None
        return adapter(row["source"]).decode(bytes(row["body"]))

    def heartbeat(self) -> None:
        """Extend the lease; called before each outside request so a slow job is not reclaimed."""
        jobs.renew_lease(self.conn, self.job["id"], self.owner, self.config.queue.lease_seconds)

    def count_crm_request(self) -> None:
        self.crm_requests += 1
        self.heartbeat()


    def _client(self, name: str) -> Any:
        if self.services is not None:
            return self.services.get(name, self)
        if name not in self._clients:
            self._clients[name] = make_client(name, self.conn, self.config, self.count_crm_request)
        return self._clients[name]

    @property
    def crm(self):
        """The CRM client; every request it sends is counted on this job's attempt."""
        return self._client("crm")

    @property
    def donations(self):
        return self._client("donations")

    @property
    def pos(self):
        return self._client("pos")

    @property
    def mailing(self):
        return self._client("mailing")

    def match_or_create(self, person: Any, *, use_link: bool = True) -> tuple[str, bool]:
        """The person's CRM constituent id (matched on the mirror, else created) and whether it is new."""
        from synctool.sync.constituents import match_or_create

        return match_or_create(self.crm, self.conn, person, self.config.crm.profile_defaults,
                               fresh_since=self.run_started, page_size=self.config.crm.mirror_page_size,
                               use_link=use_link)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()


def make_client(name: str, conn: sqlite3.Connection, config: Config, on_crm_request: Callable[[], None]) -> Any:
    from synctool import clients, crm

    if name == "crm":
        return crm.open_client(conn, config, on_request=on_crm_request)
    return getattr(clients, name)(config)


class Services:
    """Outside clients shared by the jobs of one drain: building an HTTPS client (its TLS context) costs
    more than most jobs, and httpx clients are thread-safe. CRM requests are counted on the job that the
    calling thread is running."""

    def __init__(self, config: Config):
        self.config = config
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._current = threading.local()

    def _count(self) -> None:
        ctx = getattr(self._current, "ctx", None)
        if ctx is not None:
            ctx.count_crm_request()

    def get(self, name: str, ctx: JobContext) -> Any:
        self._current.ctx = ctx
        with self._lock:
            if name not in self._clients:
                self._clients[name] = make_client(name, ctx.conn, self.config, self._count)
            return self._clients[name]

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()
