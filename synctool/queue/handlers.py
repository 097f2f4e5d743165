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

from synctool import store
from synctool.config import Config
from synctool.queue import jobs
from synctool.runtime import Runtime

Handler = Callable[["JobContext"], "jobs.Outcome | None"]
HANDLERS: dict[tuple[str, str], Handler] = {}


def handler(target: str, entity_type: str) -> Callable[[Handler], Handler]:
    """Register ``fn`` for ``target`` jobs of ``entity_type``. A second function for the same pair is refused:
    one platform's handler must never silently replace another's (each names its entity types for itself)."""

    def register(fn: Handler) -> Handler:
        existing = HANDLERS.get((target, entity_type))
        if existing is not None and (existing.__module__, existing.__qualname__) != (fn.__module__, fn.__qualname__):
            raise RuntimeError(
                f"two handlers for {target} jobs of type {entity_type!r}: {existing.__module__}.{existing.__qualname__} "
                f"and {fn.__module__}.{fn.__qualname__}"
            )
        HANDLERS[(target, entity_type)] = fn
        return fn

    return register


@dataclass
class JobContext:
    """What a handler gets: its job, a connection of its own, the config and the outside clients."""

    job: sqlite3.Row
    conn: sqlite3.Connection
    rt: Runtime
    owner: str
    services: Services
    #: when this job's run (a drain, or one operator command) started: the CRM mirror is refreshed at
    #: most once per run, and must have been refreshed since then before a constituent is created
    run_started: str = field(default_factory=store.iso)
    crm_requests: int = 0

    @property
    def config(self) -> Config:
        return self.rt.config

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
        return self.services.decode(row["source"], bytes(row["body"]))

    def heartbeat(self) -> None:
        """Extend the lease and the job's locks; called before each CRM request, so a job run outside a
        drain's heartbeat (an operator's "sync now") is not reclaimed while it works."""
        jobs.renew(self.conn, [self.owner], self.rt.config.queue.lease_seconds)

    def count_crm_request(self) -> None:
        self.crm_requests += 1
        self.heartbeat()

    def client(self, role: str) -> Any:
        """The API client for an outside system (``crm``, ``donations``, ``pos``, ``mailing``)."""
        return self.services.get(role, self)

    @property
    def crm(self) -> Any:
        """The CRM client; every request it sends is counted on this job's attempt."""
        return self.services.get("crm", self)

    def match_or_create(self, person: Any, *, use_link: bool = True) -> tuple[str, bool]:
        """The person's CRM constituent id (matched on the mirror, else created) and whether it is new."""
        from synctool.crm.constituents import match_or_create

        return match_or_create(
            self.crm,
            self.conn,
            person,
            self.rt.config.crm.profile_defaults,
            fresh_since=self.run_started,
            page_size=self.rt.config.crm.mirror_page_size,
            use_link=use_link,
        )


class Services:
    """Outside clients shared by the jobs of one drain: building an HTTPS client (its TLS context) costs
    more than most jobs, and httpx clients are thread-safe. CRM requests are counted on the job that the
    calling thread is running."""

    def __init__(
        self,
        rt: Runtime,
        *,
        open_client: Callable[[str], Any],
        decode: Callable[[str, bytes], dict[str, Any]],
        register: Callable[[], None] | None = None,
    ):
        self.rt = rt
        self.open_client = open_client
        self.decode = decode
        self._register = register
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._current = threading.local()
        #: preview mode: the CRM client holds its writes back (drain sets it from ``synctool sync-mode``)
        self.preview = False

    def _count(self) -> None:
        ctx = getattr(self._current, "ctx", None)
        if ctx is not None:
            ctx.count_crm_request()

    def get(self, name: str, ctx: JobContext) -> Any:
        self._current.ctx = ctx
        with self._lock:
            if name not in self._clients:
                if name == "crm":
                    from synctool.crm import target

                    self._clients[name] = target.open_client(ctx.conn, self.rt, on_request=self._count, preview=self.preview)
                else:
                    self._clients[name] = self.open_client(name)
            return self._clients[name]

    def start_plan(self) -> None:
        """Preview mode: the next job's plan starts empty."""
        client = self._clients.get("crm")
        if client is not None and hasattr(client, "start_plan"):
            client.start_plan()

    def plan(self) -> list[dict[str, Any]]:
        """Preview mode: the writes the current job would have sent to the CRM."""
        client = self._clients.get("crm")
        return list(getattr(client, "writes", []))

    def ready(self) -> None:
        """Register the handlers, once, when the first job is claimed: an idle drain (cron's tick on an
        empty queue) never imports the platforms' rules."""
        with self._lock:
            if self._register is not None:
                self._register()
                self._register = None

    def close(self) -> None:
        with self._lock:
            for client in self._clients.values():
                client.close()
            self._clients.clear()
