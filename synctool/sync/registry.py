"""Where the sync rules register their handlers, and what a handler gets to work with.

Handlers are found by ``(target, entity_type)``. A handler returns an ``Outcome`` or raises: ``Skip``
ends the job as skipped, ``TransientError`` retries it later, ``PermanentError`` fails it at once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from synctool import jobs
from synctool.config import Config

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
    crm_requests: int = 0
    _clients: dict[str, Any] = field(default_factory=dict)

    @property
    def payload(self) -> dict[str, Any]:
        return json.loads(self.job["payload"]) if self.job["payload"] else {}

    def delivery(self) -> dict[str, Any] | None:
        """The stored delivery's parsed body (JSON or Mailchimp form), or None for jobs without one."""
        if self.job["delivery_id"] is None:
            return None
        row = self.conn.execute("SELECT source, body FROM deliveries WHERE id = ?", (self.job["delivery_id"],)).fetchone()
        if row is None:
            return None
        body = bytes(row["body"])
        if row["source"] == "mailing":
            from synctool.platforms.mailchimp import parse_form

            return parse_form(body)
        return json.loads(body)

    def heartbeat(self) -> None:
        """Extend the lease; called before each outside request so a slow job is not reclaimed."""
        jobs.renew_lease(self.conn, self.job["id"], self.owner, self.config.queue.lease_seconds)

    def count_crm_request(self) -> None:
        self.crm_requests += 1
        self.heartbeat()


    def _client(self, name: str, make: Callable[[], Any]) -> Any:
        if name not in self._clients:
            self._clients[name] = make()
        return self._clients[name]

    @property
    def crm(self):
        """The CRM client; every request it sends is counted on this job's attempt."""
        from synctool import crm

        return self._client("crm", lambda: crm.open_client(self.conn, self.config, on_request=self.count_crm_request))

    @property
    def donations(self):
        from synctool import clients

        return self._client("donations", lambda: clients.donations(self.config))

    @property
    def pos(self):
        from synctool import clients

        return self._client("pos", lambda: clients.pos(self.config))

    @property
    def mailing(self):
        from synctool import clients

        return self._client("mailing", lambda: clients.mailing(self.config))

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
