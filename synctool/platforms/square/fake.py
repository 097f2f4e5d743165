"""A local stand-in for Square's REST API: RetrieveOrder, SearchOrders (cursor paging), ListPayments, GetPayment, GetPaymentRefund, ListPayouts, ListPayoutEntries, webhook
subscriptions (the signature key shown only at creation or rotation),
RetrieveCustomer and ListLocations, with ``{"errors": [{category, code, detail}]}`` errors and Bearer auth.
One function per operation, each by Square's name for it and declared with its method and path."""

from __future__ import annotations

import secrets
import time
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.platform.edges import FakeApi, Operation, Refusal, found, json_body, shows

#: the event types the fake accepts in a subscription (Square's are many more)
SQUARE_EVENTS = {
    "order.created", "order.updated", "order.fulfillment.updated", "payment.created", "payment.updated",
    "refund.created", "refund.updated", "customer.created", "customer.updated", "payout.sent", "payout.paid",
}  # fmt: skip


class FakeSquare:
    def __init__(self, access_token: str = "sq-access-token"):
        self.access_token = access_token
        self.orders: dict[str, dict] = {}
        self.payments: dict[str, dict] = {}
        self.refunds: dict[str, dict] = {}
        #: payouts ``{id, location_id, status, created_at, arrival_date, amount_money}`` and their entries
        self.payouts: dict[str, dict] = {}
        self.payout_entries: dict[str, list[dict]] = {}
        #: webhook subscriptions; each one's ``signature_key`` is shown only when created or rotated
        self.subscriptions: dict[str, dict] = {}
        self.customers: dict[str, dict] = {}
        self.locations: dict[str, dict] = {
            "FPYCBCHYMXFK1": {
                "id": "FPYCBCHYMXFK1",
                "name": "Front Desk",
                "status": "ACTIVE",
                "currency": "USD",
                "timezone": "America/Los_Angeles",
            },
            "L2GIFTSHOP001": {
                "id": "L2GIFTSHOP001",
                "name": "Gift Shop",
                "status": "ACTIVE",
                "currency": "USD",
                "timezone": "America/New_York",
            },
        }
        self.requests: list[dict] = []

    def refund_payment(self, payment_id: str, cents: int, *, refund_id: str | None = None, status: str = "COMPLETED",
                       fee_cents: int = 0, at: str | None = None, reason: str = "Returned goods") -> dict:  # fmt: skip
        """What Square does when someone refunds a payment at the register or in the dashboard (reference:
        givebutter-square.md B7; the API description is silent on it): a PaymentRefund whose ``order_id`` is
        a new *return order* (itemized and custom refunds alike), that return order (``returns[]`` naming the
        sale as ``source_order_id``, ``return_amounts``, ``refunds``), and the payment's ``refund_ids`` and
        ``refunded_money`` grown by it. Several partial refunds of one payment add up, to its amount at most."""
        payment = self.payments[payment_id]
        paid = int((payment.get("total_money") or payment.get("amount_money") or {}).get("amount") or 0)
        refunded = int((payment.get("refunded_money") or {}).get("amount") or 0)
        if paid and refunded + cents > paid:
            raise ValueError(f"refunds of payment {payment_id} would exceed its {paid} cents")
        at = at or time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
        refund_id = refund_id or f"{payment_id}_{uuid.uuid4().hex[:20]}"
        return_id = f"RET{uuid.uuid4().hex[:20].upper()}"
        money = {"amount": cents, "currency": "USD"}
        refund = {
            "id": refund_id,
            "status": status,
            "amount_money": money,
            "processing_fee": [{"amount_money": {"amount": -fee_cents, "currency": "USD"}, "type": "INITIAL"}]
            if fee_cents
            else [],
            "payment_id": payment_id,
            "order_id": return_id,
            "location_id": payment.get("location_id"),
            "reason": reason,
            "created_at": at,
            "updated_at": at,
        }
        sale = payment.get("order_id")
        self.orders[return_id] = {
            "id": return_id,
            "location_id": payment.get("location_id"),
            "state": "COMPLETED",
            "created_at": at,
            "updated_at": at,
            "returns": [{"uid": uuid.uuid4().hex[:22], "source_order_id": sale}],
            "return_amounts": {"total_money": money, "tax_money": {"amount": 0, "currency": "USD"}},
            "total_money": {"amount": 0, "currency": "USD"},
            "refunds": [{"id": refund_id, "location_id": payment.get("location_id"), "transaction_id": sale,
                         "tender_id": payment_id, "reason": reason, "amount_money": money,
                         # the order's (older) Refund object says APPROVED where the PaymentRefund says COMPLETED
                         "status": {"COMPLETED": "APPROVED"}.get(status, status)}],
        }  # fmt: skip
        self.refunds[refund_id] = refund
        payment["refund_ids"] = [*payment.get("refund_ids", []), refund_id]
        payment["refunded_money"] = {"amount": refunded + cents, "currency": "USD"}
        return refund


def _error(status: int, category: str, code: str, detail: str) -> JSONResponse:
    return JSONResponse({"errors": [{"category": category, "code": code, "detail": detail}]}, status_code=status)


def guard(request: Request, sq: FakeSquare) -> JSONResponse | None:
    """Every request is recorded (``FakeSquare.requests``), then needs the access token as Bearer."""
    sq.requests.append({"at": time.time(), "method": request.method, "path": request.url.path})
    if request.headers.get("authorization") != f"Bearer {sq.access_token}":
        return _error(401, "AUTHENTICATION_ERROR", "UNAUTHORIZED", "This request could not be authorized.")
    return None


api = FakeApi(FakeSquare, guard)


def _in_window(items: list[dict], request: Request) -> list[dict]:
    """A list endpoint's ``location_id``, ``begin_time`` and ``end_time`` filters (on ``created_at``), oldest first."""
    q = request.query_params
    kept = sorted(items, key=lambda p: p.get("created_at") or "")
    if q.get("location_id"):
        kept = [p for p in kept if p.get("location_id") == q["location_id"]]
    if q.get("begin_time"):
        kept = [p for p in kept if (p.get("created_at") or "") >= q["begin_time"]]
    if q.get("end_time"):
        kept = [p for p in kept if (p.get("created_at") or "") < q["end_time"]]
    return kept


def _page(key: str, items: list[dict], start: int, limit: int) -> JSONResponse:
    """One page of a cursor-paged list (the cursor: the next item's index, as a string)."""
    result: dict[str, Any] = {key: items[start : start + limit]}
    if start + limit < len(items):
        result["cursor"] = str(start + limit)
    return JSONResponse(result)


@api.post("/v2/orders/search")
async def search_orders(request: Request, sq: FakeSquare) -> Response:
    """SearchOrders: ``location_ids`` (required), ``query.filter`` (``state_filter``, one ``date_time_filter``
    whose field the sort must name), ``query.sort``, ``cursor`` and ``limit``."""
    body = await json_body(request)
    if not body.get("location_ids"):
        return _error(400, "INVALID_REQUEST_ERROR", "BAD_REQUEST", "location_ids is required.")
    query = body.get("query") or {}
    flt, sort = query.get("filter") or {}, query.get("sort") or {}
    sort_field = str(sort.get("sort_field") or "CREATED_AT").lower()
    dated = flt.get("date_time_filter") or {}
    if len(dated) > 1:
        return _error(400, "INVALID_REQUEST_ERROR", "BAD_REQUEST", "Only one date range may be given.")
    if dated and next(iter(dated)) != sort_field:
        # SearchOrders: the sort field must name the timestamp the date filter uses (givebutter-square.md B3)
        return _error(400, "INVALID_REQUEST_ERROR", "INVALID_VALUE", "sort_field must match the date_time_filter field.")
    orders = _orders_matching(sq, body["location_ids"], flt, dated)
    orders.sort(key=lambda o: o.get(sort_field) or o.get("created_at") or "", reverse=sort.get("sort_order", "DESC") == "DESC")
    return _page("orders", orders, int(body.get("cursor") or 0), int(body.get("limit") or 500))


def _orders_matching(sq: FakeSquare, location_ids: list[str], flt: dict, dated: dict) -> list[dict]:
    orders = [o for o in sq.orders.values() if o.get("location_id") in location_ids]
    states = (flt.get("state_filter") or {}).get("states")
    if states:
        orders = [o for o in orders if o.get("state") in states]
    for field, window in dated.items():
        when = lambda o, f=field: o.get(f) or o.get("created_at") or ""  # noqa: E731
        if window.get("start_at"):
            orders = [o for o in orders if when(o) >= window["start_at"]]
        if window.get("end_at"):
            orders = [o for o in orders if when(o) <= window["end_at"]]
    return orders


# declared after SearchOrders, so that ``/v2/orders/search`` is matched before ``/v2/orders/{id}``
def _by_id(attribute: str, key: str, what: str) -> Operation[FakeSquare]:
    """``GET /v2/<kind>/{id}``: ``{key: item}`` from the fake's ``attribute``, or Square's 404."""

    async def endpoint(request: Request, sq: FakeSquare) -> Response:
        item = getattr(sq, attribute).get(request.path_params["id"])
        if not item:
            return _error(404, "INVALID_REQUEST_ERROR", "NOT_FOUND", f"{what} {request.path_params['id']} not found.")
        return JSONResponse({key: item})

    return endpoint


retrieve_order = api.get("/v2/orders/{id}")(_by_id("orders", "order", "Order"))
get_payment = api.get("/v2/payments/{id}")(_by_id("payments", "payment", "Payment"))
get_payment_refund = api.get("/v2/refunds/{id}")(_by_id("refunds", "refund", "Refund"))
retrieve_customer = api.get("/v2/customers/{id}")(_by_id("customers", "customer", "Customer"))


@api.get("/v2/refunds")
async def list_payment_refunds(request: Request, sq: FakeSquare) -> Response:
    """ListPaymentRefunds: ``begin_time`` / ``end_time`` (on ``created_at``), ``updated_at_begin_time`` /
    ``updated_at_end_time``, ``status``, ``location_id``, ``sort_field`` (CREATED_AT or UPDATED_AT),
    ``sort_order``, cursor paging."""
    q = request.query_params
    refunds = _in_window(list(sq.refunds.values()), request)
    if q.get("status"):
        refunds = [r for r in refunds if r.get("status") == q["status"]]
    field = "updated_at" if q.get("sort_field") == "UPDATED_AT" else "created_at"
    if q.get("updated_at_begin_time"):
        refunds = [r for r in refunds if (r.get("updated_at") or r.get("created_at") or "") >= q["updated_at_begin_time"]]
    if q.get("updated_at_end_time"):
        refunds = [r for r in refunds if (r.get("updated_at") or r.get("created_at") or "") <= q["updated_at_end_time"]]
    refunds.sort(key=lambda r: r.get(field) or r.get("created_at") or "", reverse=q.get("sort_order") == "DESC")
    start = int(q.get("cursor") or 0)
    return _page("refunds", refunds, start, min(int(q.get("limit") or 100), 100))


@api.get("/v2/payments")
async def list_payments(request: Request, sq: FakeSquare) -> Response:
    """ListPayments: ``begin_time`` / ``end_time`` (RFC 3339, on ``created_at``), ``location_id``,
    ``cursor``, ``limit`` (at most 100), oldest first."""
    q = request.query_params
    payments = _in_window(list(sq.payments.values()), request)
    limit = min(int(q.get("limit") or 100), 100)
    return _page("payments", payments, int(q.get("cursor") or 0), limit)


@api.get("/v2/payouts")
async def list_payouts(request: Request, sq: FakeSquare) -> Response:
    """ListPayouts: ``location_id``, ``begin_time`` / ``end_time`` (on ``created_at``)."""
    return JSONResponse({"payouts": _in_window(list(sq.payouts.values()), request)})


@api.get("/v2/payouts/{id}/payout-entries")
async def list_payout_entries(request: Request, sq: FakeSquare) -> Response:
    """ListPayoutEntries."""
    payout_id = request.path_params["id"]
    if payout_id not in sq.payouts:
        return _error(404, "INVALID_REQUEST_ERROR", "NOT_FOUND", f"Payout {payout_id} not found.")
    return JSONResponse({"payout_entries": sq.payout_entries.get(payout_id, [])})


# -- webhook subscriptions: the signature key is shown only when one is made or its key rotated ----------------


async def _subscription_body(request: Request, partial: bool = False) -> dict:
    """The body's ``subscription``, checked (``partial``: an update); Square's 400 (a ``Refusal``) when it is wrong."""
    sub = (await json_body(request)).get("subscription") or {}
    url = sub.get("notification_url")
    if (not partial or "notification_url" in sub) and not (isinstance(url, str) and url.startswith("https://")):
        raise Refusal(_error(400, "INVALID_REQUEST_ERROR", "INVALID_VALUE", "notification_url must be an https URL."))
    events = sub.get("event_types")
    if not partial or "event_types" in sub:
        if not isinstance(events, list) or not events:
            raise Refusal(_error(400, "INVALID_REQUEST_ERROR", "INVALID_VALUE", "event_types must not be empty."))
        unknown = [e for e in events if e not in SQUARE_EVENTS]
        if unknown:
            raise Refusal(_error(400, "INVALID_REQUEST_ERROR", "INVALID_VALUE", f"Unknown event type: {unknown[0]}."))
    return sub


def _public(sub: dict) -> dict:
    return {k: v for k, v in sub.items() if k != "signature_key"}


def _no_subscription() -> JSONResponse:
    return _error(404, "INVALID_REQUEST_ERROR", "NOT_FOUND", "Subscription not found.")


def _subscription(request: Request, sq: FakeSquare) -> dict:
    """The subscription the path names, or Square's 404."""
    return found(sq.subscriptions.get(request.path_params["id"]), _no_subscription)


@api.get("/v2/webhooks/subscriptions")
async def list_webhook_subscriptions(request: Request, sq: FakeSquare) -> Response:
    return JSONResponse({"subscriptions": [_public(s) for s in sq.subscriptions.values()]})


@api.post("/v2/webhooks/subscriptions")
async def create_webhook_subscription(request: Request, sq: FakeSquare) -> Response:
    """CreateWebhookSubscription: the answer is the only one to show its ``signature_key``."""
    sub = await _subscription_body(request)
    now = time.strftime("%Y-%m-%d %H:%M:%S +0000 UTC", time.gmtime())
    created = {
        "id": f"wbhk_{uuid.uuid4().hex[:20]}",
        "name": sub.get("name"),
        "enabled": sub.get("enabled", True),
        "event_types": sub["event_types"],
        "notification_url": sub["notification_url"],
        "api_version": sub.get("api_version") or "2026-08-19",
        "signature_key": secrets.token_urlsafe(16),
        "created_at": now,
        "updated_at": now,
    }
    sq.subscriptions[created["id"]] = created
    return JSONResponse({"subscription": created})


retrieve_webhook_subscription = api.get("/v2/webhooks/subscriptions/{id}")(
    shows(_subscription, lambda sub: {"subscription": _public(sub)})
)


@api.put("/v2/webhooks/subscriptions/{id}")
async def update_webhook_subscription(request: Request, sq: FakeSquare) -> Response:
    """UpdateWebhookSubscription: ``name``, ``enabled``, ``event_types``, ``notification_url``, ``api_version``."""
    sub = _subscription(request, sq)
    change = await _subscription_body(request, partial=True)
    sub.update({k: change[k] for k in ("name", "enabled", "event_types", "notification_url", "api_version") if k in change})
    return JSONResponse({"subscription": _public(sub)})


@api.delete("/v2/webhooks/subscriptions/{id}")
async def delete_webhook_subscription(request: Request, sq: FakeSquare) -> Response:
    del sq.subscriptions[_subscription(request, sq)["id"]]
    return JSONResponse({})


@api.post("/v2/webhooks/subscriptions/{id}/signature-key")
async def update_signature_key(request: Request, sq: FakeSquare) -> Response:
    """UpdateWebhookSubscriptionSignatureKey: a new key, shown this once."""
    sub = _subscription(request, sq)
    sub["signature_key"] = secrets.token_urlsafe(16)
    return JSONResponse({"signature_key": sub["signature_key"]})


@api.get("/v2/locations")
async def list_locations(request: Request, sq: FakeSquare) -> Response:
    return JSONResponse({"locations": sorted(sq.locations.values(), key=lambda loc: loc["name"])})


create_app = api.create_app
