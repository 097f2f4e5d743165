"""A local stand-in for Givebutter's REST API v1: transactions (with the ``createdAfter``,
``transactedAfter`` and ``transactedBefore`` filters),
campaigns and their members (peer-to-peer fundraisers), tickets, payouts and webhooks (the signing secret returned as ``signature``), Laravel-style paging (``per_page`` at most 100), ``{"message"}`` errors, Bearer
auth, and an optional rate limit answered with 429 and ``Retry-After``.

Events: ``add_event_campaign`` (a campaign of type "event" with its ``event`` block), ``sell_tickets`` (an order:
its transaction and a ticket per holder), ``check_in``, and refunds of a whole order (``refund_transaction``,
optionally revoking its tickets) or of some of its tickets (``refund_tickets``). Shapes follow the recorded bodies
(tests/data/real_bodies/givebutter): ``givebutter_event_campaign`` and ``givebutter_ticket_order`` below build
them."""

from __future__ import annotations

import hashlib
import json
import random
import secrets
import string
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

#: the live API's webhook event enum
WEBHOOK_EVENTS = {
    "campaign.created", "campaign.updated", "ticket.created", "transaction.succeeded", "contact.created",
    "plan.canceled", "plan.created", "plan.failed", "plan.paused", "plan.resumed", "plan.updated", "refund.created",
}  # fmt: skip


class FakeGivebutter:
    def __init__(self, api_key: str = "gb-api-key"):
        self.api_key = api_key
        self.transactions: dict[str, dict] = {}
        self.campaigns: dict[int, dict] = {}
        #: peer-to-peer fundraisers (``CampaignMemberResource``), by (campaign id, member id)
        self.members: dict[tuple[int, int], dict] = {}
        self.tickets: dict[str, dict] = {}
        #: tickets a refund revoked ("returned to the ticket pool"): no longer listed, kept here for the tests
        self.revoked_tickets: dict[str, dict] = {}
        #: refunds made here, newest last: ``{transaction_id, ticket_ids (None: the whole order), amount, at}``
        self.refunds: list[dict] = []
        self._sold: dict[int, int] = {}  # tickets sold per campaign: the next ``id_suffix`` count
        self._contacts: dict[str, int] = {}  # buyer e-mail -> contact id
        self._rng = random.Random(f"givebutter:{api_key}")  # the same ids run after run
        #: bank deposits: ``{id, amount, fee, status, paid_at, created_at}``; transactions name theirs by ``payout_id``
        self.payouts: dict[str, dict] = {}
        #: registered webhooks (``WebhookResource``: id, name, events, enabled, url, signature, ...)
        self.webhooks: dict[str, dict] = {}
        #: each webhook's delivery history (``WebhookActivityResource``), newest last
        self.activities: dict[str, list[dict]] = {}
        self.requests: list[dict] = []
        self.throttle_next = 0  # answer this many requests with 429

    def record_delivery(self, event: str, data: dict, *, failed: bool, at: str | None = None) -> dict:
        """Record an attempt to deliver ``event`` to every webhook that takes it, as Givebutter's activities
        list shows it: the payload it sent, and whether the receiver took it. ``failed`` says the receiver
        never got it (the tests' "the delivery failed"); the status words are not enumerated by the API
        description, so "failed" and "success" are this fake's."""
        at = at or datetime.now().astimezone().isoformat(timespec="seconds")
        envelope = {"id": f"evt_{uuid.uuid4().hex[:16]}", "event": event, "data": data}
        made = {}
        for hook in self.webhooks.values():
            if event not in hook["events"]:
                continue
            made = {
                "id": str(uuid.uuid4()), "webhook_id": hook["id"], "status": "failed" if failed else "success",
                "status_description": "Connection timed out" if failed else "200 OK", "event": event, "url": hook["url"],
                "payload": envelope, "response": None if failed else [], "created_at": at, "updated_at": at,
            }  # fmt: skip
            self.activities.setdefault(hook["id"], []).append(made)
        return made

    def add_member(self, campaign_id: int, member: dict) -> dict:
        """A fundraiser on a campaign, with every field the description requires."""
        now = datetime.now().astimezone().isoformat(timespec="seconds")
        first, last = member.get("first_name", ""), member.get("last_name", "")
        full = {
            "display_name": f"{first} {last}".strip(), "email": "", "phone": "", "picture": "", "raised": 0, "goal": 0,
            "donors": 0, "items": 0, "url": f"https://givebutter.com/c/{campaign_id}/{member['id']}", "created_at": now,
            "updated_at": now, "first_name": first, "last_name": last, **member, "id": str(member["id"]),
        }  # fmt: skip
        self.members[(int(campaign_id), int(member["id"]))] = full
        return full

    def refund_transaction(self, txn_id: str, *, revoke_tickets: bool = False, at: datetime | str | None = None) -> dict:
        """Refund a transaction's parts as Givebutter records it: each part ``refunded`` with ``refunded_at``, and
        the transaction's ``updated_at`` moved (which ``updatedAfter`` filters on). No webhook is sent.

        ``revoke_tickets``: Givebutter's refund dialog has an "Item or ticket return" choice that revokes the
        order's tickets and returns them to the ticket pool (help.givebutter.com, "How to issue a refund"). How a
        revoked ticket shows in the API is not documented or recorded; here it is no longer listed by
        ``/v1/tickets`` (nor found by ``/v1/tickets/{id}``) and is kept in ``revoked_tickets``."""
        txn = self.transactions[txn_id]
        now = givebutter_moment(at) if at else datetime.now().astimezone().isoformat(timespec="seconds")
        txn["transactions"] = [{**t, "refunded": True, "refunded_at": now} for t in txn.get("transactions") or []]
        txn["updated_at"] = now  # the resource itself has no refunded flag (its description): its parts do
        if revoke_tickets:
            for ticket in self.tickets_of(txn_id):
                self.revoked_tickets[ticket["id"]] = self.tickets.pop(ticket["id"])
        self.refunds.append({"transaction_id": txn_id, "ticket_ids": None, "amount": txn.get("amount"), "at": now})
        return txn

    # -- events: an event campaign, its ticket orders, check-ins and refunds ------------------------------------------

    def add_event_campaign(
        self,
        code: str,
        title: str,
        start_at: datetime | str,
        end_at: datetime | str,
        timezone: str = "America/Los_Angeles",
        *,
        campaign_id: int | None = None,
        **fields: Any,
    ) -> dict:
        """A campaign of ``type`` "event" with its ``event`` block, served by ``/v1/campaigns`` and
        ``/v1/campaigns/{id}``, shaped as the recorded one (``givebutter_event_campaign``): the event's
        ``start_at`` / ``end_at`` written as Givebutter writes them, ``YYYY-MM-DD HH:MM:SS`` in UTC (an aware
        datetime or an ISO string with an offset is converted; a naive one is taken as UTC), its zone in
        ``event.timezone``. ``fields`` override any key (``campaign_id`` picks the id)."""
        # ids like the recorded ones (172264, 172267, 173909, 201792), clear of them
        campaign_id = campaign_id or max([300000, *self.campaigns]) + 1
        fields.setdefault("created_at", givebutter_moment())
        campaign = givebutter_event_campaign(code, title, start_at, end_at, timezone, campaign_id=campaign_id, **fields)
        self.campaigns[campaign_id] = campaign
        return campaign

    def sell_tickets(
        self,
        campaign: dict | int | str,
        buyer: dict,
        holders: list[dict] | None = None,
        *,
        ticket_type: str = "General Admission",
        price: float = 25,
        discount: float = 0,
        discount_code: str | None = None,
        method: str = "card",
        fee: float | None = None,
        fee_covered: bool = True,
        at: datetime | str | None = None,
        fair_market_value: float | None = None,
        retail_price: float | None = None,
    ) -> tuple[dict, list[dict]]:
        """One order on an event campaign: the transaction (one part, a ``item``/``ticket`` line item per ticket
        type, the covered "Processing fee" line) and a ticket per holder (``holders``: first_name, last_name,
        email, phone, and ``title`` / ``price`` for another type; None: the buyer's one ticket), each naming the
        transaction, ``checked_in_at`` null, ids shaped as recorded ("81347746A0020": 8 digits, then the campaign's
        count). ``discount`` is a percentage: 100 comps the order (amount 0, method "none", no fee). Both are
        stored and served; no webhook is sent (``samples.givebutter`` makes the deliveries). See
        ``givebutter_ticket_order`` for what is recorded and what is this fake's choice."""
        found = campaign if isinstance(campaign, dict) else self.campaigns[int(campaign)]
        campaign_id = int(found["id"])
        first = self._sold.get(campaign_id, 0) + 1
        count = len(holders) if holders is not None else 1
        self._sold[campaign_id] = first + count - 1
        email = str(buyer.get("email") or "").lower()
        contact = self._contacts.setdefault(email, 8800000 + len(self._contacts) + 1) if email else 8800000
        txn, tickets = givebutter_ticket_order(
            found, buyer, holders, transaction_id=self._id(16), part_id=self._part_id(), contact_id=contact,
            first_number=first, ticket_type=ticket_type, price=price, discount=discount, discount_code=discount_code,
            method=method, fee=fee, fee_covered=fee_covered, at=givebutter_moment(at),
            fair_market_value=fair_market_value, retail_price=retail_price,
        )  # fmt: skip
        self.transactions[txn["id"]] = txn
        for ticket in tickets:
            self.tickets[ticket["id"]] = ticket
        return txn, tickets

    def tickets_of(self, txn_id: str) -> list[dict]:
        """The listed (not revoked) tickets of a transaction."""
        return [t for t in self.tickets.values() if t.get("transaction_id") == txn_id]

    def check_in(self, ticket_id: str, at: datetime | str | None = None) -> dict:
        """A ticket scanned at the door: ``checked_in_at`` and ``updated_at`` set (ISO 8601 in UTC like
        ``created_at``: no recording shows a check-in, so the format is this fake's choice; pass a string to
        stage another). A revoked ticket cannot be checked in."""
        if ticket_id in self.revoked_tickets:
            raise ValueError(f"ticket {ticket_id} was revoked by a refund")
        ticket = self.tickets[ticket_id]
        when = givebutter_moment(at)
        ticket.update(checked_in_at=when, updated_at=when)
        return ticket

    def refund_tickets(
        self,
        txn_id: str,
        ticket_ids: list[str],
        *,
        amount: float | None = None,
        revoke: bool = True,
        at: datetime | str | None = None,
        shape: str = "transaction",
    ) -> dict:
        """Refund some of an order's tickets as the reference describes a refund (A3.1): a sub-transaction
        (``transactions[]``) ``refunded`` with ``refunded_at``, whose ``line_items`` name the refunded tickets' type
        (``description``), count (``quantity``), ``price`` and ``total``. Every ticket of the order: its parts refunded
        whole (``refund_transaction``). Some of them: those tickets' lines leave the order's part for a new refunded
        part (the order's part keeps the rest, and the covered fee), and ``amount`` (by default what those tickets
        cost after the order's discount) moves with them.

        Not confirmed by any recording or document, and this fake's choice: that a partial refund splits a part so
        (the reference names a part's refund fields and its line items, no recording shows a partial one), that the
        refunded part carries no fee, and its id (ten digits, as a part's). ``refund.created`` data: Givebutter
        publishes no schema; ``shape`` "transaction" (the default) returns the refunded transaction (what the
        reference describes), "object" a refund object ({id, transaction_id, amount, reason, created_at}, which
        names no ticket). With ``revoke`` (the refund dialog's "Item or ticket return") the tickets leave
        ``/v1/tickets`` (``revoked_tickets``); how a revoked ticket shows in the API is not documented either."""
        txn = self.transactions[txn_id]
        held = {t["id"]: t for t in self.tickets_of(txn_id)}
        missing = [i for i in ticket_ids if i not in held]
        if missing:
            raise KeyError(f"not listed tickets of {txn_id}: {missing}")
        paid = amount if amount is not None else round(sum(_paid(txn, held[i]) for i in ticket_ids), 2)
        when = givebutter_moment(at)
        if set(ticket_ids) == set(held):
            self.refund_transaction(txn_id, revoke_tickets=revoke, at=when)
            self.refunds[-1].update(ticket_ids=list(ticket_ids), amount=paid)
        else:
            self._split_refunded(txn, [held[i] for i in ticket_ids], paid, when)
            txn["updated_at"] = when
            if revoke:
                for ticket_id in ticket_ids:
                    self.revoked_tickets[ticket_id] = self.tickets.pop(ticket_id)
            self.refunds.append({"transaction_id": txn_id, "ticket_ids": list(ticket_ids), "amount": paid, "at": when})
        if shape == "transaction":
            return json.loads(json.dumps(txn))
        return {
            "id": f"rf_{txn_id}_{len(self.refunds)}",
            "transaction_id": txn_id,
            "amount": paid,
            "reason": "item_return",
            "created_at": when,
        }

    def _split_refunded(self, txn: dict, refunded: list[dict], paid: float, when: str) -> None:
        """Move ``refunded`` tickets' line items from the order's unrefunded part to a new refunded part of ``paid``."""
        part = next(p for p in txn["transactions"] if not p.get("refunded"))
        counts: dict[tuple[str, float], int] = {}
        for ticket in refunded:
            kind = (str(ticket.get("title")), float(ticket.get("price") or 0))
            counts[kind] = counts.get(kind, 0) + 1
        kept, moved = [], []
        for line in part["line_items"]:
            described, quantity = str(line.get("description") or ""), int(line.get("quantity") or 1)
            key = next(
                (k for k, n in counts.items() if n and float(line.get("price") or 0) == k[1]
                 and (described == k[0] or described.startswith(f"{k[0]} ("))),
                None,
            ) if line.get("subtype") == "ticket" else None  # fmt: skip
            if key is None:
                kept.append(line)
                continue
            take = min(counts[key], quantity)
            counts[key] -= take

            def share(name: str, n: int, line: dict = line, quantity: int = quantity) -> float | int:
                return _num(round(float(line.get(name) or 0) * n / quantity, 2))

            moved.append({**line, "quantity": take, "discount": share("discount", take), "total": share("total", take)})
            if take < quantity:
                left = quantity - take
                kept.append({**line, "quantity": left, "discount": share("discount", left), "total": share("total", left)})
        part["line_items"] = kept
        rest = round(float(part["amount"]) - paid, 2)
        part.update(amount=_num(rest), donated=_num(rest), payout=_num(round(float(part["payout"]) - paid, 2)))
        txn["transactions"].append({
            **part, "id": self._part_id(), "amount": _num(paid), "fee": 0, "fee_covered": 0, "donated": _num(paid),
            "payout": _num(paid), "refunded": True, "refunded_at": when, "line_items": moved,
        })  # fmt: skip

    def _id(self, n: int) -> str:
        """A Givebutter-looking id ("hD0G2jBhuVpUVJwg": letters and digits)."""
        while True:
            made = "".join(self._rng.choices(string.ascii_letters + string.digits, k=n))
            if made not in self.transactions:
                return made

    def _part_id(self) -> str:
        """A transaction part's id: ten digits as a string ("5007437922")."""
        return str(self._rng.randrange(10**9, 10**10))

    def add_transaction(self, txn: dict) -> dict:
        self.transactions[txn["id"]] = txn
        return txn


# -- Givebutter events: an event campaign, its ticket orders and tickets ------------------------------------------
# Shapes as Givebutter really sent them (tests/data/real_bodies/givebutter: MissionBit's recorded campaign, ticket
# and transaction listings) and as ../shared/reference/givebutter-square.md A3.1-A3.3 describe them. What no
# recording shows is said where it is chosen.


def givebutter_time(value: datetime | str) -> str:
    """A moment as Givebutter writes an event's ``start_at`` / ``end_at``: ``YYYY-MM-DD HH:MM:SS`` in UTC with no
    offset: the recorded event campaign's ``01:30:00`` is 17:30 the day before in its America/Los_Angeles, and
    MissionBit reads Givebutter's strings of that form as UTC (a plan's ``start_at`` matches its charge's
    ``transacted_at``); no document says so. An aware datetime or an ISO string with an offset is converted to
    UTC; a naive one is taken as UTC already (as Givebutter writes it, and as synctool reads it)."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def givebutter_moment(value: datetime | str | None = None) -> str:
    """A moment as Givebutter writes a resource's ``created_at`` (ISO 8601 in UTC, ``+00:00``, to the second);
    now when None. A string is taken as given."""
    if isinstance(value, str):
        return value
    moment = value or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def givebutter_event_campaign(
    code: str = "GALA26",
    title: str = "Spring Gala",
    start_at: datetime | str = "2026-05-17 01:00:00",
    end_at: datetime | str = "2026-05-17 05:00:00",
    timezone: str = "America/Los_Angeles",
    *,
    campaign_id: int = 172300,
    location_name: str | None = "Example Hall",
    address_formatted: str | None = "1 Example Street, San Francisco, CA 94105, USA",
    private: bool = False,
    tickets_required: bool = True,
    created_at: datetime | str = "2026-03-01T17:00:00+00:00",
    **fields: Any,
) -> dict:
    """A campaign of ``type`` "event" with its ``event`` block, shaped as the recorded one
    (real_bodies/givebutter/api-campaign-event-demo-day.json; reference A3.3), as ``/v1/campaigns`` and
    ``campaign.created`` / ``campaign.updated`` carry it. As recorded it has no top-level ``timezone``,
    ``event_id`` or ``settings`` (the reference and the API description list them: pass them in ``fields``), and
    the event block no ``created_at`` / ``updated_at``. The campaign's own ``end_at`` (recorded: four days before
    its event; what it governs is not documented) is here the event's end. ``fields`` override any key."""
    made = givebutter_moment(created_at)
    slug = code.lower()
    return {
        "id": campaign_id, "code": code, "account_id": "GbSampleAccount1", "type": "event", "title": title,
        "subtitle": None, "description": f"<p>{title}</p>", "slug": slug, "url": f"https://givebutter.com/{slug}",
        "goal": None, "raised": 0, "donors": 0, "currency": "USD",
        "cover": {"url": "https://givebutter.s3.amazonaws.com/media/sample-cover.jpg", "type": "image", "source": "upload"},
        "status": "active", "end_at": givebutter_moment(datetime.fromisoformat(givebutter_time(end_at)).replace(tzinfo=UTC)),
        "event": {
            "title": title, "type": "physical", "location_name": location_name, "address_formatted": address_formatted,
            "google_place_id": None, "start_at": givebutter_time(start_at), "end_at": givebutter_time(end_at),
            "timezone": timezone, "details": None, "private": private, "tickets_required": tickets_required,
            "livestream": None, "livestream_start_at": None, "livestream_end_at": None,
        },
        "created_at": made, "updated_at": made, **fields,
    }  # fmt: skip


def _digits(seed: str, n: int) -> str:
    """``n`` digits drawn from ``seed``: the same ids for the same order, run after run."""
    digits = str(int(hashlib.sha256(seed.encode()).hexdigest(), 16) % 10**n).rjust(n, "0")
    return ("7" + digits[1:]) if digits.startswith("0") else digits


def givebutter_pdf(ticket_id: str, signed_at: datetime | str | None = None) -> str:
    """A ticket's ``pdf``: a pre-signed S3 link that lasts 24 h (``X-Amz-Expires=86400``), shaped as recorded,
    credential and signature REDACTED as in the corpus."""
    when = datetime.fromisoformat(givebutter_moment(signed_at)).strftime("%Y%m%dT%H%M%SZ")
    name = hashlib.md5(ticket_id.encode()).hexdigest()
    return (
        f"https://givebutter.s3.amazonaws.com/documents/{name}.pdf?X-Amz-Content-Sha256=UNSIGNED-PAYLOAD"
        f"&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Date={when}&X-Amz-SignedHeaders=host"
        "&X-Amz-Expires=86400&X-Amz-Signature=REDACTED"
    )


def givebutter_ticket(
    transaction_id: str = "QiN7blzUhiwXBVBr",
    *,
    number: int = 1,
    ticket_id: str | None = None,
    first_name: str = "Ada",
    last_name: str = "Lovelace",
    email: str = "Ada.Lovelace@Example.org",
    phone: str | None = None,
    title: str = "General Admission",
    price: float = 25,
    checked_in_at: datetime | str | None = None,
    created_at: datetime | str = "2024-02-03T20:49:25+00:00",
    retail_price: float | None = None,
    event_id: str | None = None,
    envelope: bool = True,
) -> dict:
    """``ticket.created`` as Givebutter sends it: ``{event, id, data}`` (A2) whose ``data`` is the Ticket (A3.2)
    with the recorded keys in the recorded order (real_bodies/givebutter/api-ticket-*.json), then ``updated_at``
    and ``retail_price``, which the reference lists and the 2023 recordings lack. ``envelope=False``: the
    ticket alone (a ``/v1/tickets`` item).

    The id is 8 digits and ``id_suffix`` ("81347746A0020": "A0020"); ``number`` is the suffix's count (the
    recorded A0019 and A0020 were bought 43 s apart in two orders: a count wider than one order; the fake counts
    per campaign). A ``ticket_id`` given keeps its last five characters as its suffix. ``price`` is the ticket
    type's price; what a comped ticket's ``price`` says is not recorded. ``retail_price`` is a decimal string or
    null (the API description: string|null). ``checked_in_at``: no recording has one set; ISO 8601 like
    ``created_at`` is this sample's choice."""
    suffix = f"A{number:04d}"
    ticket_id = ticket_id or f"{_digits(f'{transaction_id}:{number}', 8)}{suffix}"
    made = givebutter_moment(created_at)
    data = {
        "id": ticket_id, "id_suffix": ticket_id[-len(suffix):],
        "transaction_id": transaction_id, "name": f"{first_name} {last_name}".strip(), "first_name": first_name,
        "last_name": last_name, "email": email, "phone": phone, "title": title, "description": None, "price": price,
        "pdf": givebutter_pdf(ticket_id, made), "checked_in_at": None if checked_in_at is None else givebutter_moment(checked_in_at),
        "created_at": made, "updated_at": made if checked_in_at is None else givebutter_moment(checked_in_at),
        "retail_price": None if retail_price is None else f"{retail_price:.2f}",
    }  # fmt: skip
    if not envelope:
        return data
    return {"event": "ticket.created", "id": event_id or str(uuid.uuid4()), "data": data}


#: the processing fee a donor covers, as the recordings have it (card and PayPal alike): the amount grossed up
#: for 2.9% + 0.30 (50 -> 1.80, 10 -> 0.61, 1 -> 0.34); a card-terminal payment differs (58 -> 2.62)
def givebutter_fee(amount: float) -> float:
    return round((amount + 0.30) / (1 - 0.029) - amount, 2) if amount else 0.0


def givebutter_ticket_order(
    campaign: dict,
    buyer: dict,
    holders: list[dict] | None = None,
    *,
    transaction_id: str = "GalaOrder0000001",
    part_id: str = "5007437900",
    contact_id: int = 8800001,
    first_number: int = 1,
    ticket_type: str = "General Admission",
    price: float = 25,
    discount: float = 0,
    discount_code: str | None = None,
    method: str = "card",
    fee: float | None = None,
    fee_covered: bool = True,
    at: datetime | str = "2026-04-01T18:00:00+00:00",
    fair_market_value: float | None = None,
    retail_price: float | None = None,
) -> tuple[dict, list[dict]]:
    """One ticket order on an event campaign, as Givebutter records it: the transaction (A3.1; the recorded
    two-ticket purchase and comped tickets) and one ticket per holder (A3.2), each naming the transaction.

    ``buyer``: first_name, last_name, email, phone. ``holders``: one dict per ticket (first_name, last_name, email,
    phone, and ``title`` / ``price`` for another ticket type); None: one ticket, the buyer's. The transaction has
    one part whose line items are one ``item``/``ticket`` line per ticket type (quantity, price, discount, total),
    and, when the donor covers it, the ``donation``/``fee`` "Processing fee" line; ``amount`` leaves the covered
    fee out, ``donated`` and ``payout`` equal it (as recorded). ``discount`` is a percentage: 100 is a comped order
    (recorded: amount 0, method "none", fee 0, no fee line, the line's description "<type> (<CODE> - 100.00% OFF)").
    Not recorded, and this sample's choice: a discount on a line of several tickets (here the line's whole
    discount), an uncovered fee (``fee_covered`` 0, ``payout`` the amount less the fee), ``fair_market_value``
    (the whole order's: sets ``fair_market_value_amount`` and ``tax_deductible_amount`` as decimal strings, which
    the 2023 recordings lack and the description types string|null), ``updated_at`` (the description lists it; no
    recording has it)."""
    people = holders if holders is not None else [buyer]
    groups: dict[tuple[str, float], int] = {}
    for holder in people:
        key = (str(holder.get("title") or ticket_type), float(holder.get("price", price)))
        groups[key] = groups.get(key, 0) + 1
    lines: list[dict[str, Any]] = []
    for (kind, each), quantity in groups.items():
        off = round(each * quantity * discount / 100, 2)
        described = f"{kind} ({discount_code} - {discount:.2f}% OFF)" if discount and discount_code else kind
        lines.append({"type": "item", "subtype": "ticket", "description": described, "quantity": quantity,
                      "price": _num(each), "discount": _num(off), "total": _num(round(each * quantity - off, 2))})  # fmt: skip
    amount = round(sum(line["total"] for line in lines), 2)
    charged = givebutter_fee(amount) if fee is None else fee
    if not amount:
        method, charged = "none", 0
    covered = charged if fee_covered else 0
    if covered:
        lines.append({"type": "donation", "subtype": "fee", "description": "Processing fee", "quantity": 1,
                      "price": _num(covered), "discount": 0, "total": _num(covered)})  # fmt: skip
    payout = _num(amount if fee_covered else round(amount - charged, 2))
    when = givebutter_moment(at)
    captured = givebutter_moment(datetime.fromisoformat(when) + timedelta(seconds=2))
    name = f"{buyer.get('first_name', '')} {buyer.get('last_name', '')}".strip()
    txn = {
        "id": transaction_id, "contact_id": contact_id, "number": part_id, "campaign_id": campaign["id"],
        "campaign_code": campaign.get("code"), "plan_id": None, "team_id": None, "member_id": None, "fund_id": None,
        "fund_code": None, "first_name": buyer.get("first_name"), "last_name": buyer.get("last_name"), "company": None,
        "email": buyer.get("email"), "phone": buyer.get("phone"),
        "address": {"address_1": None, "address_2": None, "city": None, "state": None, "country": None, "zipcode": None},
        "status": "succeeded", "payment_method": method, "method": method, "amount": _num(amount), "fee": _num(charged),
        "fee_covered": _num(covered), "donated": _num(amount), "payout": payout, "currency": "USD",
        "transacted_at": when, "created_at": when, "updated_at": when,
        "giving_space": {"id": int(_digits(transaction_id, 7)), "name": name or "Anonymous", "amount": _num(amount), "message": None},
        "dedication": None,
        "transactions": [{
            "id": part_id, "plan_id": None, "amount": _num(amount), "fee": _num(charged), "fee_covered": _num(covered),
            "donated": _num(amount), "payout": payout, "captured": True, "captured_at": captured, "refunded": False,
            "refunded_at": None, "line_items": lines,
        }],
        "custom_fields": [], "utm_parameters": None, "external_id": None, "communication_opt_in": False,
        "session_id": str(uuid.UUID(hashlib.md5(transaction_id.encode()).hexdigest())),
    }  # fmt: skip
    if fair_market_value is not None:
        txn["fair_market_value_amount"] = f"{fair_market_value:.2f}"
        txn["tax_deductible_amount"] = f"{max(amount - fair_market_value, 0):.2f}"
    tickets = [
        givebutter_ticket(
            transaction_id, number=first_number + n, first_name=str(h.get("first_name") or ""),
            last_name=str(h.get("last_name") or ""), email=str(h.get("email") or ""), phone=h.get("phone"),
            title=str(h.get("title") or ticket_type), price=_num(float(h.get("price", price))), created_at=when,
            retail_price=retail_price, envelope=False,
        )
        for n, h in enumerate(people)
    ]  # fmt: skip
    return txn, tickets


def _num(value: float) -> float | int:
    """Money as Givebutter writes it in JSON: 25 and 0, 1.8 and 0.61 (whole dollars carry no decimals)."""
    return int(value) if float(value).is_integer() else round(float(value), 2)


def _paid(txn: dict, ticket: dict) -> float:
    """What one ticket cost: its type's line (``total / quantity``), else its price."""
    for part in txn.get("transactions") or []:
        for line in part.get("line_items") or []:
            described, kind = str(line.get("description") or ""), str(ticket.get("title"))
            if line.get("subtype") == "ticket" and (described == kind or described.startswith(f"{kind} (")):
                return float(line.get("total") or 0) / max(int(line.get("quantity") or 1), 1)
    return float(ticket.get("price") or 0)


def _payout(stored: dict) -> dict:
    """A payout as Givebutter's PayoutResource describes it, from what a test or the demo stored."""
    amount = stored.get("amount") or 0
    when = stored.get("paid_at") or stored.get("created_at")
    return {
        "campaign_id": None, "method": "bank", "status": "paid", "fee": 0, "tip": 0, "payout": amount, "currency": "USD",
        "address": None, "memo": None, "expected_at": when, "paid_at": when, "created_at": when, "updated_at": when, **stored,
    }  # fmt: skip


def _page(items: list, request: Request, *, unfiltered: bool = False) -> JSONResponse:
    """One page of ``items``, as Laravel's paginator answers (reference A5). ``meta.links`` holds the previous and
    next entries around the page numbers, as the recorded pages do; ``meta.unfiltered_total`` only where the
    recorded pages and the description have it (the transactions and campaigns lists, ``unfiltered``)."""
    try:
        per_page = int(request.query_params.get("per_page", 20))
        page = int(request.query_params.get("page", 1))
    except ValueError:
        return JSONResponse({"message": "The per page must be an integer."}, status_code=422)
    if per_page > 100 or per_page < 1:
        return JSONResponse(
            {
                "message": "The per page field must not be greater than 100.",
                "errors": {"per_page": ["The per page field must not be greater than 100."]},
            },
            status_code=422,
        )
    last = max(1, (len(items) + per_page - 1) // per_page)
    chunk = items[(page - 1) * per_page : page * per_page]
    base = str(request.url).split("?")[0]
    return JSONResponse(
        {
            "data": chunk,
            "links": {
                "first": f"{base}?page=1",
                "last": f"{base}?page={last}",
                "prev": f"{base}?page={page - 1}" if page > 1 else None,
                "next": f"{base}?page={page + 1}" if page < last else None,
            },
            "meta": {  # Laravel's paginator, as Givebutter's description has it
                "current_page": page,
                "from": (page - 1) * per_page + 1 if chunk else None,
                "last_page": last,
                "links": [
                    {"url": f"{base}?page={page - 1}" if page > 1 else None, "label": "&laquo; Previous", "active": False},
                    *({"url": f"{base}?page={n}", "label": str(n), "active": n == page} for n in range(1, min(last, 10) + 1)),
                    {"url": f"{base}?page={page + 1}" if page < last else None, "label": "Next &raquo;", "active": False},
                ],
                "path": base,
                "per_page": per_page,
                "to": (page - 1) * per_page + len(chunk) if chunk else None,
                "total": len(items),
                **({"unfiltered_total": len(items)} if unfiltered else {}),
            },
        }
    )


def create_app(gb: FakeGivebutter | None = None) -> Starlette:
    gb = gb or FakeGivebutter()

    def guard(request: Request) -> JSONResponse | None:
        gb.requests.append(
            {"at": time.time(), "method": request.method, "path": request.url.path, "query": dict(request.query_params)}
        )
        if gb.throttle_next > 0:
            gb.throttle_next -= 1
            return JSONResponse({"message": "Too Many Attempts."}, status_code=429, headers={"Retry-After": "1"})
        if request.headers.get("authorization") != f"Bearer {gb.api_key}":
            return JSONResponse({"message": "Unauthorized."}, status_code=401)
        return None

    async def transactions(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        items = sorted(gb.transactions.values(), key=lambda t: t["created_at"])
        after = request.query_params.get("createdAfter")
        if after:
            try:
                cutoff = datetime.fromisoformat(after.replace("Z", "+00:00"))
            except ValueError:
                return JSONResponse(
                    {"message": "The created after is not a valid date.", "errors": {"createdAfter": ["invalid"]}},
                    status_code=422,
                )
            items = [t for t in items if datetime.fromisoformat(t["created_at"].replace("Z", "+00:00")) > cutoff]
        checks = (
            ("transactedAfter", "transacted_at", lambda t, c: t >= c),
            ("transactedBefore", "transacted_at", lambda t, c: t <= c),
            ("updatedAfter", "updated_at", lambda t, c: t > c),
            ("updatedBefore", "updated_at", lambda t, c: t <= c),
        )
        for name, field, keep in checks:
            value = request.query_params.get(name)
            if value:
                try:
                    cutoff = datetime.fromisoformat(value.replace("Z", "+00:00"))
                except ValueError:
                    return JSONResponse(
                        {"message": f"The {name} is not a valid date.", "errors": {name: ["invalid"]}}, status_code=422
                    )
                items = [
                    t
                    for t in items
                    if keep(datetime.fromisoformat((t.get(field) or t["created_at"]).replace("Z", "+00:00")), cutoff)
                ]
        return _page(items, request, unfiltered=True)

    async def transaction(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        txn = gb.transactions.get(request.path_params["id"])
        # a single resource comes unwrapped (reference A5: "returns a single TransactionResource"; the description agrees)
        return JSONResponse(txn) if txn else JSONResponse({"message": "Not found."}, status_code=404)

    async def campaigns(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        return _page(list(gb.campaigns.values()), request, unfiltered=True)

    async def campaign(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        try:
            found = gb.campaigns.get(int(request.path_params["id"]))
        except ValueError:
            found = None
        return JSONResponse(found) if found else JSONResponse({"message": "Not found."}, status_code=404)

    async def member(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        try:
            key = (int(request.path_params["campaign"]), int(request.path_params["member"]))
        except ValueError:
            return JSONResponse({"message": "Not found."}, status_code=404)
        found = gb.members.get(key)
        return JSONResponse(found) if found else JSONResponse({"message": "Not found."}, status_code=404)

    async def payouts(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        return _page([_payout(p) for p in sorted(gb.payouts.values(), key=lambda p: p.get("created_at") or "")], request)

    def webhook_problem(body: dict, partial: bool = False) -> JSONResponse | None:
        errors: dict[str, list[str]] = {}
        url = body.get("url")
        if not partial or "url" in body:
            if not isinstance(url, str) or not url.startswith(("https://", "http://")):
                errors["url"] = ["The url field must be a valid URL."]
        events = body.get("events") if "events" in body else ([body["event"]] if body.get("event") else None)
        if events is not None or not partial:
            if not isinstance(events, list) or not events:
                errors["events"] = ["The events field must have at least 1 items."]
            elif any(e not in WEBHOOK_EVENTS for e in events):
                errors["events"] = [f"The selected events is invalid: {', '.join(e for e in events if e not in WEBHOOK_EVENTS)}."]
        if errors:
            return JSONResponse({"message": next(iter(errors.values()))[0], "errors": errors}, status_code=422)
        return None

    async def webhooks(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        if request.method == "GET":
            return _page(list(gb.webhooks.values()), request)
        body = json.loads(await request.body() or b"{}")
        if (problem := webhook_problem(body)) is not None:
            return problem
        now = datetime.now().astimezone().isoformat(timespec="seconds")
        hook = {
            "id": str(uuid.uuid4()),
            "name": body.get("name"),
            "events": body.get("events") or [body["event"]],
            "enabled": body.get("enabled", True),
            "url": body["url"],
            "signature": secrets.token_hex(16),
            "last_status": None,
            "last_used_at": None,
            "created_at": now,
            "updated_at": now,
        }
        gb.webhooks[hook["id"]] = hook
        return JSONResponse(hook)  # the description: 200 and the WebhookResource

    async def activities(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        if request.path_params["id"] not in gb.webhooks:
            return JSONResponse({"message": "Not found."}, status_code=404)
        return _page(list(reversed(gb.activities.get(request.path_params["id"], []))), request)  # newest first

    async def webhook(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        hook = gb.webhooks.get(request.path_params["id"])
        if hook is None:
            return JSONResponse({"message": "Not found."}, status_code=404)
        if request.method == "DELETE":
            del gb.webhooks[hook["id"]]
            return JSONResponse({}, status_code=200)
        if request.method == "PUT":
            body = json.loads(await request.body() or b"{}")
            if (problem := webhook_problem(body)) is not None:
                return problem
            hook.update({k: body[k] for k in ("url", "events", "name", "enabled") if k in body})
        return JSONResponse(hook)

    async def tickets(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        # The list takes no filter, only paging (reference A5), and neither the reference nor the description
        # documents its order. The one recorded page (MissionBit ticket.spec.ts) lists A0020 (created 04:31:32)
        # before A0019 (04:30:49): newest first, which this fake follows; the tickets of one order (one moment) by
        # their count (``id_suffix``), then id, so the order is stable.
        listed = sorted(
            gb.tickets.values(),
            key=lambda t: (str(t.get("created_at") or ""), str(t.get("id_suffix") or ""), str(t.get("id"))),
            reverse=True,
        )
        return _page(listed, request)

    async def ticket(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        found = gb.tickets.get(request.path_params["id"])  # a revoked ticket is not found (refund_transaction)
        return JSONResponse(found) if found else JSONResponse({"message": "Not found."}, status_code=404)

    app = Starlette(
        routes=[
            Route("/v1/transactions", transactions),
            Route("/v1/transactions/{id}", transaction),
            Route("/v1/campaigns", campaigns),
            Route("/v1/campaigns/{id}", campaign),
            Route("/v1/campaigns/{campaign}/members/{member}", member),
            Route("/v1/tickets", tickets),
            Route("/v1/tickets/{id}", ticket),
            Route("/v1/payouts", payouts),
            Route("/v1/webhooks", webhooks, methods=["GET", "POST"]),
            Route("/v1/webhooks/{id}", webhook, methods=["GET", "PUT", "DELETE"]),
            Route("/v1/webhooks/{id}/activities", activities),
        ]
    )
    app.state.fake = gb
    return app
