"""Givebutter's event campaign, ticket order, ticket and payout, as the fake makes and serves them: built by
``givebutter_event_campaign``, ``givebutter_ticket_order`` and ``givebutter_ticket`` (the tests use them too)."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

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


#: the holder of a sample ticket when none is given
SAMPLE_HOLDER = {"first_name": "Ada", "last_name": "Lovelace", "email": "Ada.Lovelace@Example.org", "phone": None}


def givebutter_ticket(
    transaction_id: str = "QiN7blzUhiwXBVBr",
    holder: dict | None = None,
    *,
    number: int = 1,
    ticket_id: str | None = None,
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
    ticket alone (a ``/v1/tickets`` item). ``holder``: first_name, last_name, email, phone, as an order's holders
    (``givebutter_ticket_order``); None: ``SAMPLE_HOLDER``.

    The id is 8 digits and ``id_suffix`` ("81347746A0020": "A0020"); ``number`` is the suffix's count (the
    recorded A0019 and A0020 were bought 43 s apart in two orders: a count wider than one order; the fake counts
    per campaign). A ``ticket_id`` given keeps its last five characters as its suffix. ``price`` is the ticket
    type's price; what a comped ticket's ``price`` says is not recorded. ``retail_price`` is a decimal string or
    null (the API description: string|null). ``checked_in_at``: no recording has one set; ISO 8601 like
    ``created_at`` is this sample's choice."""
    holder = SAMPLE_HOLDER if holder is None else holder
    first_name, last_name = str(holder.get("first_name") or ""), str(holder.get("last_name") or "")
    email, phone = str(holder.get("email") or ""), holder.get("phone")
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


class TicketTerms(TypedDict, total=False):
    """The terms of a ticket order that ``FakeGivebutter.sell_tickets`` passes on to ``givebutter_ticket_order``
    (whose signature gives their defaults)."""

    ticket_type: str
    price: float
    discount: float
    discount_code: str | None
    method: str
    fee: float | None
    fee_covered: bool
    fair_market_value: float | None
    retail_price: float | None


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
    lines = _ticket_lines(people, ticket_type, price, discount, discount_code)
    amount = round(sum(line["total"] for line in lines), 2)
    charged = givebutter_fee(amount) if fee is None else fee
    if not amount:
        method, charged = "none", 0
    covered = charged if fee_covered else 0
    if covered:
        lines.append({"type": "donation", "subtype": "fee", "description": "Processing fee", "quantity": 1,
                      "price": money_json(covered), "discount": 0, "total": money_json(covered)})  # fmt: skip
    payout = money_json(amount if fee_covered else round(amount - charged, 2))
    when = givebutter_moment(at)
    captured = givebutter_moment(datetime.fromisoformat(when) + timedelta(seconds=2))
    name = f"{buyer.get('first_name', '')} {buyer.get('last_name', '')}".strip()
    txn = {
        "id": transaction_id, "contact_id": contact_id, "number": part_id, "campaign_id": campaign["id"],
        "campaign_code": campaign.get("code"), "plan_id": None, "team_id": None, "member_id": None, "fund_id": None,
        "fund_code": None, "first_name": buyer.get("first_name"), "last_name": buyer.get("last_name"), "company": None,
        "email": buyer.get("email"), "phone": buyer.get("phone"),
        "address": {"address_1": None, "address_2": None, "city": None, "state": None, "country": None, "zipcode": None},
        "status": "succeeded", "payment_method": method, "method": method, "amount": money_json(amount), "fee": money_json(charged),
        "fee_covered": money_json(covered), "donated": money_json(amount), "payout": payout, "currency": "USD",
        "transacted_at": when, "created_at": when, "updated_at": when,
        "giving_space": {"id": int(_digits(transaction_id, 7)), "name": name or "Anonymous", "amount": money_json(amount), "message": None},
        "dedication": None,
        "transactions": [{
            "id": part_id, "plan_id": None, "amount": money_json(amount), "fee": money_json(charged), "fee_covered": money_json(covered),
            "donated": money_json(amount), "payout": payout, "captured": True, "captured_at": captured, "refunded": False,
            "refunded_at": None, "line_items": lines,
        }],
        "custom_fields": [], "utm_parameters": None, "external_id": None, "communication_opt_in": False,
        "session_id": str(uuid.UUID(hashlib.md5(transaction_id.encode()).hexdigest())),
    }  # fmt: skip
    if fair_market_value is not None:
        txn["fair_market_value_amount"] = f"{fair_market_value:.2f}"
        txn["tax_deductible_amount"] = f"{max(amount - fair_market_value, 0):.2f}"
    tickets = _tickets(people, transaction_id, first_number, ticket_type, price, when, retail_price)
    return txn, tickets


def _ticket_lines(
    people: list[dict], ticket_type: str, price: float, discount: float, discount_code: str | None
) -> list[dict[str, Any]]:
    """An order's ``item``/``ticket`` line items: one per ticket type (title and price), with its quantity."""
    groups: dict[tuple[str, float], int] = {}
    for holder in people:
        key = (str(holder.get("title") or ticket_type), float(holder.get("price", price)))
        groups[key] = groups.get(key, 0) + 1
    lines: list[dict[str, Any]] = []
    for (kind, each), quantity in groups.items():
        off = round(each * quantity * discount / 100, 2)
        described = f"{kind} ({discount_code} - {discount:.2f}% OFF)" if discount and discount_code else kind
        lines.append({"type": "item", "subtype": "ticket", "description": described, "quantity": quantity,
                      "price": money_json(each), "discount": money_json(off), "total": money_json(round(each * quantity - off, 2))})  # fmt: skip
    return lines


def _tickets(people: list[dict], transaction_id: str, first_number: int, ticket_type: str, price: float, when: str,
             retail_price: float | None) -> list[dict]:  # fmt: skip
    """An order's tickets, one per person, numbered from ``first_number``."""
    return [
        givebutter_ticket(
            transaction_id, h, number=first_number + n, title=str(h.get("title") or ticket_type),
            price=money_json(float(h.get("price", price))), created_at=when, retail_price=retail_price, envelope=False,
        )
        for n, h in enumerate(people)
    ]  # fmt: skip


def money_json(value: float) -> float | int:
    """Money as Givebutter writes it in JSON: 25 and 0, 1.8 and 0.61 (whole dollars carry no decimals)."""
    return int(value) if float(value).is_integer() else round(float(value), 2)


def ticket_cost(txn: dict, ticket: dict) -> float:
    """What one ticket cost: its type's line (``total / quantity``), else its price."""
    for part in txn.get("transactions") or []:
        for line in part.get("line_items") or []:
            described, kind = str(line.get("description") or ""), str(ticket.get("title"))
            if line.get("subtype") == "ticket" and (described == kind or described.startswith(f"{kind} (")):
                return float(line.get("total") or 0) / max(int(line.get("quantity") or 1), 1)
    return float(ticket.get("price") or 0)


# -- recurring plans and their charges (tests/data/givebutter_plans) ------------------------------------------------

#: the months a plan's frequency moves its next charge by (monthly, quarterly, yearly: the only values seen)
PLAN_MONTHS = {"monthly": 1, "quarterly": 3, "yearly": 12}


def plan_next_bill(start: datetime | str, frequency: str, periods: int = 1) -> str:
    """The day ``periods`` periods after ``start``, as Givebutter writes ``next_bill_date`` (``YYYY-MM-DD 00:00:00``;
    the recorded plan started 2023-11-24 and bills next 2023-12-24). A day the month lacks is its last day."""
    import calendar

    moment = datetime.fromisoformat(givebutter_time(start))
    months = moment.month - 1 + PLAN_MONTHS.get(frequency, 1) * periods
    year, month = moment.year + months // 12, months % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return f"{year:04d}-{month:02d}-{day:02d} 00:00:00"


def givebutter_plan(
    plan_id: str,
    *,
    first_name: str = "Pat",
    last_name: str = "Example",
    email: str = "pat.example@example.org",
    phone: str | None = None,
    frequency: str = "monthly",
    amount: float = 10,
    method: str = "card",
    contact_id: int | None = None,
    start_at: datetime | str | None = None,
) -> dict:
    """A recurring plan (``RecurringPlanResource``) as the recorded ``GET /v1/plans`` item has it, keys in its order
    (tests/data/givebutter_plans/mb-plan-spec-get-plans-page.json): ``amount`` a number, ``fee_covered`` a decimal
    string, ``created_at`` / ``start_at`` ``YYYY-MM-DD HH:MM:SS`` in UTC, ``next_bill_date`` a date at midnight; then
    the three fields Givebutter's current schema adds and the 2023 recording lacks (``contact_id``, ``canceled_at``,
    ``updated_at``: GB-API; ``updated_at`` is confirmed by no other source), in this fake the time of its last change."""
    started = givebutter_time(start_at or datetime.now(UTC))
    return {
        "id": plan_id, "first_name": first_name, "last_name": last_name, "email": email, "phone": phone,
        "frequency": frequency, "status": "active", "method": method, "amount": money_json(amount),
        "fee_covered": f"{givebutter_fee(amount):.2f}", "created_at": started, "start_at": started,
        "next_bill_date": plan_next_bill(started, frequency), "contact_id": contact_id, "canceled_at": None,
        "updated_at": started,
    }  # fmt: skip


def givebutter_plan_charge(plan: dict, transaction_id: str, part_id: str, at: datetime | str, campaign_id: int = 173909,
                           campaign_code: str = "MONTHLY") -> dict:  # fmt: skip
    """A charge of a plan: a transaction carrying ``plan_id`` on itself and its part, the plan's amount and covered fee,
    shaped as the recorded charge (real_bodies/givebutter/api-transaction-plan-charge-opt-in-null.json), except
    ``number`` and ``session_id``: recorded as an integer and null, the official TransactionResource says strings, and
    the fake answers as the description says (the receiver reads neither)."""
    amount = float(plan["amount"])
    fee = givebutter_fee(amount)
    when = givebutter_moment(at)
    lines = [
        {"type": "donation", "subtype": "donation", "description": "Donation", "quantity": 1, "price": money_json(amount),
         "discount": 0, "total": money_json(amount)},
        {"type": "donation", "subtype": "fee", "description": "Processing fee", "quantity": 1, "price": money_json(fee),
         "discount": 0, "total": money_json(fee)},
    ]  # fmt: skip
    return {
        "id": transaction_id, "campaign_id": campaign_id, "contact_id": plan.get("contact_id"), "number": str(part_id),
        "campaign_code": campaign_code, "plan_id": plan["id"], "team_id": None, "member_id": None, "fund_id": None,
        "fund_code": None, "first_name": plan.get("first_name"), "last_name": plan.get("last_name"), "company": None,
        "email": plan.get("email"), "phone": plan.get("phone"),
        "address": {"address_1": None, "address_2": None, "city": None, "state": None, "country": None, "zipcode": None},
        "status": "succeeded", "payment_method": plan.get("method") or "card", "method": plan.get("method") or "card",
        "amount": money_json(amount), "fee": money_json(fee), "fee_covered": money_json(fee), "donated": money_json(amount),
        "payout": money_json(amount), "currency": "USD", "transacted_at": when, "created_at": when, "updated_at": when,
        "giving_space": None, "dedication": None,
        "transactions": [{
            "id": part_id, "plan_id": plan["id"], "amount": money_json(amount), "fee": money_json(fee),
            "fee_covered": money_json(fee), "donated": money_json(amount), "payout": money_json(amount), "captured": True,
            "captured_at": when, "refunded": False, "refunded_at": None, "line_items": lines,
        }],
        "custom_fields": [], "utm_parameters": None, "external_id": None, "communication_opt_in": None, "session_id": str(uuid.uuid5(uuid.NAMESPACE_URL, transaction_id)),
    }  # fmt: skip
