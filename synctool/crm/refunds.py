"""Refunds written back to the CRM gift they reduce (invariant 4), by the refund policy.

Each platform reads its own refund events (``platforms/<p>/refunds.py``) into ``Refund``s; this module
applies one to its gift:

- **Exactly once.** The refund's own id is its key in the ``refunds`` ledger. An applied refund is never
  applied again (a replayed webhook changes nothing); two partial refunds of one gift are two keys, and
  each lowers what the other left.
- **Never over a person's edit.** The gift ledger (``crm_writes``) holds the amount synctool last wrote.
  Before writing, the gift is read (``GET /gifts/{id}``): when its amount is no longer that one, nothing is
  written and the refund is flagged for a person. A refund costs 2 requests (read + write).
- **A gift not made yet** (its job is queued, failed, or its POST unconfirmed) makes the refund wait,
  without using up an attempt; the gift's job finishing wakes it. A gift synctool has no record of is
  looked up by external id (a gift made before synctool, or by an earlier install); when the CRM has none
  either, the refund waits ``refunds.wait_for_gift_s`` for a late webhook or the backup poll, then is
  skipped, saying so.
- **Policies** (``refunds.policy``; ``synctool settings refund-policy``), after LGL's guidance for a
  refunded gift: ``adjust`` lowers ``received_amount`` and ``deductible_amount`` by the refund (to 0 for a
  full refund) and appends a note; ``delete`` deletes a wholly refunded gift (the ledger keeps what it was;
  a partial refund is adjusted, since deleting would lose the money kept); ``flag`` writes nothing and
  fails the record as "needs attention", naming the gift and the amount.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from synctool import settings, store
from synctool.crm import currency, gifts, soft_credits
from synctool.crm.client import CrmClient
from synctool.crm.types import Column, JsonObject
from synctool.errors import PermanentError, RemoteError, Skip, Wait
from synctool.money import dollars
from synctool.queue import jobs, log
from synctool.queue.unit import Unit
from synctool.timeutil import age_s

if TYPE_CHECKING:
    from synctool.config import Config

POLICIES = ("adjust", "delete", "flag")
POLICY_SETTING = "refund_policy"
ZERO = Decimal("0.00")


@dataclass
class Refund:
    """One refund of one CRM gift, as a platform reported it."""

    #: the role it came from (``donations``, ``pos``, ``payments``) and the platform's name, for notes
    source: str
    platform: str
    #: the platform's id for the refund (the note and ``refunds list`` show it)
    refund_id: str
    #: the gift it reduces
    gift_external_id: str
    amount: Decimal
    #: the day it was refunded (YYYY-MM-DD)
    refunded_on: str
    #: the ledger key; by default ``<source>:<refund id>`` (a cart refund's share adds its gift)
    key: str = ""
    #: the external id of the job that makes the gift, when it is not the gift's own (a cart's gifts)
    gift_job_external_id: str | None = None
    #: the currency the platform named for ``amount`` (``crm.currency``: another than the organisation's is held)
    currency: str | None = None
    #: what the gift's note says beside the refund (a held refund released at another amount)
    said: str | None = None

    def __post_init__(self) -> None:
        self.key = self.key or f"{self.source}:{self.refund_id}"

    @property
    def words(self) -> str:
        return f"{self.platform} refund {self.refund_id}"


def policy(conn: store.Connection, config: Config) -> str:
    """The refund policy in force: the operator's setting, else the config's ``refunds.policy``."""
    chosen = settings.get(conn, POLICY_SETTING)
    return chosen if chosen in POLICIES else config.refunds.policy


def set_policy(conn: store.Connection, value: str) -> None:
    with store.atomic(conn):
        settings.put(conn, POLICY_SETTING, value)


def recorded(conn: store.Connection, key: str) -> store.Row | None:
    return conn.execute("SELECT * FROM refunds WHERE key = ?", (key,)).fetchone()


def refunded_so_far(conn: store.Connection, gift_external_id: str) -> Decimal:
    """What the applied (or sent) refunds of a gift add up to."""
    rows = conn.execute(
        "SELECT amount FROM refunds WHERE gift_external_id = ? AND state IN ('applied', 'pending')", (gift_external_id,)
    ).fetchall()
    return sum((Decimal(r["amount"]) for r in rows), ZERO)


def _save(work: Unit, refund: Refund, state: str, job_id: str | None, **fields: Column) -> None:
    now = store.iso()
    with work.gather() as conn:
        existing = recorded(conn, refund.key)
        store.put_row(
            conn,
            "refunds",
            {"key": refund.key},
            {
                "source": refund.source,
                "refund_id": refund.refund_id,
                "gift_external_id": refund.gift_external_id,
                "amount": str(refund.amount),
                "refunded_on": refund.refunded_on,
                "state": state,
                "job_id": job_id,
                "created_at": existing["created_at"] if existing else now,
                "updated_at": now,
                **fields,
            },
        )


@dataclass(frozen=True)
class RefundJob:
    """The refund job a refund is applied for, in the CRM's terms: the client (its requests counted on the
    job), the job's unit of work (its writes commit at the points named here), its id, when it was queued, and the
    config (policy, patience)."""

    crm: CrmClient
    work: Unit
    job_id: str
    queued_at: str
    config: Config

    @property
    def conn(self) -> store.Connection:
        return self.work.conn


def _dollars(value: object) -> str:
    return f"${dollars(value):,.2f}"


def run(job: RefundJob, refund: Refund) -> jobs.Outcome:
    """A refund job's outcome: ``apply`` it, linking the record to its gift."""
    message = apply(job, refund)
    entry = gifts.recorded(job.conn, refund.gift_external_id)
    return jobs.Outcome("succeeded", message, crm_gift_id=entry["crm_id"] if entry else None, amount=f"-{refund.amount}")


def apply(job: RefundJob, refund: Refund) -> str:
    """Apply ``refund`` to its gift by the policy in force and return what happened, in words. Raises
    ``Wait`` (the gift is not made yet, or another job is writing it), ``Skip`` (nothing to do) or
    ``PermanentError`` (needs a person: the policy is ``flag``, or the gift is not as synctool left it)."""
    done = recorded(job.conn, refund.key)
    if done is not None and done["state"] == "applied":
        followed = soft_credits.follow(job.crm, job.work, refund.gift_external_id)  # a retry after a cut-short follow
        if followed:
            return f"{refund.words} was already applied; " + "; ".join(followed)
        raise Skip(
            f"{refund.words} was already applied: CRM gift {done['crm_gift_id']} "
            f"{_dollars(done['amount_before'])} -> {_dollars(done['amount_after'])} ({done['policy']})"
        )
    settled = currency.settle(
        job.work, job.config, job_id=job.job_id, source=refund.source, kind="refund", key=refund.key,
        amount=refund.amount, currency=refund.currency or currency.of_gift(job.conn, refund.gift_external_id),
        external_id=refund.gift_external_id,
    )  # fmt: skip
    if settled.released:
        refund.amount, refund.said = settled.amount, settled.note
    if refund.amount <= 0:
        raise Skip(
            f"{refund.words}: nothing left to apply (its money is in the refunds already applied to {refund.gift_external_id})"
        )
    busy = f"another job is writing gift {refund.gift_external_id}; the refund waits for it"
    with job.work.lock_or_wait([f"gift:{refund.gift_external_id}"], busy):
        return _apply(job, refund, done)


def _gift_job(conn: store.Connection, refund: Refund, own_job: str) -> store.Row | None:
    """The unfinished job that will make the refund's gift, if any."""
    return log.gift_job(conn, refund.gift_job_external_id or refund.gift_external_id, exclude=own_job, unfinished=True)


def still_patient(job: RefundJob) -> bool:
    """Whether a refund job whose gift (or payment) synctool has not seen is younger than
    ``refunds.wait_for_gift_s``: its webhook may be late, or the backup poll may still find it."""
    return max(age_s(job.queued_at) or 0.0, 0.0) < job.config.refunds.wait_for_gift_s


def _wait(job: RefundJob, refund: Refund, why: str, after_s: float | None = None) -> Wait:
    with job.work.gather():
        _save(job.work, refund, "waiting", job.job_id, reason=why)
        # the gift's job finishing wakes jobs that share its external id
        jobs.learn_external_id(job.conn, job.job_id, refund.gift_job_external_id or refund.gift_external_id)
    return Wait(
        f"{refund.words} of {_dollars(refund.amount)} waits: {why}",
        retry_after=job.config.refunds.recheck_s if after_s is None else after_s,
    )


def _flag(job: RefundJob, refund: Refund, why: str, **fields: Column) -> PermanentError:
    with job.work.gather():
        _save(job.work, refund, "flagged", job.job_id, reason=why, **fields)
        gift_id = fields.get("crm_gift_id")
        if gift_id:  # the sync log links the record to the gift a person should look at
            jobs.record_crm_ids(job.conn, job.job_id, gift_id=str(gift_id))
    return PermanentError(
        f"needs attention: {refund.words} of {_dollars(refund.amount)} on {refund.gift_external_id}: {why}; "
        "change the gift in the CRM by hand if it should, then `synctool syncs resolve` this record"
    )


def _skip(job: RefundJob, refund: Refund, why: str) -> Skip:
    _save(job.work, refund, "skipped", job.job_id, reason=why)
    return Skip(f"{refund.words} of {_dollars(refund.amount)}: {why}")


def _apply(job: RefundJob, refund: Refund, done: store.Row | None) -> str:
    entry, gift = _gift_entry(job, refund)
    gift_id = entry["crm_id"]
    chosen = policy(job.conn, job.config)
    if chosen == "flag":
        raise _flag(
            job,
            refund,
            f"CRM gift {gift_id} ({_dollars(entry['amount']) if entry['amount'] else 'amount unknown'}) left"
            " unchanged, as the refund policy is flag",
            crm_gift_id=gift_id,
            policy="flag",
        )
    if gift is None:
        try:
            gift = job.crm.get_gift(gift_id)
        except RemoteError as exc:
            return _gift_gone(job, refund, gift_id, done, exc)
    current, current_deductible = (dollars(v) for v in gifts.amounts_of(gift))
    written = dollars(entry["amount"]) if entry["amount"] is not None else current
    if done is not None and done["state"] == "pending" and done["amount_after"] is not None:
        # an earlier attempt sent this refund and lost the answer: did it land?
        if current == dollars(done["amount_after"]) and current != written:
            return _finish(job, refund, gift_id, done["amount_before"], current, current_deductible, done["policy"])
    refused = _refusal(refund, gift_id, current, written)
    if refused is not None:
        raise _flag(job, refund, refused, crm_gift_id=gift_id, amount_before=str(current), policy=chosen)
    return _write(job, refund, gift, gift_id, (current, current_deductible), chosen)


def _gift_entry(job: RefundJob, refund: Refund) -> tuple[store.Row, JsonObject | None]:
    """The refund's gift in the ledger (adopting one the CRM has from before the ledger), and the CRM's gift when
    it had to be read to find it; raises ``Wait`` or ``Skip`` when there is no gift to refund yet."""
    conn, ext = job.conn, refund.gift_external_id
    entry = gifts.recorded(conn, ext)
    if entry is not None and entry["state"] == "deleted":
        raise _skip(job, refund, f"CRM gift {entry['crm_id']} ({ext}) was already deleted after an earlier refund")
    if entry is not None and entry["state"] == "done":
        return entry, None
    maker = _gift_job(conn, refund, job.job_id)
    if maker is not None:
        # a running gift job may finish before this wait is recorded, and its wake-up would miss it: look again soon
        soon = 5.0 if maker["status"] == "running" else None
        raise _wait(job, refund, f"its gift {ext} is not in the CRM yet (its job {maker['id'][:8]} is {maker['status']})", soon)
    if entry is not None:  # sent, answer lost: the gift's job confirms it
        raise _wait(job, refund, f"its gift {ext} was sent and is waiting to be confirmed")
    gift = gifts.find(job.crm, ext)  # a gift synctool made before this ledger, or that another install made
    if gift is None:
        if still_patient(job):
            raise _wait(
                job,
                refund,
                f"no CRM gift {ext} yet (its webhook may be late; waiting up to "
                f"{job.config.refunds.wait_for_gift_s:.0f} s for it)",
            )
        raise _skip(
            job, refund, f"no CRM gift {ext}: it was made before synctool was installed, or never synced; nothing to refund"
        )
    gifts.adopt(job.work, ext, gift, job.job_id)
    adopted = gifts.recorded(conn, ext)
    assert adopted is not None
    return adopted, gift


def _gift_gone(job: RefundJob, refund: Refund, gift_id: str, done: store.Row | None, exc: RemoteError) -> str:
    """The CRM answered that the gift is not there: our own DELETE landed (the refund is done), or a person
    deleted it (flagged); any other error is raised again."""
    if exc.status != 404:
        raise exc
    if done is not None and done["state"] == "pending" and done["policy"] == "delete":  # our DELETE landed
        gifts.record_deleted(job.work, refund.gift_external_id)
        return _finish(job, refund, gift_id, done["amount_before"], ZERO, ZERO, "delete")
    raise _flag(job, refund, f"CRM gift {gift_id} no longer exists (deleted by a person?)", crm_gift_id=gift_id) from None


def _refusal(refund: Refund, gift_id: str, current: Decimal, written: Decimal) -> str | None:
    """Why the refund may not be written to the gift as it stands in the CRM, if it may not."""
    if current != written:
        return (
            f"CRM gift {gift_id} is {_dollars(current)}, not the {_dollars(written)} synctool wrote (a person changed it);"
            " synctool does not write over that"
        )
    if refund.amount > current:
        return f"it is more than the {_dollars(current)} CRM gift {gift_id} holds"
    return None


def _write(job: RefundJob, refund: Refund, gift: JsonObject, gift_id: str, amounts: tuple[Decimal, Decimal], chosen: str) -> str:
    """Record the intent, then lower (or delete) the CRM gift by the refund."""
    crm = job.crm
    current, current_deductible = amounts
    after = current - refund.amount
    deductible = min(after, max(current_deductible - refund.amount, ZERO))
    deleting = chosen == "delete" and after == 0
    applied = "delete" if deleting else "adjust" if chosen == "adjust" else "adjust (partial refund: the gift keeps the rest)"
    # the intent first: an attempt whose answer is lost is recognised by the next one (``_apply``)
    _save(
        job.work,
        refund,
        "pending",
        job.job_id,
        crm_gift_id=gift_id,
        amount_before=str(current),
        amount_after=str(after),
        policy=applied,
    )
    job.work.commit("before refund write")  # the intent, before the write
    if deleting:
        try:
            crm.delete_gift(gift_id)
        except RemoteError as exc:
            if exc.status != 404:  # a retried DELETE whose first answer was lost finds it gone
                raise
        gifts.record_deleted(job.work, refund.gift_external_id)
    else:
        line = f"Refunded {_dollars(refund.amount)} on {refund.refunded_on} via {refund.platform}, refund {refund.refund_id}"
        line += f" ({refund.said})" if refund.said else ""
        note = "\n".join(p for p in ((gift.get("note") or "").rstrip(), line) if p)
        crm.update_gift(gift_id, {"received_amount": float(after), "deductible_amount": float(deductible), "note": note})
    return _finish(job, refund, gift_id, current, after, deductible, applied)


def _finish(
    job: RefundJob, refund: Refund, gift_id: str, before: Decimal | str, after: Decimal, deductible: Decimal, applied: str
) -> str:
    work = job.work
    with work.gather():
        if applied != "delete":
            gifts.record_amounts(work, refund.gift_external_id, after, deductible)
        _save(
            work,
            refund,
            "applied",
            job.job_id,
            crm_gift_id=gift_id,
            amount_before=str(dollars(before)),
            amount_after=str(after),
            policy=applied,
            reason=None,
        )
    work.commit("after refund write")
    verb = "deleted" if applied == "delete" else f"{_dollars(before)} -> {_dollars(after)}"
    followed = soft_credits.follow(job.crm, job.work, refund.gift_external_id)  # its soft credits, by the same policy
    return f"{refund.words} of {_dollars(refund.amount)}: CRM gift {gift_id} {verb} ({applied.split(' ')[0]})" + "".join(
        f"; {line}" for line in followed
    )
