"""A local stand-in for Stripe's webhook endpoints API (``/v1/webhook_endpoints``): form-encoded bodies,
Bearer ``sk_...`` auth, ``{"error": {type, message, param}}`` errors, and each endpoint's signing secret
returned only when it is created; and its events list (``GET /v1/events`` with ``delivery_success``,
``type``/``types[]``, ``created[gte|gt|lte|lt]``, ``limit`` and ``starting_after``), newest first."""

from __future__ import annotations

import secrets
import time
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

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


def create_app(st: FakeStripe | None = None) -> Starlette:
    st = st or FakeStripe()

    def guard(request: Request) -> JSONResponse | None:
        st.requests.append((request.method, request.url.path))
        if request.headers.get("authorization") != f"Bearer {st.api_key}":
            return JSONResponse(
                {"error": {"type": "invalid_request_error", "message": "Invalid API Key provided."}}, status_code=401
            )
        return None

    async def checked(request: Request, partial: bool) -> dict | JSONResponse:
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

    async def endpoints(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        if request.method == "GET":
            listed = [{k: v for k, v in e.items() if k != "secret"} for e in st.endpoints.values()]
            return JSONResponse({"object": "list", "data": listed, "has_more": False, "url": "/v1/webhook_endpoints"})
        body = await checked(request, partial=False)
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
        st.endpoints[endpoint["id"]] = endpoint
        return JSONResponse(endpoint)

    async def endpoint(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        found = st.endpoints.get(request.path_params["id"])
        if found is None:
            return _error(404, f"No such webhook endpoint: '{request.path_params['id']}'", "id")
        if request.method == "DELETE":
            del st.endpoints[found["id"]]
            return JSONResponse({"id": found["id"], "object": "webhook_endpoint", "deleted": True})
        if request.method == "POST":
            body = await checked(request, partial=True)
            if isinstance(body, JSONResponse):
                return body
            if body["url"]:
                found["url"] = body["url"]
            if body["events"]:
                found["enabled_events"] = body["events"]
            if body["disabled"] is not None:
                found["status"] = "disabled" if body["disabled"] == "true" else "enabled"
        return JSONResponse({k: v for k, v in found.items() if k != "secret"})

    async def events(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        q = request.query_params
        found = sorted(st.events, key=lambda e: e.get("created") or 0, reverse=True)
        if q.get("delivery_success") in ("true", "false"):
            wanted = q["delivery_success"] == "true"
            found = [e for e in found if st.delivered.get(e["id"], True) == wanted]
        types = q.getlist("types[]") or ([q["type"]] if q.get("type") else [])
        if types:
            found = [e for e in found if e.get("type") in types]
        for op, keep in (
            ("gte", lambda a, b: a >= b),
            ("gt", lambda a, b: a > b),
            ("lte", lambda a, b: a <= b),
            ("lt", lambda a, b: a < b),
        ):
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

    app = Starlette(
        routes=[
            Route("/v1/events", events),
            Route("/v1/webhook_endpoints", endpoints, methods=["GET", "POST"]),
            Route("/v1/webhook_endpoints/{id}", endpoint, methods=["GET", "POST", "DELETE"]),
        ]
    )
    app.state.fake = st
    return app
