"""Who came: a Givebutter event campaign's orders become the mapped CRM event's invitations (``tickets``,
``crm.invitations``).

- An event campaign's transaction (``transaction.succeeded``, the poll, a backfill; a comped one too, which
  makes no gift) records its order: buyer, campaign, how many tickets its line items hold. Each
  ``ticket.created`` (or ``GET /v1/tickets``) records a ticket: holder, type, check-in. Either queues the order's
  ``invitations`` job, which runs after the gift (the gift and its constituent come first).
- The job waits until the order's tickets are all known (its line items say how many; ``TICKETS_WAIT`` at
  most), and while its campaign is mapped to no CRM event it ends ``skipped`` and is counted as waiting:
  ``synctool mappings events set`` queues them again.
- Check-ins (``checkins.py``): ``synctool poll`` reads ``GET /v1/tickets`` while a mapped event is on, and
  ``synctool events checkins CAMPAIGN`` on demand.
- A piece an invitations job waits for (its order, a ticket, a check-in, a refund) wakes it (``jobs.wake``): a
  queued job is due now, a running one runs again (or is queued due now if it ends waiting), so every order is
  written by the drain its last piece reached, whatever the order of arrival and the threads' timing.
- Refunds: a refund of the whole order (``refunds.py``, ``event_order_refunded``) sets the buyer's invitation to RSVP
  no and removes its guests' invitations. A refund of part of it removes exactly the refunded tickets' guests: a ticket's own word
  first (gone from ``/v1/tickets`` with a 404, or a refund ``status``), then what the refund says (its refunded
  sub-transactions' ticket line items, A3.1: type, price and count; failing those, its amount against the tickets'
  prices). Tickets that cannot be told apart (two guests on one type and price, one of them refunded) hold the
  order's invitations for staff (``review``), naming the choices: ``synctool donations refunded-tickets ORDER
  TICKET`` says which. The buyer's invitation keeps RSVP yes while any of their tickets stands.
"""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from synctool.platform import (
    Event,
    InvalidInput,
    Job,
    NeedsReview,
    NotFound,
    Outcome,
    Person,
    Skip,
    Unit,
    Wait,
    age_s,
    invitations,
    jobs,
    settings,
    store,
    tickets,
)
from synctool.platforms.givebutter.webhook import CAMPAIGNS, Transaction

if TYPE_CHECKING:
    from synctool.platform import Connection, Row

SOURCE = "donations"
LABEL = "Givebutter order"
#: how long an order's invitations wait for tickets its line items announce and no ticket.created brought
TICKETS_WAIT = timedelta(minutes=30)
#: cache kind: order id -> what its refunds say of its tickets (``refunded``) and staff's word on which (``decided``)
REFUNDS = "donations:event_refunds"
#: a ticket ``status`` taken as its refund. Not confirmed: the reference's Ticket (A3.2) has no status field and no
#: recording shows one; a ticket that carries one of these words is taken at it, one that carries none is not judged
REFUNDED_STATUSES = frozenset({"refunded", "revoked", "cancelled", "canceled", "void", "voided"})


def ticket_count(txn: Transaction) -> int:
    """How many tickets a transaction's line items hold (``type`` item, ``subtype`` ticket: A3.1)."""
    count = 0
    for sub in txn.transactions:
        for item in sub.line_items:
            if isinstance(item, dict) and item.get("subtype") == "ticket":
                try:
                    count += int(item.get("quantity") or 1)
                except (TypeError, ValueError):
                    count += 1
    return count


def note_order(job: Job, txn: Transaction, campaign: dict[str, Any], constituent_id: str | None = None) -> bool:
    """An event campaign's transaction: record its order and queue its invitations; False for any other."""
    if (campaign.get("type") or "").lower() != "event" or not txn.campaign_id:
        return False
    tickets.record_order(
        job.conn, SOURCE, str(txn.id), campaign_id=str(txn.campaign_id), campaign=campaign.get("title") or txn.campaign_code,
        buyer_first_name=txn.first_name, buyer_last_name=txn.last_name, buyer_email=txn.email,
        amount=str(txn.amount), tickets_expected=ticket_count(txn), ordered_at=txn.created_at or txn.transacted_at,
        constituent_id=constituent_id, constituent_new=None if constituent_id is None else int(constituent_id in job.created),
    )  # fmt: skip
    queue(job.conn, str(txn.id))
    return True


def queue(conn: Connection, order_id: str) -> str:
    """A piece of the order arrived (committed): its invitations job runs now (``jobs.wake``), one held for staff
    stays held."""
    return jobs.wake(conn, target="crm", source=SOURCE, entity_type="invitations", entity_id=order_id)


def note_ticket(conn: Connection, data: dict[str, Any], *, listed: bool = False) -> bool:
    """A ticket as Givebutter reports it (A3.2); True when an invitation shows something new of it. A ticket
    ``listed`` by ``GET /v1/tickets`` is live (a refund revoked it, if any, no more)."""

    def text(name: str, most: int = 200) -> str | None:
        value = data.get(name)
        return None if value is None or isinstance(value, (dict, list)) else str(value)[:most]

    ticket_id, order_id = str(data["id"]), str(data["transaction_id"])
    status = (text("status") or "").strip().lower()
    refunded: int | None = None
    if status in REFUNDED_STATUSES:
        refunded = 1
    elif listed and ticket_id not in _decided(conn, order_id):  # staff's word on a refund stands over a listing
        refunded = 0
    return tickets.record_ticket(
        conn, SOURCE, ticket_id, order_id, first_name=text("first_name"),
        last_name=text("last_name"), email=text("email"), title=text("title"), price=text("price"),
        checked_in_at=text("checked_in_at", 40), refunded=refunded,
    )  # fmt: skip


def _constituent(job: Job, found: Row) -> tuple[str, bool]:
    """The buyer's constituent, and whether they were one before this order (staff may have invited them): a
    constituent this order's gift made (or this job, for a comped order) was invited by nobody yet."""
    if found["constituent_id"]:
        return str(found["constituent_id"]), not found["constituent_new"]
    person = Person(first_name=found["buyer_first_name"], last_name=found["buyer_last_name"], email=found["buyer_email"])
    cid, created = job.match_or_create(person)
    with job.unit.gather() as conn:
        tickets.record_order(conn, SOURCE, found["order_id"], constituent_id=str(cid), constituent_new=int(created))
    return str(cid), not created


def order_invitations(event: Event, job: Job) -> Outcome:
    order_id = job.row["entity_id"]
    found = tickets.order(job.conn, SOURCE, order_id)
    if found is None:  # its transaction's job records it, then queues this job again
        raise Skip(f"order {order_id}: its transaction is not synced yet")
    mapped = tickets.event_of(job.conn, found["campaign_id"])
    if mapped is None:
        raise Skip(
            f"waits for an event mapping: synctool mappings events set {found['campaign_id']} --event N"
            " (synctool crm events lists the CRM's events)"
        )
    held = tickets.tickets_of(job.conn, SOURCE, [order_id])
    expected = found["tickets_expected"] or 0
    if len(held) < expected and not found["refunded"] and (age_s(found["updated_at"]) or 0) < TICKETS_WAIT.total_seconds():
        raise Wait(f"order {order_id}: {len(held)} of its {expected} tickets known; waiting for the rest", retry_after=60)
    settle_refunds(job.unit, found)  # which tickets a refund of part of the order took back, or a hold for staff
    cid, known_before = _constituent(job, found)
    campaign = settings.cache_get(job.conn, CAMPAIGNS, found["campaign_id"]) or {}
    zones = ((campaign.get("event") or {}).get("timezone"), campaign.get("timezone"), job.config.timezone)
    event_id = int(mapped["event_id"])

    def build() -> invitations.Invited:
        wanted = tickets.invited(job.conn, SOURCE, LABEL, event_id, cid, timezones=zones)
        wanted.known_before = known_before
        return wanted

    writer = invitations.Writer(job.crm, job.unit, job_id=job.id, confirm_after_s=job.config.crm.confirm_after_s)
    said = writer.write(event_id, cid, build)
    return Outcome("succeeded", f"event {mapped['event_id']}: {said}", crm_constituent_id=cid)


def _money(value: object) -> str | None:
    """A price as one text whatever its form (60, "60.00", 60.0 -> "60")."""
    try:
        return format(Decimal(str(value)).normalize(), "f")
    except (InvalidOperation, ValueError):
        return None


def _kind(title: object, price: object) -> str:
    return f"{title or 'ticket'} at {_money(price) or '?'}"


def refund_evidence(txn: dict[str, Any] | None) -> dict[str, Any]:
    """What a transaction's parts say of its tickets (A3.1): per ticket type and price ("VIP at 150"), how many its
    refunded parts' ticket lines hold (``refunded``), and what one ticket of each cost after discounts (``paid``: a
    line's total over its quantity). A line names its type in ``description``, with " (CODE - x% OFF)" after it when
    discounted (recorded for a comped order), so the type is matched by that prefix against the tickets' titles."""
    refunded: Counter[str] = Counter()
    paid: dict[str, str] = {}
    for part in (txn or {}).get("transactions") or []:
        if not isinstance(part, dict):
            continue
        for line in part.get("line_items") or []:
            if not isinstance(line, dict) or line.get("subtype") != "ticket":
                continue
            described = str(line.get("description") or "")
            title = described.split(" (", 1)[0] if described.endswith("OFF)") else described
            try:
                quantity = max(int(line.get("quantity") or 1), 1)
                each = Decimal(str(line.get("total"))) / quantity
            except (InvalidOperation, TypeError, ValueError):
                continue
            key = _kind(title, line.get("price"))
            paid[key] = str(each.quantize(Decimal("0.01")))
            if part.get("refunded"):
                refunded[key] += quantity
    return {"refunded": dict(refunded), "paid": paid}


def _decided(conn: Connection, order_id: str) -> set[str]:
    """The tickets of an order taken as refunded by what its refunds said, or by staff's word."""
    return set((settings.cache_get(conn, REFUNDS, order_id) or {}).get("decided") or [])


def settle_refunds(work: Unit, found: Row) -> None:
    """Which tickets a refund of part of an order took back. Per ticket type and price, the refund says how many
    (its refunded lines; else its amount, when exactly one set of tickets costs it); the tickets refunded already
    by their own word count first, and when the rest of that type is exactly as many as are left to find, they are
    the ones. Otherwise they cannot be told apart: the order is held for staff (``NeedsReview``), naming the
    choices; no guest is removed by guess. The tickets taken are gathered in the job's unit: they stand whether or not
    the order is then held."""
    conn = work.conn
    order_id = found["order_id"]
    said = settings.cache_get(conn, REFUNDS, order_id)
    if not said or found["refunded"]:
        return
    groups: dict[str, list[Row]] = {}
    for ticket in tickets.tickets_of(conn, SOURCE, [order_id]):
        groups.setdefault(_kind(ticket["title"], ticket["price"]), []).append(ticket)
    counts = said.get("refunded") or _by_amount(order_id, groups, said)
    taken: list[str] = []
    choices: list[str] = []
    for kind, count in sorted(counts.items()):
        group = groups.get(kind, [])
        live = [t for t in group if not t["refunded"]]
        left = int(count) - (len(group) - len(live))
        if left <= 0:
            continue
        if left >= len(live):
            taken += [t["ticket_id"] for t in live]
            continue
        names = " or ".join(f"{_holder(t)} (ticket {t['ticket_id']})" for t in live)
        choices.append(f"{left} of the {len(live)} {kind} ticket(s) still held: {names}")
    if taken:
        with work.gather():
            tickets.refund_tickets(conn, SOURCE, order_id, taken)
            settings.cache_put(conn, REFUNDS, order_id, {**said, "decided": sorted(_decided(conn, order_id) | set(taken))})
    if choices:
        raise NeedsReview(
            f"order {order_id} was refunded in part and nothing Givebutter sent says which tickets: "
            + "; ".join(choices)
            + f". Say which: synctool donations refunded-tickets {order_id} TICKET_ID..."
        )


def _holder(ticket: Row) -> str:
    return " ".join(p for p in (ticket["first_name"], ticket["last_name"]) if p) or "(no name)"


def _by_amount(order_id: str, groups: dict[str, list[Row]], said: dict[str, Any]) -> dict[str, int]:
    """How many tickets of each type and price a refund's amount (the order's refunded total) takes back, when exactly
    one such set costs it (each ticket at what it was paid: its line's total over its quantity, else its price);
    none when no set does (a refund of something else: a fee, a donation); held when several do."""
    try:
        amount = Decimal(str(said.get("amount")))
    except (InvalidOperation, ValueError):
        return {}
    paid = said.get("paid") or {}
    kinds = sorted(groups)
    prices = []
    for kind in kinds:
        try:
            prices.append(Decimal(str(paid.get(kind) or groups[kind][0]["price"])))
        except (InvalidOperation, ValueError):
            return {}
    ranges = [range(sum(1 for t in groups[k] if t["refunded"]), len(groups[k]) + 1) for k in kinds]
    if amount <= 0 or not kinds or _size(ranges) > 100_000:
        return {}
    fits = [n for n in itertools.product(*ranges) if sum(c * p for c, p in zip(n, prices, strict=True)) == amount]
    if len(fits) > 1:
        options = " or ".join(", ".join(f"{c} {k}" for c, k in zip(n, kinds, strict=True) if c) for n in fits)
        raise NeedsReview(
            f"order {order_id} was refunded {amount} in part, which tickets of more than one kind add up to: {options}."
            f" Say which: synctool donations refunded-tickets {order_id} TICKET_ID..."
        )
    return dict(zip(kinds, fits[0], strict=True)) if fits else {}


def _size(ranges: list[range]) -> int:
    size = 1
    for r in ranges:
        size *= max(len(r), 1)
    return size


def decide(conn: Connection, order_id: str, ticket_ids: list[str]) -> dict[str, Any]:
    """Staff's word on which tickets a refund of part of an order took back: they end, and the order's invitations
    held for it run again (due now)."""
    found = tickets.order(conn, SOURCE, order_id)
    if found is None:
        raise NotFound(f"no event order {order_id} is known", "synctool events show CAMPAIGN lists its orders")
    held = {t["ticket_id"]: t for t in tickets.tickets_of(conn, SOURCE, [order_id])}
    unknown = [t for t in ticket_ids if t not in held]
    if unknown or not ticket_ids:
        raise InvalidInput(
            f"not tickets of order {order_id}: {', '.join(unknown) or '(none given)'}",
            f"its tickets: {', '.join(sorted(held)) or '(none known)'}",
        )
    said = settings.cache_get(conn, REFUNDS, order_id) or {}
    with store.atomic(conn):
        ended = tickets.refund_tickets(conn, SOURCE, order_id, list(ticket_ids))
        settings.cache_put(conn, REFUNDS, order_id, {**said, "decided": sorted(_decided(conn, order_id) | set(ticket_ids))})
        released = jobs.release_held_of(conn, target="crm", entity_type="invitations", entity_id=order_id)
        if not released:
            queue(conn, order_id)
    return {"order_id": order_id, "refunded": sorted(ticket_ids), "tickets_ended": ended, "released": released}
