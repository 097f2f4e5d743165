"""The running job a handler gets (``Job``): its row, a connection of its own, its unit of work, its lease's heartbeat,
the config and the outside clients.

A handler writes in the job's unit of work (``job.unit``, ``queue.unit``): a helper that writes takes it as a
parameter (``gifts.create_once(job.crm, job.unit, ...)``), and what it gathers commits at the points the helpers name
around each CRM write, the rest with the job's own row at its end. The job's clients commit what the unit gathered
before each request they send (``Unit.before_request``): the database is never locked while a job waits on the
network.

The rules a job follows live in the modules that name them: matching a donor (``crm.constituents.Matching``, with the
donor policy of ``crm.matching``), the currency rule (``crm.currency``), the refund ledger (``crm.refunds``); the
clients a drain's jobs share in ``platforms.runner``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from synctool import store
from synctool.config import Config
from synctool.crm import constituents, currency, donor_changes, gifts, matching, refunds
from synctool.crm.client import CrmClient
from synctool.crm.currency import GiftBody
from synctool.crm.types import Amount
from synctool.platforms.contract import PlatformClient
from synctool.queue import jobs
from synctool.queue.unit import Unit
from synctool.runtime import Runtime

#: the class of an outside system's client a handler asks for (``Job.client``)
C = TypeVar("C")


class Clients(Protocol):
    """Where a job gets its outside clients (``platforms.runner.Runner``: shared by a drain's jobs)."""

    def get(self, name: str, job: Job) -> PlatformClient: ...

    def crm(self, job: Job) -> CrmClient: ...


@dataclass
class Job:
    """The running job a handler gets: its row, a connection of its own, its unit of work, the config and the
    clients."""

    row: store.Row
    conn: store.Connection
    rt: Runtime
    owner: str
    runner: Clients
    #: when this job's run (a drain, or one operator command) started: the CRM mirror is refreshed at
    #: most once per run, and must have been refreshed since then before a constituent is created
    run_started: str = field(default_factory=store.iso)
    crm_requests: int = 0
    #: what the job's gift taught about its known donor (``crm.donor_changes``, ``crm.matching``), in words for the
    #: outcome
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

    def client(self, role: str, kind: type[C]) -> C:
        """The API client for an outside system (``donations``, ``pos``, ``mailing``, ...), of the class ``kind`` its
        platform builds; each request it sends commits what the job's unit gathered first (``platforms.runner``)."""
        found = self.runner.get(role, self)
        if not isinstance(found, kind):
            raise TypeError(f"the {role} client is a {type(found).__name__}, not a {kind.__name__}")
        return found

    @property
    def crm(self) -> CrmClient:
        """The CRM client; every request it sends is counted on this job's attempt."""
        return self.runner.crm(self)

    def matching(self, donors: constituents.KnownDonors | None = None) -> constituents.Matching:
        """How this job matches a person to a constituent: the run's settings, and ``donors``' policy for a person
        whose e-mail is in no constituent (None: by e-mail alone)."""
        crm = self.config.crm
        return constituents.Matching(
            crm.profile_defaults, self.run_started, crm.mirror_page_size, donors=donors, created=self.created
        )

    def match_or_create(self, person: constituents.Person, *, use_link: bool = True) -> tuple[str, bool]:
        """The person's CRM constituent id (matched on the mirror, else created) and whether it is new. What the match
        wrote (the link, the mirror, the lock let go) commits before this returns: the handler's code that follows may
        wait for a lock of its own, which must not hold the database."""
        found = constituents.match_or_create(self.crm, self.unit, person, self.matching(), use_link=use_link)
        self.unit.commit("after constituent match")
        return found

    def money(
        self, kind: str, key: str, amount: Amount, currency_named: str | None, external_id: str | None = None
    ) -> currency.Settled:
        """The amount of a money line (``gift``, ``refund``, ``deposit``) to write, in the organisation's currency
        (``crm.currency.settle``): in another currency the job is held as ``review`` until a person releases it
        with the amount the bank credited."""
        return currency.settle(
            self.unit, self.config, job_id=self.id, source=self.row["source"], kind=kind, key=key, amount=amount,
            currency=currency_named, external_id=external_id,
        )  # fmt: skip

    def gift_in_currency(self, body: GiftBody, currency_named: str | None) -> None:
        """The gift ``body`` in the organisation's currency (``crm.currency.gift_in_currency``), changed in place."""
        currency.gift_in_currency(self.unit, self.config, body, currency_named, job_id=self.id, source=self.row["source"])

    def make_gift(self, person: constituents.Person, body: GiftBody, *, currency: str | None = None) -> tuple[str, str, bool]:
        """The person's constituent and the gift ``body`` on it, made once (``crm.gifts.for_person``), the donor
        matched by the policy ``donors.matching`` (``crm.matching``): (constituent id, gift id, whether the gift is
        new). A contact point the donor's data carries and the constituent lacks is kept by ``donors.updates``
        (``crm.donor_changes``; names are never changed). ``currency`` is the one the platform named for the gift's
        amount: another than the organisation's holds the job (``gift_in_currency``) before any constituent is
        matched or made; ``body`` is changed in place to the amount written."""
        self.gift_in_currency(body, currency)
        donors = constituents.KnownDonors(self.row, matching.policy(self.conn, self.config), self.donor_news)
        constituent_id, gift_id, created = gifts.for_person(
            self.crm, self.unit, person, body, self.matching(donors),
            job_id=self.id, force=self.force, confirm_after_s=self.config.crm.confirm_after_s,
        )  # fmt: skip
        self.donor_news += donor_changes.record(
            self.crm, self.unit, constituent_id, person, how=donor_changes.policy(self.conn, self.config),
            source=self.row["source"], external_id=str(body.get("external_id") or "") or None, job_id=self.id,
        )  # fmt: skip
        return constituent_id, gift_id, created

    def said(self) -> str:
        """The donor news of this job's gift, as a suffix for its outcome message."""
        return "".join(f"; {line}" for line in self.donor_news)

    def refund_job(self) -> refunds.RefundJob:
        """This job as ``crm.refunds`` applies a refund for it."""
        return refunds.RefundJob(self.crm, self.unit, self.id, self.row["created_at"], self.config)
