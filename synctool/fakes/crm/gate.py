"""What every request to the fake LGL meets before its endpoint, one ASGI middleware (``Gate``):

- a path may end in ``.json`` (LGL answers both);
- the request is recorded (``FakeCrm.requests``: at, method, path, query, body, and the status it got);
- the rate limit: past ``limit`` requests in ``window_s``, a 429 with ``Retry-After`` (``rejected_429`` counts them);
- Bearer authentication, with LGL's two 401 bodies (no header: HTTP Basic's text; a wrong key: OAuth's JSON);
- the faults ``POST /_fake/faults`` asked for: a 500 page, a ``timeout``, a commit then a timeout
  (``commit_timeout``), a commit then a 500 page (``commit_500``), or a commit that lands after the client gave up
  (``late_commit``);
- an endpoint's ``ValueError`` or ``KeyError`` (a body that is not a JSON object, say) is a 400 ``Bad Request``.

The fake's own ``/_fake/`` routes pass straight through.

A ``timeout`` or ``commit_timeout`` fault keeps the answer back ``timeout_sleep_s``. A request made in this process
(``fakes.transport.AppTransport``) whose client would give up sooner gets its answer at once, marked lost: the
transport raises the ``ReadTimeout`` the client would have met after waiting, the write landed (or not) exactly as
over a socket, without the test sitting out a timeout. Over a socket, or for a patient client, the fake waits.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from synctool.fakes.crm.reference import API
from synctool.fakes.crm.state import FakeCrm
from synctool.fakes.transport import ANSWER_LOST, gives_up_before

INVALID_TOKEN = "The access token provided is expired, revoked, malformed or invalid for other reasons."


class Gate:
    def __init__(self, app: ASGIApp, crm: FakeCrm) -> None:
        self.app = app
        self.crm = crm

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith("/_fake/"):
            await self.app(scope, receive, send)
            return
        if scope["path"].endswith(".json"):
            scope = dict(scope, path=scope["path"][:-5])
        request = Request(scope, receive)
        entry, body = await self.recorded(request)
        over, fault = self.admit(entry, request)
        refusal = self.refusal(request, over, fault)
        lost = gives_up_before(scope, self.crm.timeout_sleep_s)
        if refusal is None and fault == "timeout":
            if not lost:
                await asyncio.sleep(self.crm.timeout_sleep_s)
            refusal = JSONResponse({"error": "late"}, status_code=504, headers={ANSWER_LOST: "1"} if lost else None)
        if refusal is None:
            start, content = await self.answer(scope, body, fault, lost)
            if fault != "commit_500":
                entry["status"] = start["status"]
                await send(start)
                await send({"type": "http.response.body", "body": content})
                return
            refusal = self.refusal(request, False, "500")  # the write happened; the answer is the error page
            assert refusal is not None
        entry["status"] = refusal.status_code
        await refusal(scope, receive, send)

    async def recorded(self, request: Request) -> tuple[dict[str, Any], bytes]:
        """The request's entry in ``FakeCrm.requests`` (its status to come), and its body."""
        entry: dict[str, Any] = {
            "at": time.time(),
            "method": request.method,
            "path": request.scope["path"],
            "query": list(request.query_params.multi_items()),
            "status": None,
            "body": None,
        }
        body = await request.body()
        if body:
            try:
                entry["body"] = json.loads(body)
            except ValueError:
                entry["body"] = body.decode("utf-8", "replace")
        return entry, body

    def admit(self, entry: dict[str, Any], request: Request) -> tuple[bool, str | None]:
        """Under one lock: record the request, count it against the rate limit (whether it is over), and take the
        first fault that matches it (whatever the answer)."""
        crm, now = self.crm, entry["at"]
        with crm.lock:
            crm.requests.append(entry)
            while crm.recent and crm.recent[0] <= now - crm.window_s:
                crm.recent.popleft()
            over = len(crm.recent) >= crm.limit
            if over:
                crm.rejected_429 += 1
            else:
                crm.recent.append(now)
            return over, self.fault_for(request)

    def fault_for(self, request: Request) -> str | None:
        for fault in self.crm.faults:
            if (
                fault["count"] > 0
                and (not fault["method"] or fault["method"] == request.method)
                and (not fault["path"] or fault["path"] in request.scope["path"])
            ):
                fault["count"] -= 1
                return fault["mode"]
        return None

    def refusal(self, request: Request, over: bool, fault: str | None) -> Response | None:
        """The answer instead of the endpoint's: over the rate limit, not authenticated, or a 500 fault."""
        auth = request.headers.get("authorization", "")
        if over:
            return JSONResponse(
                {"error": "Too Many Requests", "description": "rate limit exceeded"},
                status_code=429,
                headers={"Retry-After": "1"},
            )
        if not auth:
            return PlainTextResponse(
                "HTTP Basic: Access denied.\n", status_code=401, headers={"WWW-Authenticate": 'Basic realm="API"'}
            )
        if auth != f"Bearer {self.crm.api_key}":
            return JSONResponse(
                {"error": "invalid_token", "error_description": INVALID_TOKEN},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="Rack::OAuth2 Protected Resources", error="invalid_token"'},
            )
        if fault == "500":
            return PlainTextResponse(
                "<html><body><h1>We're sorry, but something went wrong.</h1></body></html>",
                status_code=500,
                media_type="text/html",
            )
        return None

    async def answer(self, scope: Scope, body: bytes, fault: str | None, lost: bool) -> tuple[Message, bytes]:
        """The endpoint's answer (its start message and body), made as the fault says."""
        captured: dict[str, Any] = {}

        async def replay() -> Message:
            return {"type": "http.request", "body": body, "more_body": False}

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                captured["start"] = message
            else:
                captured["body"] = captured.get("body", b"") + message.get("body", b"")

        if fault == "late_commit":  # a slow CRM: the client gives up, the write lands later
            await asyncio.sleep(self.crm.timeout_sleep_s * 2)
        try:
            await self.app(scope, replay, capture)
        except (ValueError, KeyError) as exc:
            captured = {
                "start": {"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"application/json")]},
                "body": json.dumps({**API, "error": "Bad Request", "description": str(exc)}).encode(),
            }
        if fault == "commit_timeout":  # the write happened; the answer never arrives in time
            if lost:
                captured["start"] = dict(captured["start"], headers=[*captured["start"]["headers"], (ANSWER_LOST.encode(), b"1")])
            else:
                await asyncio.sleep(self.crm.timeout_sleep_s)
        return captured["start"], captured.get("body", b"")
