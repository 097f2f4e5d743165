"""A local stand-in for Stripe's webhook endpoints API (``/v1/webhook_endpoints``): form-encoded bodies,
Bearer ``sk_...`` auth, ``{"error": {type, message, param}}`` errors, and each endpoint's signing secret
returned only when it is created; and its events list (``GET /v1/events`` with ``delivery_success``,
``type``/``types[]``, ``created[gte|gt|lte|lt]``, ``limit`` and ``starting_after``), newest first. One function
per operation, each declared with its method and path."""

from __future__ import annotations

import secrets
import time
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.platform.edges import FakeApi, Refusal, found, shows

#: the events the fake accepts (Stripe's list is much longer)
EVENTS = {
    "checkout.session.completed", "checkout.session.async_payment_succeeded", "checkout.session.async_payment_failed",
    "payment_intent.succeeded", "payment_intent.payment_failed", "charge.refunded", "charge.succeeded", "*",
    "invoice.paid", "invoice.payment_failed", "charge.dispute.closed", "customer.subscription.created",
    "customer.subscription.updated", "customer.subscription.deleted",
}  # fmt: skip


class FakeStripe:
    def __init__(self, api_key: str = "sk_test_fake"):
        self.api_key = api_key
        self.endpoints: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []
        #: events of the last 30 days (``Event``) and whether each reached every endpoint
        self.events: list[dict] = []
        self.delivered: dict[str, bool] = {}

        #: the account's own payments (the stripe-donations platform reads them; ``add_charge`` and the others below add them)
        self.charges: list[dict] = []
        self.balance_transactions: dict[str, dict] = {}
        self.sessions: list[dict] = []
        self.line_items: dict[str, list[dict]] = {}
        self.invoices: dict[str, dict] = {}
        self.subscriptions: dict[str, dict] = {}
        self.customers: dict[str, dict] = {}
        self.payouts: list[dict] = []

    def add_event(self, event: dict, *, delivered: bool) -> dict:
        """An event Stripe made; ``delivered`` False: every attempt to deliver it failed (or is pending)."""
        self.events.append(event)
        self.delivered[event["id"]] = delivered
        return event


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": "invalid_request_error", "message": message, "param": param}}, status_code=status)


def guard(request: Request, st: FakeStripe) -> JSONResponse | None:
    """Every request is recorded (``FakeStripe.requests``), then needs the secret key as Bearer."""
    st.requests.append((request.method, request.url.path))
    if request.headers.get("authorization") != f"Bearer {st.api_key}":
        return JSONResponse({"error": {"type": "invalid_request_error", "message": "Invalid API Key provided."}}, status_code=401)
    return None


api = FakeApi(FakeStripe, guard)


async def _checked(request: Request, partial: bool) -> dict:
    """An endpoint's form-encoded ``url``, ``enabled_events[]`` and ``disabled``, checked (``partial``: an update);
    Stripe's 400 (a ``Refusal``) for the first that is wrong."""
    form = parse_qs((await request.body()).decode())  # Stripe's bodies are form-encoded
    url = form["url"][0] if form.get("url") else None
    events = form.get("enabled_events[]") or []
    if (not partial or url is not None) and not (isinstance(url, str) and url.startswith("https://")):
        raise Refusal(_error(400, "Invalid URL: must be an https URL.", "url"))
    if (not partial or events) and not events:
        raise Refusal(_error(400, "Missing required param: enabled_events.", "enabled_events"))
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        raise Refusal(_error(400, f"Invalid enabled_events: {unknown[0]} is not a valid event.", "enabled_events"))
    return {"url": url, "events": events, "disabled": form["disabled"][0] if form.get("disabled") else None}


def _public(endpoint: dict) -> dict:
    return {k: v for k, v in endpoint.items() if k != "secret"}


@api.get("/v1/webhook_endpoints")
async def list_webhook_endpoints(request: Request, st: FakeStripe) -> Response:
    listed = [_public(e) for e in st.endpoints.values()]
    return JSONResponse({"object": "list", "data": listed, "has_more": False, "url": "/v1/webhook_endpoints"})


@api.post("/v1/webhook_endpoints")
async def create_webhook_endpoint(request: Request, st: FakeStripe) -> Response:
    """The answer is the only one to show the endpoint's signing ``secret``."""
    body = await _checked(request, partial=False)
    endpoint = {
        "id": f"we_{secrets.token_hex(12)}",
        "object": "webhook_endpoint",
        "url": body["url"],
        "enabled_events": body["events"],
        "status": "enabled",
        "api_version": None,
        "created": int(time.time()),
        "livemode": False,
        "metadata": {},
        "secret": f"whsec_{secrets.token_urlsafe(24)}",
    }
    st.endpoints[endpoint["id"]] = endpoint
    return JSONResponse(endpoint)


def _endpoint(request: Request, st: FakeStripe) -> dict:
    """The endpoint the path names, or Stripe's 404."""
    endpoint_id = request.path_params["id"]
    return found(st.endpoints.get(endpoint_id), lambda: _error(404, f"No such webhook endpoint: '{endpoint_id}'", "id"))


retrieve_webhook_endpoint = api.get("/v1/webhook_endpoints/{id}")(shows(_endpoint, _public))


@api.post("/v1/webhook_endpoints/{id}")
async def update_webhook_endpoint(request: Request, st: FakeStripe) -> Response:
    """``url``, ``enabled_events[]``, ``disabled`` ("true" or "false")."""
    endpoint = _endpoint(request, st)
    body = await _checked(request, partial=True)
    if body["url"]:
        endpoint["url"] = body["url"]
    if body["events"]:
        endpoint["enabled_events"] = body["events"]
    if body["disabled"] is not None:
        endpoint["status"] = "disabled" if body["disabled"] == "true" else "enabled"
    return JSONResponse(_public(endpoint))


@api.delete("/v1/webhook_endpoints/{id}")
async def delete_webhook_endpoint(request: Request, st: FakeStripe) -> Response:
    endpoint = _endpoint(request, st)
    del st.endpoints[endpoint["id"]]
    return JSONResponse({"id": endpoint["id"], "object": "webhook_endpoint", "deleted": True})


#: ``created[<op>]``: how an event's ``created`` compares with the bound
CREATED = (("gte", lambda a, b: a >= b), ("gt", lambda a, b: a > b), ("lte", lambda a, b: a <= b), ("lt", lambda a, b: a < b))


@api.get("/v1/events")
async def list_events(request: Request, st: FakeStripe) -> Response:
    """``delivery_success``, ``type`` / ``types[]``, ``created[gte|gt|lte|lt]``, ``starting_after``, ``limit``;
    newest first."""
    q = request.query_params
    events = sorted(st.events, key=lambda e: e.get("created") or 0, reverse=True)
    if q.get("delivery_success") in ("true", "false"):
        wanted = q["delivery_success"] == "true"
        events = [e for e in events if st.delivered.get(e["id"], True) == wanted]
    types = q.getlist("types[]") or ([q["type"]] if q.get("type") else [])
    if types:
        events = [e for e in events if e.get("type") in types]
    for op, keep in CREATED:
        if q.get(f"created[{op}]"):
            try:
                bound = int(q[f"created[{op}]"])
            except ValueError:
                return _error(400, f"Invalid integer: {q[f'created[{op}]']}", f"created[{op}]")
            events = [e for e in events if keep(int(e.get("created") or 0), bound)]
    if q.get("starting_after"):
        ids = [e["id"] for e in events]
        events = events[ids.index(q["starting_after"]) + 1 :] if q["starting_after"] in ids else []
    limit = min(int(q.get("limit") or 10), 100)
    return JSONResponse({"object": "list", "data": events[:limit], "has_more": len(events) > limit, "url": "/v1/events"})


# -- the account's own payments (the stripe-donations platform reads them) ---------------------------------------------
# Charges with their balance transactions, the Checkout Sessions and line items that made them, invoices,
# subscriptions and payouts, as Stripe's API version 2020-08-27 describes them (``tests/specs/stripe.json``). Lists are
# newest first and paged with ``limit`` and ``starting_after``; ``expand[]`` expands a charge's balance transaction
# and a balance transaction's source.


def _id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def _int(q: Any, name: str) -> int | None:
    if not q.get(name):
        return None
    try:
        return int(q[name])
    except ValueError:
        raise Refusal(_error(400, f"Invalid integer: {q[name]}", name)) from None


def _listed(request: Request, items: list[dict], url: str) -> Response:
    q = request.query_params
    items = sorted(items, key=lambda o: o.get("created") or 0, reverse=True)
    if q.get("starting_after"):
        ids = [o["id"] for o in items]
        items = items[ids.index(q["starting_after"]) + 1 :] if q["starting_after"] in ids else []
    limit = min(_int(q, "limit") or 10, 100)
    return JSONResponse({"object": "list", "data": items[:limit], "has_more": len(items) > limit, "url": url})


def _window(request: Request, items: list[dict], field: str) -> list[dict]:
    q = request.query_params
    for op, keep in (
        ("gte", lambda a, b: a >= b),
        ("gt", lambda a, b: a > b),
        ("lte", lambda a, b: a <= b),
        ("lt", lambda a, b: a < b),
    ):
        bound = _int(q, f"{field}[{op}]")
        if bound is not None:
            items = [o for o in items if keep(int(o.get(field) or 0), bound)]
    return items


def _expanded(st: FakeStripe, charge: dict, expand: list[str], prefix: str = "") -> dict:
    if f"{prefix}balance_transaction" in expand and isinstance(charge.get("balance_transaction"), str):
        return {**charge, "balance_transaction": st.balance_transactions.get(charge["balance_transaction"])}
    return charge


@api.get("/v1/charges")
async def list_charges(request: Request, st: FakeStripe) -> Response:
    """``created[gte|gt|lte|lt]``, ``payment_intent``, ``expand[]=data.balance_transaction``."""
    q = request.query_params
    charges = _window(request, st.charges, "created")
    if q.get("payment_intent"):
        charges = [c for c in charges if c.get("payment_intent") == q["payment_intent"]]
    expand = q.getlist("expand[]")
    return _listed(request, [_expanded(st, c, expand, "data.") for c in charges], "/v1/charges")


@api.get("/v1/charges/{charge}")
async def retrieve_charge(request: Request, st: FakeStripe) -> Response:
    charge_id = request.path_params["charge"]
    charge = found(
        next((c for c in st.charges if c["id"] == charge_id), None), lambda: _error(404, f"No such charge: '{charge_id}'", "id")
    )
    return JSONResponse(_expanded(st, charge, request.query_params.getlist("expand[]")))


@api.get("/v1/checkout/sessions")
async def list_sessions(request: Request, st: FakeStripe) -> Response:
    q = request.query_params
    sessions = st.sessions
    if q.get("payment_intent"):
        sessions = [s for s in sessions if s.get("payment_intent") == q["payment_intent"]]
    if q.get("subscription"):
        sessions = [s for s in sessions if s.get("subscription") == q["subscription"]]
    return _listed(request, sessions, "/v1/checkout/sessions")


@api.get("/v1/checkout/sessions/{session}/line_items")
async def list_line_items(request: Request, st: FakeStripe) -> Response:
    session_id = request.path_params["session"]
    return _listed(request, st.line_items.get(session_id, []), f"/v1/checkout/sessions/{session_id}/line_items")


@api.get("/v1/invoices/{invoice}")
async def retrieve_invoice(request: Request, st: FakeStripe) -> Response:
    invoice_id = request.path_params["invoice"]
    return JSONResponse(found(st.invoices.get(invoice_id), lambda: _error(404, f"No such invoice: '{invoice_id}'", "invoice")))


@api.get("/v1/subscriptions")
async def list_subscriptions(request: Request, st: FakeStripe) -> Response:
    status = request.query_params.get("status") or "active"
    subs = [public(s) for s in st.subscriptions.values() if status == "all" or s.get("status") == status]
    return _listed(request, subs, "/v1/subscriptions")


@api.get("/v1/subscriptions/{subscription_exposed_id}")
async def retrieve_subscription(request: Request, st: FakeStripe) -> Response:
    sub_id = request.path_params["subscription_exposed_id"]
    return JSONResponse(
        public(found(st.subscriptions.get(sub_id), lambda: _error(404, f"No such subscription: '{sub_id}'", "id")))
    )


@api.get("/v1/customers/{customer}")
async def retrieve_customer(request: Request, st: FakeStripe) -> Response:
    customer_id = request.path_params["customer"]
    return JSONResponse(found(st.customers.get(customer_id), lambda: _error(404, f"No such customer: '{customer_id}'", "id")))


@api.get("/v1/payouts")
async def list_payouts(request: Request, st: FakeStripe) -> Response:
    """``arrival_date[gte|gt|lte|lt]``."""
    return _listed(request, _window(request, st.payouts, "arrival_date"), "/v1/payouts")


@api.get("/v1/balance_transactions")
async def list_balance_transactions(request: Request, st: FakeStripe) -> Response:
    """``payout``: the transactions that payout paid out."""
    payout = request.query_params.get("payout")
    txns = [t for t in st.balance_transactions.values() if not payout or t.get("_payout") == payout]
    shown = [{k: v for k, v in t.items() if not k.startswith("_")} for t in txns]
    if "data.source" in request.query_params.getlist("expand[]"):  # the charge or refund each is for
        objects = {c["id"]: c for c in st.charges} | {r["id"]: r for c in st.charges for r in c["refunds"]["data"]}
        shown = [{**t, "source": objects.get(t["source"], t["source"])} for t in shown]
    return _listed(request, shown, "/v1/balance_transactions")


# -- what a test or the demo adds: Stripe's objects, shaped as Stripe sends them --------------------------------------


def add_charge(
    st: FakeStripe,
    amount: int,
    *,
    email: str | None = "donor@example.org",
    name: str | None = "Dana Donor",
    currency: str = "usd",
    created: int = 1_764_000_000,
    metadata: dict[str, str] | None = None,
    invoice: str | None = None,
    payment_link: str | None = None,
    price: str | None = None,
    product: str | None = None,
    customer: str | None = None,
    payment_intent: str | None = None,
) -> dict:
    """A succeeded card charge of its own PaymentIntent (Stripe's fee 2.9% + 30), with its balance transaction
    and, for a Payment Link or a Checkout page (``payment_link`` or ``price``), the Checkout Session that made it."""
    pi, charge_id, txn_id = payment_intent or _id("pi"), _id("ch"), _id("txn")
    fee = round(amount * 29 / 1000) + 30 if currency == "usd" else 0
    st.balance_transactions[txn_id] = {
        "id": txn_id, "object": "balance_transaction", "amount": amount, "fee": fee, "net": amount - fee,
        "currency": currency, "created": created, "available_on": created + 2 * 86400, "status": "available",
        "type": "charge", "reporting_category": "charge", "source": charge_id, "exchange_rate": None,
        "fee_details": [{"amount": fee, "currency": currency, "type": "stripe_fee", "description": "Stripe processing fees", "application": None}],
    }  # fmt: skip
    charge = {
        "id": charge_id, "object": "charge", "amount": amount, "amount_captured": amount, "amount_refunded": 0,
        "balance_transaction": txn_id, "captured": True, "created": created, "currency": currency, "customer": customer,
        "description": None, "disputed": False, "invoice": invoice, "livemode": False, "metadata": metadata or {},
        "paid": True, "payment_intent": pi, "receipt_email": email, "refunded": False, "status": "succeeded",
        "billing_details": {"name": name, "email": email, "phone": None,
                            "address": {"line1": "1 Main St", "line2": None, "city": "Springfield", "state": "IL",
                                        "postal_code": "62701", "country": "US"}},
        "payment_method_details": {"type": "card"},
        "refunds": {"object": "list", "data": [], "has_more": False, "url": f"/v1/charges/{charge_id}/refunds"},
    }  # fmt: skip
    st.charges.append(charge)
    if payment_link or price:
        session = add_session(st, {
            "id": _id("cs_test"), "mode": "payment", "payment_intent": pi, "payment_link": payment_link,
            "amount_total": amount, "currency": currency, "customer_details": {"email": email, "name": name, "phone": None},
            "created": created,
        })  # fmt: skip
        st.line_items[str(session["id"])] = [
            {"id": _id("li"), "object": "item", "amount_total": amount, "amount_subtotal": amount, "currency": currency,
             "description": "Donation", "quantity": 1,
             "price": {"id": price or _id("price"), "object": "price", "product": product or _id("prod"), "currency": currency,
                       "unit_amount": amount, "active": True, "type": "one_time", "livemode": False, "created": created,
                       "billing_scheme": "per_unit", "metadata": {}}}
        ]  # fmt: skip
    return charge


def add_session(st: FakeStripe, session: dict) -> dict:
    """A Checkout Session Stripe holds (as a ``checkout.session.*`` event carries it), with what every session has."""
    made = {
        "object": "checkout.session", "payment_status": "paid", "status": "complete", "metadata": {}, "livemode": False,
        "subscription": None, "payment_link": None, "automatic_tax": {"enabled": False, "status": None},
        "cancel_url": "https://example.org/cancel", "success_url": "https://example.org/thanks",
        "expires_at": int(session.get("created") or 1_764_000_000) + 86400, "payment_method_types": ["card"],
        "shipping_options": [], **session,
    }  # fmt: skip
    st.sessions.append(made)
    return made


def add_subscription(
    st: FakeStripe,
    amount: int,
    *,
    customer: str = "cus_demo",
    email: str = "donor@example.org",
    status: str = "active",
    interval: str = "month",
    created: int = 1_764_000_000,
    currency: str = "usd",
    name: str = "Rita Recurring",
) -> dict:
    """A subscription of one monthly (or ``interval``) price, and its customer, as Stripe holds them."""
    sub_id, price_id = _id("sub"), _id("price")
    st.customers.setdefault(customer, {"id": customer, "object": "customer", "created": created, "livemode": False,
                                       "email": email, "name": name, "phone": None, "metadata": {}})  # fmt: skip
    price = {"id": price_id, "object": "price", "active": True, "billing_scheme": "per_unit", "created": created,
             "currency": currency, "livemode": False, "metadata": {}, "product": _id("prod"), "type": "recurring",
             "unit_amount": amount, "recurring": {"interval": interval, "interval_count": 1, "usage_type": "licensed",
                                                  "aggregate_usage": None, "trial_period_days": None}}  # fmt: skip
    sub = {
        "id": sub_id, "object": "subscription", "automatic_tax": {"enabled": False}, "billing_cycle_anchor": created,
        "cancel_at_period_end": False, "canceled_at": None, "collection_method": "charge_automatically", "created": created,
        "current_period_start": created, "current_period_end": created + 30 * 86400, "customer": customer,
        "livemode": False, "metadata": {}, "start_date": created, "status": status, "latest_invoice": None,
        "items": {"object": "list", "has_more": False, "url": f"/v1/subscription_items?subscription={sub_id}",
                  "data": [{"id": _id("si"), "object": "subscription_item", "created": created, "metadata": {},
                            "price": price, "quantity": 1, "subscription": sub_id}]},
        "_email": email,
    }  # fmt: skip
    st.subscriptions[sub_id] = sub
    return sub


def pay_invoice(st: FakeStripe, sub: dict, *, created: int | None = None, name: str = "Rita Recurring") -> tuple[dict, dict]:
    """The subscription's next invoice, paid by a charge: (invoice, charge)."""
    [item] = sub["items"]["data"]
    amount, currency = item["price"]["unit_amount"], item["price"]["currency"]
    created = created or sub["current_period_start"]
    invoice_id = _id("in")
    charge = add_charge(st, amount, email=sub["_email"], name=name, currency=currency, created=created, invoice=invoice_id,
                        customer=sub["customer"])  # fmt: skip
    charge["description"] = "Subscription creation" if not sub["latest_invoice"] else "Subscription update"
    invoice = {
        "id": invoice_id, "object": "invoice", "amount_due": amount, "amount_paid": amount, "amount_remaining": 0,
        "attempt_count": 1, "attempted": True, "automatic_tax": {"enabled": False, "status": None},
        "billing_reason": "subscription_create" if not sub["latest_invoice"] else "subscription_cycle",
        "charge": charge["id"], "collection_method": "charge_automatically", "created": created, "currency": currency,
        "customer": sub["customer"], "customer_email": sub["_email"], "customer_name": name, "default_tax_rates": [],
        "lines": {"object": "list", "data": [], "has_more": False, "url": f"/v1/invoices/{invoice_id}/lines"},
        "livemode": False, "metadata": {}, "paid": True, "paid_out_of_band": False, "payment_intent": charge["payment_intent"],
        "payment_settings": {"payment_method_options": None, "payment_method_types": None}, "period_end": created,
        "period_start": created, "post_payment_credit_notes_amount": 0, "pre_payment_credit_notes_amount": 0,
        "starting_balance": 0, "status": "paid", "status_transitions": {"finalized_at": created, "paid_at": created,
        "marked_uncollectible_at": None, "voided_at": None}, "subscription": sub["id"], "subtotal": amount, "total": amount,
        "total_tax_amounts": [],
    }  # fmt: skip
    st.invoices[invoice_id] = invoice
    sub["latest_invoice"] = invoice_id
    return invoice, charge


def public(obj: dict) -> dict:
    """An object as Stripe shows it (without the fake's own notes)."""
    return {k: v for k, v in obj.items() if not k.startswith("_")}


def refund_charge(st: FakeStripe, charge: dict, amount: int, *, created: int | None = None) -> dict:
    """A refund of ``amount`` of the charge: its refunded total and its refunds list grow."""
    refund = {"id": _id("re"), "object": "refund", "amount": amount, "charge": charge["id"], "currency": charge["currency"],
              "created": created or charge["created"] + 3600, "status": "succeeded", "payment_intent": charge["payment_intent"],
              "metadata": {}, "balance_transaction": None}  # fmt: skip
    charge["amount_refunded"] += amount
    charge["refunded"] = charge["amount_refunded"] >= charge["amount"]
    charge["refunds"]["data"].insert(0, refund)
    txn_id = _id("txn")
    st.balance_transactions[txn_id] = {
        "id": txn_id, "object": "balance_transaction", "amount": -amount, "fee": 0, "net": -amount,
        "currency": charge["currency"], "created": refund["created"], "available_on": refund["created"], "status": "available",
        "type": "refund", "reporting_category": "refund", "source": refund["id"], "exchange_rate": None, "fee_details": [],
    }  # fmt: skip
    refund["balance_transaction"] = txn_id
    return refund


def pay_out(st: FakeStripe, arrival_date: int, charges: list[dict]) -> dict:
    """A payout of these charges' balance transactions (and their refunds') to the bank, arriving then."""
    payout_id = _id("po")
    paid = {c["balance_transaction"] for c in charges} | {
        r["balance_transaction"] for c in charges for r in c["refunds"]["data"] if r.get("balance_transaction")
    }
    net = 0
    for txn_id in paid:
        st.balance_transactions[txn_id]["_payout"] = payout_id
        net += st.balance_transactions[txn_id]["net"]
    payout: dict = {
        "id": payout_id, "object": "payout", "amount": net, "arrival_date": arrival_date, "automatic": True,
        "created": arrival_date - 2 * 86400, "currency": charges[0]["currency"] if charges else "usd", "livemode": False,
        "metadata": {}, "method": "standard", "source_type": "card", "status": "paid", "type": "bank_account",
        "balance_transaction": None, "description": "STRIPE PAYOUT", "destination": None, "failure_balance_transaction": None,
        "failure_code": None, "failure_message": None, "original_payout": None, "reversed_by": None,
        "statement_descriptor": None,
    }  # fmt: skip
    st.payouts.append(payout)
    return payout


def event_of(kind: str, obj: dict, created: int | None = None) -> dict:
    """A Stripe event about ``obj``, as Stripe delivers it."""
    return {"id": _id("evt"), "object": "event", "api_version": "2020-08-27", "created": created or obj.get("created") or 0,
            "data": {"object": obj}, "livemode": False, "pending_webhooks": 1, "request": {"id": None, "idempotency_key": None},
            "type": kind}  # fmt: skip


create_app = api.create_app
