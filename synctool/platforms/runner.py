"""The ``Runner`` one drain shares between its jobs: the outside clients (built once, on first use: an HTTPS client's
TLS context costs more than most jobs, and httpx clients are thread-safe), each job's event, and preview mode's plan.
``runner`` builds it from the platforms' registry; the queue runs handlers through it (``queue.handlers.JobRunner``)
without knowing the CRM or any platform.

Every request a client sends first commits what the calling thread's job gathered in its unit of work
(``Unit.before_request``), so the database is never locked while a job waits on the network; CRM requests are
counted on that job.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from synctool import platforms
from synctool.crm import preview
from synctool.crm.client import CrmClient
from synctool.crm.types import JsonObject
from synctool.errors import PermanentError
from synctool.platforms.contract import PlatformClient
from synctool.platforms.job import Job
from synctool.platforms.webhook import Event, JobSpec
from synctool.queue import log
from synctool.queue.handlers import RunningJob
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool import store


class Runner:
    """Outside clients shared by the jobs of one drain, the jobs' events, and preview mode's plan."""

    def __init__(
        self,
        rt: Runtime,
        *,
        open_client: Callable[[str], PlatformClient],
        parse: Callable[[str, bytes], Event],
        claim: Callable[[str, str], Callable[[Event], Event | None] | None] = lambda claimer, role: None,
        register: Callable[[], None] | None = None,
        targets: tuple[str, ...] = ("crm",),
        serial: tuple[str, ...] = (),
    ):
        self.rt = rt
        self.targets = targets
        self.serial = serial
        self.open_client = open_client
        self.parse = parse
        self.claim = claim
        self._register = register
        self._clients: dict[str, PlatformClient] = {}
        self._crm: CrmClient | None = None
        self._lock = threading.Lock()
        self._current = threading.local()
        #: preview mode: the CRM client holds its writes back (drain sets it from ``synctool sync-mode``)
        self.preview = False

    def context(self, job: store.Row, conn: store.Connection, owner: str, run_started: str) -> Job:
        return Job(job, conn, self.rt, owner, self, run_started)

    def event(self, running: RunningJob) -> Event:
        """The job's event: its stored delivery parsed by the platform's adapter, or (for a job no delivery
        brought) its payload. A delivery whose raw body retention dropped (``synctool prune``) gives the
        job its payload alone when it has one (``retry-all --fresh`` re-fetched the item), else fails it
        permanently, saying so."""
        row = running.row
        payload = json.loads(row["payload"]) if row["payload"] else {}
        spec = JobSpec(row["entity_type"], row["entity_id"], row["target"], row["external_id"])
        if row["delivery_id"] is not None:
            found = running.conn.execute(
                "SELECT source, event_id, event_type, body, body_pruned_at FROM deliveries WHERE id = ?", (row["delivery_id"],)
            ).fetchone()
            if found is not None and found["body_pruned_at"]:
                if not payload:
                    raise PermanentError(
                        log.body_dropped(row["delivery_id"], found["body_pruned_at"])
                        + ": this job cannot run from it again; resolve it, or queue the item afresh from the platform"
                    )
                return Event(found["event_id"], found["event_type"] or row["entity_type"], spec, None, payload)
            if found is not None:
                parsed = self.parse(found["source"], bytes(found["body"]))
                claim = self.claim(row["source"], found["source"]) if row["source"] != found["source"] else None
                taken = claim(parsed) if claim is not None else None  # another platform's delivery this one claimed
                parsed = taken if taken is not None else parsed
                return Event(parsed.id, parsed.type, parsed.job, parsed.data, payload)
        return Event("", row["entity_type"], spec, None, payload)

    def _count(self) -> None:
        job = getattr(self._current, "job", None)
        if job is not None:
            job.count_crm_request()

    def _before_send(self, what: str, send: Callable[[], None] | None) -> None:
        """Before each request (and, for the CRM, before the pacer, whose ledger is written through another
        connection): the calling thread's job commits what its unit gathered."""
        job = getattr(self._current, "job", None)
        if job is not None:
            job.unit.before_request(what)
        if send is not None:
            send()

    def get(self, name: str, job: Job) -> PlatformClient:
        """The client of the role ``name``, shared by the drain's jobs. A client built on ``synctool.http.ApiClient``
        commits the calling job's gathered writes before each request it sends; any other commits them now."""
        from synctool.http import ApiClient  # (an idle drain imports no HTTP client)

        if name == "crm":
            return self.crm(job)
        self._current.job = job
        with self._lock:
            if name not in self._clients:
                client = self.open_client(name)
                api = getattr(client, "api", None)
                if isinstance(api, ApiClient):
                    api.before_send = functools.partial(self._before_send, f"a {name} request", api.before_send)
                self._clients[name] = client
            found = self._clients[name]
        if not isinstance(getattr(found, "api", None), ApiClient):
            job.unit.before_request(f"a {name} request")
        return found

    def crm(self, job: Job) -> CrmClient:
        """The CRM client the drain's jobs share; each request it sends is counted on the calling thread's job."""
        self._current.job = job
        with self._lock:
            if self._crm is None:
                from synctool.crm import environment

                crm = environment.open_client(job.conn, self.rt, on_request=self._count, preview=self.preview)
                crm.api.before_send = functools.partial(self._before_send, "a CRM request", crm.api.before_send)
                self._crm = crm
            return self._crm

    def start_plan(self) -> None:
        """Preview mode: the next job's plan starts empty (``crm.preview``)."""
        preview.start_plan(self._crm)

    def plan(self) -> list[JsonObject]:
        """Preview mode: the writes the current job would have sent to the CRM (``crm.preview``)."""
        return preview.plan(self._crm)

    def decision(self, writes: list[JsonObject]) -> str:
        """Preview mode: the constituent decision those writes make, in words (``crm.preview``)."""
        return preview.summary(writes)

    def ready(self) -> None:
        """Register the handlers, once, when the first job is claimed: an idle drain (cron's tick on an
        empty queue) never imports the platforms' rules."""
        with self._lock:
            if self._register is not None:
                self._register()
                self._register = None

    def close(self) -> None:
        with self._lock:
            for client in [*([self._crm] if self._crm is not None else []), *self._clients.values()]:
                client.close()
            self._clients.clear()
            self._crm = None


def runner(rt: Runtime) -> Runner:
    """What drain's handlers run with: the handlers of the platforms that run jobs here (``platforms.running``,
    registered when the first job is claimed), their clients built from the Runtime on first use, stored
    deliveries decoded by their adapter."""
    return Runner(
        rt,
        open_client=lambda role: platforms.open_client(rt, role),
        parse=lambda source, body: platforms.adapter(source).parse_webhook(body),
        claim=platforms.claim_of,
        register=lambda: platforms.register_handlers(rt.config),
        targets=platforms.drained_targets(),
        serial=tuple(t.name for t in platforms.targets() if t.serial),
    )
