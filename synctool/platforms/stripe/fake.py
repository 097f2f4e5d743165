"""A local stand-in for Stripe's webhook endpoints API (``/v1/webhook_endpoints``): form-encoded bodies,
Bearer ``sk_...`` auth, ``{"error": {type, message, param}}`` errors, and each endpoint's signing secret
returned only when it is created; and its events list (``GET /v1/events`` with ``delivery_success``,
``type``/``types[]``, ``created[gte|gt|lte|lt]``, ``limit`` and ``starting_after``), newest first. One function
per operation, each declared with its method and path."""

from __future__ import annotations

import secrets
import time
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

        #: the account's own payments (the stripe-donations platform reads them; ``fake_payments.py`` adds them)
        self.charges: list[dict] = []
        self.balance_transactions: dict[str, dict] = {}
        self.sessions: list[dict] = []
        self.line_items: dict[str, list[dict]] = {}
        self.invoices: dict[str, dict] = {}
        self.subscriptions: dict[str, dict] = {}
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


from synctool.platforms.stripe import fake_payments  # noqa: E402, F401  (its operations, declared on ``api``)

create_app = api.create_app
