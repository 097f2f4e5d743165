"""A local stand-in for Stripe's webhook endpoints API (``/v1/webhook_endpoints``): form-encoded bodies,
Bearer ``sk_...`` auth, ``{"error": {type, message, param}}`` errors, and each endpoint's signing secret
returned only when it is created."""

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

    app = Starlette(
        routes=[
            Route("/v1/webhook_endpoints", endpoints, methods=["GET", "POST"]),
            Route("/v1/webhook_endpoints/{id}", endpoint, methods=["GET", "POST", "DELETE"]),
        ]
    )
    app.state.fake = st
    return app
