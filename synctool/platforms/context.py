"""What a job handler works with: ``Job`` (its row, a connection of its own, its unit of work, the config, the
outside clients) and the ``Runner`` one drain shares between its jobs, which ``runner`` builds from the platforms'
registry. The queue runs handlers through these (``queue.handlers.Runner``) without knowing the CRM or any
platform.

A job's clients commit what its unit of work gathered before each request they send (``Unit.before_request``):
the database is never locked while a job waits on the network.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from synctool import platforms, store
from synctool.config import Config
from synctool.crm import constituents, donor_changes, gifts, matching, refunds
from synctool.crm import currency as currency_rule
from synctool.crm.client import CrmClient
from synctool.errors import PermanentError
from synctool.money import dollars as as_dollars
from synctool.platforms.contract import PlatformClient
from synctool.platforms.webhook import Event, JobSpec
from synctool.queue import jobs, log
from synctool.queue.handlers import Job as RunningJob
from synctool.queue.unit import Unit
from synctool.runtime import Runtime

#: a donor policy's choice of constituent for a person whose e-mail matches none (``Job.known_donor``), or None
KnownDonor = Callable[[constituents.Person], str | None]


@dataclass
class Job:
    """The running job a handler gets: its row, a connection of its own, the config and the clients."""

    row: sqlite3.Row
    conn: sqlite3.Connection
    rt: Runtime
    owner: str
    runner: Runner
    #: when this job's run (a drain, or one operator command) started: the CRM mirror is refreshed at
    #: most once per run, and must have been refreshed since then before a constituent is created
    run_started: str = field(default_factory=store.iso)
    crm_requests: int = 0
    #: what the job's gift taught about its known donor (``crm.donor_changes``), in words for the outcome
    donor_news: list[str] = field(default_factory=list)
    #: the constituents this job created (a buyer made for this order was invited by nobody yet)
    created: set[str] = field(default_factory=set)
    #: the job's unit of work: its local writes, committed at named points (``queue.unit``)
    unit: Unit = field(init=False)
    #: when the job's lease was last extended (its claim, or ``heartbeat``), on the monotonic clock
    renewed: float = field(init=False, default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.unit = Unit(self.conn)

    @property
    def config(self) -> Config:
        return self.rt.config

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def force(self) -> bool:
        return bool(self.row["force"])

    def heartbeat(self) -> None:
        """Extend the lease and the job's locks once a third of a lease has passed since they were; called before
        each CRM request, so a job run outside a drain's heartbeat (an operator's "sync now") is not reclaimed
        while it works, and a quick job spends no commit on it."""
        lease = self.rt.config.queue.lease_seconds
        if time.monotonic() - self.renewed < lease / 3:
            return
        self.renewed = time.monotonic()
        jobs.renew(self.conn, [self.owner], lease)

    def count_crm_request(self) -> None:
        self.crm_requests += 1
        self.heartbeat()

    def client(self, role: str) -> Outside:
        """The API client for an outside system (``donations``, ``pos``, ``mailing``, ...): each call commits what
        the job's unit gathered first."""
        return Outside(self.runner.get(role, self), self.unit, role)

    @property
    def crm(self) -> CrmClient:
        """The CRM client; every request it sends is counted on this job's attempt."""
        return self.runner.crm(self)

    def match_or_create(
        self,
        person: constituents.Person,
        *,
        use_link: bool = True,
        known_donor: KnownDonor | None = None,
    ) -> tuple[str, bool]:
        """The person's CRM constituent id (matched on the mirror, else created) and whether it is new;
        ``known_donor`` may name a constituent when the e-mail matches none (``make_gift`` asks ``Job.known_donor``).
        What the match wrote (the link, the mirror, the lock let go) commits before this returns: the handler's code
        that follows may wait for a lock of its own (``store.named_lock``), which must not hold the database."""
        found = self._match(person, use_link=use_link, known_donor=known_donor)
        self.unit.commit("after constituent match")
        return found

    def _match(
        self, person: constituents.Person, *, use_link: bool = True, known_donor: KnownDonor | None = None
    ) -> tuple[str, bool]:
        """``match_or_create`` within the unit: what it wrote commits at the job's next point (its gift's)."""
        crm = self.rt.config.crm
        found, created = constituents.match_or_create(
            self.crm,
            self.conn,
            person,
            crm.profile_defaults,
            fresh_since=self.run_started,
            page_size=crm.mirror_page_size,
            use_link=use_link,
            known_donor=known_donor,
        )
        if created:
            self.created.add(str(found))
        return found, created

    def known_donor(self, person: constituents.Person) -> str | None:
        """A gift's donor whose e-mail is in no constituent: a known constituent by name and address or phone,
        by the policy ``donors.matching`` (``crm.matching``); the decision is said in the job's outcome."""
        chosen, note = matching.resolve(self.conn, person, self.row, matching.policy(self.conn, self.config))
        if note:
            self.donor_news.append(note)
        return chosen

    def money(
        self, kind: str, key: str, amount: Amount, currency: str | None, external_id: str | None = None
    ) -> currency_rule.Settled:
        """The amount of a money line (``gift``, ``refund``, ``deposit``) to write, in the organisation's currency
        (``crm.currency.settle``): in another currency the job is held as ``review`` until a person releases it
        with the amount the bank credited."""
        return currency_rule.settle(
            self.conn, self.config, job_id=self.id, source=self.row["source"], kind=kind, key=key, amount=amount,
            currency=currency, external_id=external_id,
        )  # fmt: skip

    def gift_in_currency(self, body: dict[str, Any], currency: str | None) -> None:
        """The gift ``body`` in the organisation's currency: unchanged when its platform named that currency (or
        none); at the amount a person released it at, with a note naming the original (its deductible amount in
        proportion); else the job is held (``NeedsReview``). A gift the ledger holds already is left as it is."""
        if currency_rule.foreign(self.config, currency) is None:  # the usual case: no ledger read
            return
        ext = str(body["external_id"])
        done = gifts.recorded(self.conn, ext)
        if done is not None and done["state"] == "done":
            return
        received = as_dollars(body["received_amount"])
        settled = self.money("gift", ext, received, currency, ext)
        if not settled.released:
            return
        if body.get("deductible_amount") is not None:
            deductible = as_dollars(body["deductible_amount"])
            body["deductible_amount"] = float(
                settled.amount
                if deductible >= received
                else currency_rule.spread([deductible, received - deductible], settled.amount)[0]
            )
        body["received_amount"] = float(settled.amount)
        body["note"] = "; ".join(p for p in (str(body.get("note") or ""), str(settled.note)) if p)[:1000]

    def make_gift(
        self, person: constituents.Person, body: dict[str, Any], *, currency: str | None = None
    ) -> tuple[str, str, bool]:
        """The person's constituent and the gift ``body`` on it, made once (``crm.gifts.for_person``):
        (constituent id, gift id, whether the gift is new). A contact point the donor's data carries and the
        constituent lacks is kept by ``donors.updates`` (``crm.donor_changes``; names are never changed).
        ``currency`` is the one the platform named for the gift's amount: another than the organisation's holds
        the job (``gift_in_currency``) before any constituent is matched or made; ``body`` is changed in place to
        the amount written."""
        self.gift_in_currency(body, currency)
        constituent_id, gift_id, created = gifts.for_person(
            self.crm,
            self.conn,
            person,
            body,
            functools.partial(self._match, known_donor=self.known_donor),
            job_id=self.id,
            force=self.force,
            confirm_after_s=self.config.crm.confirm_after_s,
        )
        how = donor_changes.policy(self.conn, self.config)
        self.donor_news += donor_changes.record(
            self.crm, self.conn, constituent_id, person, how=how, source=self.row["source"],
            external_id=body.get("external_id"), job_id=self.id,
        )  # fmt: skip
        return constituent_id, gift_id, created

    def said(self) -> str:
        """The donor news of this job's gift, as a suffix for its outcome message."""
        return "".join(f"; {line}" for line in self.donor_news)

    def refund_job(self) -> refunds.RefundJob:
        """This job as ``crm.refunds`` applies a refund for it."""
        return refunds.RefundJob(self.crm, self.conn, self.id, self.row["created_at"], self.config)


#: a platform's amount of money as its API gives it: a number or a string of one (``money.dollars``)
Amount = Decimal | float | int | str


class Outside:
    """An outside system's client as a job holds it: each call first commits what the job gathered, so no lock
    on the database waits on the network (``Unit.before_request``)."""

    def __init__(self, client: PlatformClient, work: Unit, role: str) -> None:
        self._client, self._unit, self._role = client, work, role

    def __getattr__(self, name: str) -> Any:  # (what the client's attribute is: a method, called through)
        found = getattr(self._client, name)
        if not callable(found):
            return found

        def call(*args: object, **kwargs: object) -> Any:
            self._unit.before_request(f"a {self._role} request")
            return found(*args, **kwargs)

        return call


class Runner:
    """Outside clients shared by the jobs of one drain: building an HTTPS client (its TLS context) costs
    more than most jobs, and httpx clients are thread-safe. CRM requests are counted on the job that the
    calling thread is running."""

    def __init__(
        self,
        rt: Runtime,
        *,
        open_client: Callable[[str], PlatformClient],
        parse: Callable[[str, bytes], Event],
        register: Callable[[], None] | None = None,
        targets: tuple[str, ...] = ("crm",),
        serial: tuple[str, ...] = (),
    ):
        self.rt = rt
        self.targets = targets
        self.serial = serial
        self.open_client = open_client
        self.parse = parse
        self._register = register
        self._clients: dict[str, PlatformClient] = {}
        self._crm: CrmClient | None = None
        self._lock = threading.Lock()
        self._current = threading.local()
        #: preview mode: the CRM client holds its writes back (drain sets it from ``synctool sync-mode``)
        self.preview = False

    def context(self, job: sqlite3.Row, conn: sqlite3.Connection, owner: str, run_started: str) -> Job:
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
                return Event(parsed.id, parsed.type, parsed.job, parsed.data, payload)
        return Event("", row["entity_type"], spec, None, payload)

    def _count(self) -> None:
        job = getattr(self._current, "job", None)
        if job is not None:
            job.count_crm_request()

    def _before_crm_send(self, send: Callable[[], None] | None) -> None:
        """Before each CRM request (and before the pacer, whose ledger is written through another connection): the
        calling thread's job commits what its unit gathered."""
        job = getattr(self._current, "job", None)
        if job is not None:
            job.unit.before_request("a CRM request")
        if send is not None:
            send()

    def get(self, name: str, job: Job) -> PlatformClient:
        if name == "crm":
            return self.crm(job)
        self._current.job = job
        with self._lock:
            if name not in self._clients:
                self._clients[name] = self.open_client(name)
            return self._clients[name]

    def crm(self, job: Job) -> CrmClient:
        """The CRM client the drain's jobs share; each request it sends is counted on the calling thread's job."""
        self._current.job = job
        with self._lock:
            if self._crm is None:
                from synctool.crm import environment

                crm = environment.open_client(job.conn, self.rt, on_request=self._count, preview=self.preview)
                crm.api.before_send = functools.partial(self._before_crm_send, crm.api.before_send)
                self._crm = crm
            return self._crm

    def start_plan(self) -> None:
        """Preview mode: the next job's plan starts empty."""
        client = self._crm
        if client is not None and hasattr(client, "start_plan"):
            client.start_plan()

    def plan(self) -> list[dict[str, Any]]:
        """Preview mode: the writes the current job would have sent to the CRM."""
        return list(getattr(self._crm, "writes", []))

    def decision(self, writes: list[dict[str, Any]]) -> str:
        """Preview mode: the constituent decision those writes make, in words."""
        from synctool.crm.preview import summary

        return summary(writes)

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
        register=lambda: platforms.register_handlers(rt.config),
        targets=platforms.drained_targets(),
        serial=tuple(t.name for t in platforms.targets() if t.serial),
    )
