"""A local stand-in for Stripe's webhook endpoints API (``/v1/webhook_endpoints``): form-encoded bodies,
Bearer ``sk_...`` auth, ``{"error": {type, message, param}}`` errors, and each endpoint's signing secret
returned only when it is created; and its events list (``GET /v1/events`` with ``delivery_success``,
``type``/``types[]``, ``created[gte|gt|lte|lt]``, ``limit`` and ``starting_after``), newest first. ``ROUTES``
names one function per operation."""

from __future__ import annotations

import secrets
import time
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.fakes.routing import Row
from synctool.platforms.fake import serve

#: the events the fake accepts (Stripe's list is much longer)
EVENTS = {
    "checkout.session.completed", "checkout.session.async_payment_succeeded", "checkout.session.async_payment_failed",
    "payment_intent.succeeded", "payment_intent.payment_failed", "charge.refunded", "charge.succeeded", "*",
}  # fmt: skip


class FakeStripe:
    def __init__(self, api_key: str = "sk_test_fake"):
        self.api_key = api_key
        self.endpoints: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []
        #: events of the last 30 days (``Event``) and whether each reached every endpoint
        self.events: list[dict] = []
        self.delivered: dict[str, bool] = {}

    def add_event(self, event: dict, *, delivered: bool) -> dict:
        """An event Stripe made; ``delivered`` False: every attempt to deliver it failed (or is pending)."""
        self.events.append(event)
        self.delivered[event["id"]] = delivered
        return event


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"type": "invalid_request_error", "message": message, "param": param}}, status_code=status)


def _stripe(request: Request) -> FakeStripe:
    return request.app.state.fake


def guard(request: Request) -> JSONResponse | None:
    """Every request is recorded (``FakeStripe.requests``), then needs the secret key as Bearer."""
    st = _stripe(request)
    st.requests.append((request.method, request.url.path))
    if request.headers.get("authorization") != f"Bearer {st.api_key}":
        return JSONResponse({"error": {"type": "invalid_request_error", "message": "Invalid API Key provided."}}, status_code=401)
    return None


async def _checked(request: Request, partial: bool) -> dict | JSONResponse:
    """An endpoint's form-encoded ``url``, ``enabled_events[]`` and ``disabled``, checked (``partial``: an update)."""
    form = parse_qs((await request.body()).decode())  # Stripe's bodies are form-encoded
    url = form["url"][0] if form.get("url") else None
    events = form.get("enabled_events[]") or []
    if (not partial or url is not None) and not (isinstance(url, str) and url.startswith("https://")):
        return _error(400, "Invalid URL: must be an https URL.", "url")
    if (not partial or events) and not events:
        return _error(400, "Missing required param: enabled_events.", "enabled_events")
    unknown = [e for e in events if e not in EVENTS]
    if unknown:
        return _error(400, f"Invalid enabled_events: {unknown[0]} is not a valid event.", "enabled_events")
    return {"url": url, "events": events, "disabled": form["disabled"][0] if form.get("disabled") else None}


def _public(endpoint: dict) -> dict:
    return {k: v for k, v in endpoint.items() if k != "secret"}


async def list_webhook_endpoints(request: Request) -> Response:
    listed = [_public(e) for e in _stripe(request).endpoints.values()]
    return JSONResponse({"object": "list", "data": listed, "has_more": False, "url": "/v1/webhook_endpoints"})


async def create_webhook_endpoint(request: Request) -> Response:
    """The answer is the only one to show the endpoint's signing ``secret``."""
    body = await _checked(request, partial=False)
    if isinstance(body, JSONResponse):
        return body
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
    _stripe(request).endpoints[endpoint["id"]] = endpoint
    return JSONResponse(endpoint)


def _endpoint(request: Request) -> dict | None:
    return _stripe(request).endpoints.get(request.path_params["id"])


def _no_endpoint(request: Request) -> JSONResponse:
    return _error(404, f"No such webhook endpoint: '{request.path_params['id']}'", "id")


async def retrieve_webhook_endpoint(request: Request) -> Response:
    found = _endpoint(request)
    return _no_endpoint(request) if found is None else JSONResponse(_public(found))


async def update_webhook_endpoint(request: Request) -> Response:
    """``url``, ``enabled_events[]``, ``disabled`` ("true" or "false")."""
    found = _endpoint(request)
    if found is None:
        return _no_endpoint(request)
    body = await _checked(request, partial=True)
    if isinstance(body, JSONResponse):
        return body
    if body["url"]:
        found["url"] = body["url"]
    if body["events"]:
        found["enabled_events"] = body["events"]
    if body["disabled"] is not None:
        found["status"] = "disabled" if body["disabled"] == "true" else "enabled"
    return JSONResponse(_public(found))


async def delete_webhook_endpoint(request: Request) -> Response:
    found = _endpoint(request)
    if found is None:
        return _no_endpoint(request)
    del _stripe(request).endpoints[found["id"]]
    return JSONResponse({"id": found["id"], "object": "webhook_endpoint", "deleted": True})


#: ``created[<op>]``: how an event's ``created`` compares with the bound
CREATED = (("gte", lambda a, b: a >= b), ("gt", lambda a, b: a > b), ("lte", lambda a, b: a <= b), ("lt", lambda a, b: a < b))


async def list_events(request: Request) -> Response:
    """``delivery_success``, ``type`` / ``types[]``, ``created[gte|gt|lte|lt]``, ``starting_after``, ``limit``;
    newest first."""
    st, q = _stripe(request), request.query_params
    found = sorted(st.events, key=lambda e: e.get("created") or 0, reverse=True)
    if q.get("delivery_success") in ("true", "false"):
        wanted = q["delivery_success"] == "true"
        found = [e for e in found if st.delivered.get(e["id"], True) == wanted]
    types = q.getlist("types[]") or ([q["type"]] if q.get("type") else [])
    if types:
        found = [e for e in found if e.get("type") in types]
    for op, keep in CREATED:
        if q.get(f"created[{op}]"):
            try:
                bound = int(q[f"created[{op}]"])
            except ValueError:
                return _error(400, f"Invalid integer: {q[f'created[{op}]']}", f"created[{op}]")
            found = [e for e in found if keep(int(e.get("created") or 0), bound)]
    if q.get("starting_after"):
        ids = [e["id"] for e in found]
        found = found[ids.index(q["starting_after"]) + 1 :] if q["starting_after"] in ids else []
    limit = min(int(q.get("limit") or 10), 100)
    return JSONResponse({"object": "list", "data": found[:limit], "has_more": len(found) > limit, "url": "/v1/events"})


ROUTES: list[Row] = [
    ("GET", "/v1/events", list_events),
    ("GET", "/v1/webhook_endpoints", list_webhook_endpoints),
    ("POST", "/v1/webhook_endpoints", create_webhook_endpoint),
    ("GET", "/v1/webhook_endpoints/{id}", retrieve_webhook_endpoint),
    ("POST", "/v1/webhook_endpoints/{id}", update_webhook_endpoint),
    ("DELETE", "/v1/webhook_endpoints/{id}", delete_webhook_endpoint),
]


def create_app(st: FakeStripe | None = None) -> Starlette:
    return serve(ROUTES, guard, st or FakeStripe())
