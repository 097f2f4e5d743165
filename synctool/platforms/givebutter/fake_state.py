"""``FakeGivebutter``: the fake Givebutter account in memory (its transactions, campaigns and fundraisers, tickets,
payouts and webhooks, and the requests it was sent); tests read and seed it directly in process.

Recurring plans: ``create_plan`` (the plan and its first charge), ``charge_plan``, ``fail_plan``, ``pause_plan``,
``resume_plan``, ``cancel_plan``, ``change_plan``: each changes the plan as Givebutter would and announces it (a
``plan.*`` or ``transaction.succeeded`` envelope, recorded as a delivery and, when ``deliver`` is set, handed to it).

Events: ``add_event_campaign`` (a campaign of type "event" with its ``event`` block), ``sell_tickets`` (an order:
its transaction and a ticket per holder), ``check_in``, and refunds of a whole order (``refund_transaction``,
optionally revoking its tickets) or of some of its tickets (``refund_tickets``)."""

from __future__ import annotations

import json
import random
import string
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Unpack

from synctool.platforms.givebutter.fake_samples import (
    TicketTerms,
    givebutter_event_campaign,
    givebutter_fee,
    givebutter_moment,
    givebutter_plan,
    givebutter_plan_charge,
    givebutter_ticket_order,
    givebutter_time,
    money_json,
    plan_next_bill,
    ticket_cost,
)


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
        #: recurring plans (``RecurringPlanResource``) by uid; a charge is a transaction naming its ``plan_id``
        self.plans: dict[str, dict] = {}
        #: what the account announced (``{event, id, data}``), oldest first: a test replays one by posting it again
        self.announced: list[dict] = []
        #: called with each announced envelope's JSON bytes (a test's receiver, a drill's served synctool); None: kept only
        self.deliver: Callable[[bytes], Any] | None = None

    def record_delivery(
        self, event: str, data: dict, *, failed: bool, at: str | None = None, event_id: str | None = None
    ) -> dict:
        """Record an attempt to deliver ``event`` to every webhook that takes it, as Givebutter's activities
        list shows it: the payload it sent, and whether the receiver took it. ``failed`` says the receiver
        never got it (the tests' "the delivery failed"); the status words are not enumerated by the API
        description, so "failed" and "success" are this fake's."""
        at = at or datetime.now().astimezone().isoformat(timespec="seconds")
        envelope = {"id": event_id or f"evt_{uuid.uuid4().hex[:16]}", "event": event, "data": data}
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
        at: datetime | str | None = None,
        **terms: Unpack[TicketTerms],
    ) -> tuple[dict, list[dict]]:
        """One order on an event campaign: the transaction (one part, a ``item``/``ticket`` line item per ticket
        type, the covered "Processing fee" line) and a ticket per holder (``holders``: first_name, last_name,
        email, phone, and ``title`` / ``price`` for another type; None: the buyer's one ticket), each naming the
        transaction, ``checked_in_at`` null, ids shaped as recorded ("81347746A0020": 8 digits, then the campaign's
        count). ``discount`` is a percentage: 100 comps the order (amount 0, method "none", no fee). Both are
        stored and served; no webhook is sent (``samples.givebutter`` makes the deliveries). See
        ``givebutter_ticket_order`` for the ``terms`` (``TicketTerms``: ticket type, price, discount, method, fee, ...),
        what is recorded and what is this fake's choice."""
        found = campaign if isinstance(campaign, dict) else self.campaigns[int(campaign)]
        campaign_id = int(found["id"])
        first = self._sold.get(campaign_id, 0) + 1
        count = len(holders) if holders is not None else 1
        self._sold[campaign_id] = first + count - 1
        email = str(buyer.get("email") or "").lower()
        contact = self._contacts.setdefault(email, 8800000 + len(self._contacts) + 1) if email else 8800000
        txn, tickets = givebutter_ticket_order(
            found,
            buyer,
            holders,
            transaction_id=self._id(16),
            part_id=self._part_id(),
            contact_id=contact,
            first_number=first,
            at=givebutter_moment(at),
            **terms,
        )
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
        paid = amount if amount is not None else round(sum(ticket_cost(txn, held[i]) for i in ticket_ids), 2)
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
                return money_json(round(float(line.get(name) or 0) * n / quantity, 2))

            moved.append({**line, "quantity": take, "discount": share("discount", take), "total": share("total", take)})
            if take < quantity:
                left = quantity - take
                kept.append({**line, "quantity": left, "discount": share("discount", left), "total": share("total", left)})
        part["line_items"] = kept
        rest = round(float(part["amount"]) - paid, 2)
        part.update(amount=money_json(rest), donated=money_json(rest), payout=money_json(round(float(part["payout"]) - paid, 2)))
        txn["transactions"].append({
            **part, "id": self._part_id(), "amount": money_json(paid), "fee": 0, "fee_covered": 0, "donated": money_json(paid),
            "payout": money_json(paid), "refunded": True, "refunded_at": when, "line_items": moved,
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

    # -- recurring plans ----------------------------------------------------------------------------------------------

    def announce(self, event: str, data: dict, *, lost: bool = False) -> dict:
        """An event as Givebutter sends it, ``{event, id, data}`` (the id a uuid, as the transaction webhooks carry):
        recorded as a delivery to each webhook that takes it (``lost``: failed, never received) and, unless ``lost``,
        handed to ``deliver``. Returns the envelope."""
        envelope = {"event": event, "id": str(uuid.uuid4()), "data": json.loads(json.dumps(data))}
        self.record_delivery(event, envelope["data"], failed=lost, event_id=envelope["id"])
        self.announced.append(envelope)
        if self.deliver is not None and not lost:
            self.deliver(json.dumps(envelope).encode())
        return envelope

    def _plan(self, plan_id: str, event: str | None, lost: bool, at: datetime | str | None, **changes: Any) -> dict:
        plan = self.plans[plan_id]
        plan.update(changes, updated_at=givebutter_time(at or datetime.now(UTC)))
        if event:
            self.announce(event, plan, lost=lost)
        return plan

    def create_plan(
        self,
        email: str,
        first_name: str = "Pat",
        last_name: str = "Example",
        amount: float = 10,
        frequency: str = "monthly",
        *,
        phone: str | None = None,
        method: str = "card",
        at: datetime | str | None = None,
        charge: bool = True,
        lost: bool = False,
    ) -> dict:
        """A donor starts giving every month (or quarter, or year): the plan (``plan.created``), preceded by its first
        charge by seconds as recorded (``charge``: a ``transaction.succeeded``). ``at``: its start (default now).
        Returns the plan as stored (served by ``/v1/plans``)."""
        start = datetime.fromisoformat(givebutter_time(at or datetime.now(UTC))).replace(tzinfo=UTC)
        contact = self._contacts.setdefault(email.lower(), 8800000 + len(self._contacts) + 1)
        plan = givebutter_plan(self._id(16), first_name=first_name, last_name=last_name, email=email, phone=phone,
                               frequency=frequency, amount=amount, method=method, contact_id=contact, start_at=start)  # fmt: skip
        self.plans[plan["id"]] = plan
        if charge:
            self._charge(plan, start - timedelta(seconds=5), lost=lost)
        self.announce("plan.created", plan, lost=lost)
        return plan

    def _charge(self, plan: dict, at: datetime, *, lost: bool) -> dict:
        txn = givebutter_plan_charge(plan, self._id(16), self._part_id(), at)
        self.transactions[txn["id"]] = txn
        self.announce("transaction.succeeded", txn, lost=lost)
        return txn

    def charge_plan(self, plan_id: str, *, at: datetime | str | None = None, lost: bool = False) -> dict:
        """The plan's next charge succeeds: a transaction naming the plan (``transaction.succeeded``), the plan's next
        bill date one period on and, if it was past due, active again (no plan event is announced: none is
        recorded for a retried charge). Returns the transaction."""
        plan = self.plans[plan_id]
        when = datetime.fromisoformat(givebutter_time(at or datetime.now(UTC))).replace(tzinfo=UTC)
        txn = self._charge(plan, when, lost=lost)
        status = "active" if plan["status"] in ("past_due", "past_due_failed") else plan["status"]
        self._plan(plan_id, None, lost, when, status=status, next_bill_date=plan_next_bill(when, plan["frequency"]))
        return txn

    def fail_plan(self, plan_id: str, *, at: datetime | str | None = None, lost: bool = False) -> dict:
        """The plan's charge is declined: ``past_due`` (a status word from one production source only) and
        ``plan.failed`` carrying the plan (its body is unconfirmed: README "Plan webhooks")."""
        return self._plan(plan_id, "plan.failed", lost, at, status="past_due")

    def pause_plan(self, plan_id: str, *, at: datetime | str | None = None, lost: bool = False) -> dict:
        return self._plan(plan_id, "plan.paused", lost, at, status="paused")

    def resume_plan(self, plan_id: str, *, at: datetime | str | None = None, lost: bool = False) -> dict:
        return self._plan(plan_id, "plan.resumed", lost, at, status="active")

    def cancel_plan(self, plan_id: str, *, at: datetime | str | None = None, lost: bool = False) -> dict:
        """``cancelled`` (two l, as MissionBit's production decoder has it; the event and ``canceled_at`` have one)."""
        when = givebutter_time(at or datetime.now(UTC))
        return self._plan(plan_id, "plan.canceled", lost, when, status="cancelled", canceled_at=when)

    def change_plan(self, plan_id: str, *, at: datetime | str | None = None, lost: bool = False, **changes: Any) -> dict:
        """The donor edits their plan (amount, frequency, e-mail, name, next charge...): ``plan.updated``."""
        if "amount" in changes:
            changes["amount"] = money_json(float(changes["amount"]))
            changes.setdefault("fee_covered", f"{givebutter_fee(float(changes['amount'])):.2f}")
        return self._plan(plan_id, "plan.updated", lost, at, **changes)
