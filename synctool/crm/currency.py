"""One currency: the CRM holds money in one currency, the organisation's (``organisation.currency``, USD by
default). A gift, a refund or a payout line that a platform reports in another currency is never written as if
it were the organisation's: its job is held as ``review`` ("held: 74.16 CAD in a USD organisation") and the hold
is recorded here (``currency_holds``), until a person either releases it with the amount the bank credited
(``synctool jobs release ID --amount 54.12``: the job is queued again and writes that amount once, through the
normal path, with a note naming the original amount and currency) or resolves it (``synctool syncs resolve``:
nothing is written).

``settle`` is the one check: the handlers hand it the money line's amount and the currency the platform named
(compared without regard to case: a processor may send ``cad``), and get back the amount to write. A line whose
platform names no currency is the organisation's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING, TypedDict, cast

from synctool import store
from synctool.errors import Conflict, InvalidInput, NeedsReview, NotFound, Skip
from synctool.money import dollars
from synctool.queue.unit import Unit

if TYPE_CHECKING:
    from synctool.config import Config

KINDS = ("gift", "refund", "deposit")
STATUSES = ("pending", "released", "resolved")
CENT = Decimal("0.01")


class Released(TypedDict):
    """What releasing a job's held money did."""

    job: str
    key: str
    held: str
    released: str
    holds: list[int]
    jobs_queued: int
    next: str


class HeldMoney(TypedDict):
    """A ``currency_holds`` row with its job's donor and status, as the staff page lists it."""

    id: int
    job_id: str
    source: str | None
    kind: str
    key: str
    external_id: str | None
    amount: str
    currency: str
    organisation_currency: str | None
    status: str
    released_amount: str | None
    decided_by: str | None
    decided_at: str | None
    created_at: str
    email: str | None
    name: str | None
    entity_type: str | None
    entity_id: str | None
    job_status: str | None


@dataclass
class Settled:
    """The amount to write, in the organisation's currency, and what to say about it in the CRM's note (when a
    person released it at another amount)."""

    amount: Decimal
    note: str | None = None

    @property
    def released(self) -> bool:
        return self.note is not None


def code(currency: object) -> str:
    """A currency as compared: upper case, no spaces; '' when the platform named none."""
    return str(currency or "").strip().upper()


def organisation_currency(config: Config) -> str:
    return str(config.organisation.currency)


def foreign(config: Config, currency: object) -> str | None:
    """The currency (upper case) when it is not the organisation's; None when it is, or when none is named."""
    named = code(currency)
    return named if named and named != organisation_currency(config) else None


def settle(
    work: Unit,
    config: Config,
    *,
    job_id: str,
    source: str | None,
    kind: str,
    key: str,
    amount: object,
    currency: object,
    external_id: str | None = None,
) -> Settled:
    """The amount of the money line ``key`` (a gift's external id, a refund's ledger key, a deposit's) to write.
    In the organisation's currency (or none named): ``amount``. In another: the amount a person released it at,
    else ``NeedsReview`` (the job waits as ``review``; the hold is recorded), or ``Skip`` when a person resolved
    it (nothing is written). The hold gathers in ``work`` (in a job: committed at its end, with the job held)."""
    conn = work.conn
    value = dollars(amount)
    other = foreign(config, currency)
    if other is None:
        return Settled(value)
    org = organisation_currency(config)
    decided = conn.execute(
        "SELECT * FROM currency_holds WHERE kind = ? AND key = ? AND status IN ('released', 'resolved') ORDER BY id DESC LIMIT 1",
        (kind, key),
    ).fetchone()
    if decided is not None and decided["status"] == "released":
        given = dollars(decided["released_amount"])
        return Settled(
            given,
            f"{value} {other} received, written as {given} {org} (the amount the bank credited), released by "
            f"{decided['decided_by'] or 'someone'} on {str(decided['decided_at'] or '')[:10]}",
        )
    if decided is not None:
        raise Skip(
            f"{value} {other} in a {org} organisation: resolved by {decided['decided_by'] or 'someone'} on "
            f"{str(decided['decided_at'] or '')[:10]} without writing it (currency hold {decided['id']})"
        )
    hold_id = hold(work, job_id=job_id, source=source, kind=kind, key=key, external_id=external_id, amount=value,
                   currency=other, org=org)  # fmt: skip
    raise NeedsReview(
        f"held: {value} {other} in a {org} organisation (currency hold {hold_id}); release it with the amount the bank "
        f"credited (`synctool jobs release {job_id[:8]} --amount ...`) or resolve it (`synctool syncs resolve {job_id[:8]}`)"
    )


#: a CRM gift's body as a handler builds it (LGL's gift fields), changed in place to the amount written
GiftBody = dict[str, object]


def gift_in_currency(
    work: Unit, config: Config, body: GiftBody, currency: str | None, *, job_id: str, source: str | None
) -> None:
    """The gift ``body`` in the organisation's currency: unchanged when its platform named that currency (or none); at
    the amount a person released it at, with a note naming the original (its deductible amount in proportion); else
    the job is held (``NeedsReview``). A gift the ledger holds already is left as it is."""
    from synctool.crm import gifts

    if foreign(config, currency) is None:  # the usual case: no ledger read
        return
    ext = str(body["external_id"])
    done = gifts.recorded(work.conn, ext)
    if done is not None and done["state"] == "done":
        return
    received = dollars(body["received_amount"])
    settled = settle(work, config, job_id=job_id, source=source, kind="gift", key=ext, amount=received,
                     currency=currency, external_id=ext)  # fmt: skip
    if not settled.released:
        return
    if body.get("deductible_amount") is not None:
        deductible = dollars(body["deductible_amount"])
        body["deductible_amount"] = float(
            settled.amount if deductible >= received else spread([deductible, received - deductible], settled.amount)[0]
        )
    body["received_amount"] = float(settled.amount)
    body["note"] = "; ".join(p for p in (str(body.get("note") or ""), str(settled.note)) if p)[:1000]


def hold(
    work: Unit,
    *,
    job_id: str,
    source: str | None,
    kind: str,
    key: str,
    external_id: str | None,
    amount: Decimal,
    currency: str,
    org: str,
) -> int:
    """Record that ``job_id`` holds the money line ``key`` (once per job and line); returns the hold's id."""
    with work.gather() as conn:
        known = conn.execute(
            "SELECT id FROM currency_holds WHERE job_id = ? AND kind = ? AND key = ? AND status = 'pending'", (job_id, kind, key)
        ).fetchone()
        if known is not None:
            conn.execute(
                "UPDATE currency_holds SET amount = ?, currency = ?, organisation_currency = ? WHERE id = ?",
                (str(amount), currency, org, known[0]),
            )
            return int(known[0])
        row = {
            "job_id": job_id,
            "source": source,
            "kind": kind,
            "key": key,
            "external_id": external_id or key,
            "amount": str(amount),
            "currency": currency,
            "organisation_currency": org,
            "status": "pending",
            "created_at": store.iso(),
        }
        return int(
            conn.execute(
                f"INSERT INTO currency_holds ({', '.join(row)}) VALUES ({', '.join('?' * len(row))}) RETURNING id",
                tuple(row.values()),
            ).fetchone()[0]
        )


def pending_for_job(conn: store.Connection, job_id: str) -> list[store.Row]:
    return conn.execute("SELECT * FROM currency_holds WHERE job_id = ? AND status = 'pending' ORDER BY id", (job_id,)).fetchall()


def release(conn: store.Connection, job_id: str, amount: object, *, by: str) -> Released:
    """A person read the bank: the money ``job_id`` holds is written at ``amount`` (the organisation's currency).
    Every pending hold of the same money line (another job for the same gift) is released alike, and their jobs
    queued again; the first to run writes the gift, the others find it in the ledger. Returns what was done."""
    from synctool.queue import jobs

    try:
        given = dollars(amount)
    except ValueError:
        raise InvalidInput(f"{amount!r} is not an amount", "the amount the bank credited, e.g. 54.12") from None
    if given <= 0:
        raise InvalidInput(f"{given} is not an amount to write", "the amount the bank credited, more than 0")
    with store.atomic(conn):
        held = pending_for_job(conn, job_id)
        if not held:
            job = jobs.get(conn, job_id)
            if job is None:
                raise NotFound(f"no job {job_id}")
            earlier = conn.execute("SELECT * FROM currency_holds WHERE job_id = ? ORDER BY id DESC LIMIT 1", (job_id,)).fetchone()
            if earlier is not None:
                raise Conflict(
                    f"job {job_id} holds no money any more: {earlier['amount']} {earlier['currency']} was {earlier['status']}"
                    f" by {earlier['decided_by'] or 'someone'}"
                    + (f" at {earlier['released_amount']}" if earlier["released_amount"] else "")
                )
            hint = "synctool donors matches" if job["status"] == "review" else "the sync log says why"
            raise Conflict(f"job {job_id} is {job['status']} and holds no money in another currency ({hint})")
        if len(held) > 1:
            raise Conflict(f"job {job_id} holds {len(held)} money lines; release them one by one (a bug: tell the developers)")
        line = held[0]
        now = store.iso()
        same = conn.execute(
            "SELECT * FROM currency_holds WHERE status = 'pending' AND kind = ? AND key = ?", (line["kind"], line["key"])
        ).fetchall()
        conn.executemany(
            "UPDATE currency_holds SET status = 'released', released_amount = ?, decided_by = ?, decided_at = ? WHERE id = ?",
            [(str(given), by, now, r["id"]) for r in same],
        )
        queued = jobs.release_held(conn, sorted({r["job_id"] for r in same}))
    org = line["organisation_currency"] or ""
    return {
        "job": job_id,
        "key": line["key"],
        "held": f"{line['amount']} {line['currency']}",
        "released": f"{given} {org}".strip(),
        "holds": [r["id"] for r in same],
        "jobs_queued": queued,
        "next": "the next drain writes it once, at the released amount, through the normal path",
    }


def resolve(conn: store.Connection, job_id: str, *, by: str | None) -> int:
    """A person settled the held money outside synctool: this job's holds are resolved (nothing is written, and
    a later job for the same money line is skipped, saying so). Returns how many holds were resolved."""
    with store.atomic(conn):
        return conn.execute(
            "UPDATE currency_holds SET status = 'resolved', decided_by = ?, decided_at = ? WHERE job_id = ? AND status = 'pending'",
            (by or "someone", store.iso(), job_id),
        ).rowcount


def listing(conn: store.Connection, status: str | None = "pending", limit: int = 200) -> list[HeldMoney]:
    """The holds (pending ones by default), newest first, each with its job's donor and status (the staff page)."""
    from synctool.queue import log

    where, args = ("WHERE status = ?", [status]) if status else ("", [])
    holds = conn.execute(f"SELECT * FROM currency_holds {where} ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
    found = {j["id"]: j for j in log.by_ids(conn, sorted({h["job_id"] for h in holds}))} if holds else {}
    listed: list[HeldMoney] = []
    for h in holds:
        job = found.get(h["job_id"])
        of_job = {k: None if job is None else job[k] for k in ("email", "name", "entity_type", "entity_id")}
        listed.append(cast(HeldMoney, {**dict(h), **of_job, "job_status": None if job is None else job["status"]}))
    return listed


def pending_count(conn: store.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM currency_holds WHERE status = 'pending'").fetchone()[0])


def by_external_id(conn: store.Connection, external_ids: Iterable[str]) -> dict[str, store.Row]:
    """The newest gift hold (any status) of each of these external ids (reconcile, year end)."""
    keys = list(external_ids)
    found: dict[str, store.Row] = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(
            f"SELECT * FROM currency_holds WHERE kind = 'gift' AND external_id IN ({marks}) ORDER BY id", chunk
        ):
            found[r["external_id"]] = r
    return found


def of_gift(conn: store.Connection, external_id: str) -> str | None:
    """The currency a gift was held in (its refunds are in it too, when their platform names none), else None."""
    row = conn.execute(
        "SELECT currency FROM currency_holds WHERE kind = 'gift' AND external_id = ? ORDER BY id DESC LIMIT 1", (external_id,)
    ).fetchone()
    return None if row is None else str(row[0])


def spread(parts: list[Decimal], total: Decimal) -> list[Decimal]:
    """``total`` shared over ``parts`` in proportion to them, to the cent, the last part taking what rounding
    left (a cart's gifts, a refund split over them)."""
    whole = sum(parts, Decimal(0))
    if not parts:
        return []
    if whole == 0:
        return [Decimal("0.00")] * (len(parts) - 1) + [total]
    shares = [(total * p / whole).quantize(CENT, rounding=ROUND_HALF_UP) for p in parts[:-1]]
    return [*shares, total - sum(shares, Decimal(0))]
