"""An httpx transport that hands each request to an ASGI app in this process: the fakes without a socket.

httpx's own ``ASGITransport`` is async only, and synctool's clients are sync. This one runs the app on
one event loop in a background thread and waits for each answer as long as the request's read timeout
allows, so a fake that is told to be slow makes the client time out exactly as it would over the network,
while the app goes on (and commits) behind it. A fake may spare the wait: a request made this way carries its
read timeout in the ASGI scope (``IN_PROCESS``; a socket's requests never do, whatever their headers say), and
where the fake would answer later than that (``gives_up_before``) it may answer at once marked ``ANSWER_LOST``:
the client meets the same ``ReadTimeout``, after the write landed or not (the LGL fake's ``timeout`` /
``commit_timeout`` faults).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import httpx
from starlette.types import ASGIApp, Receive, Scope, Send

#: the ASGI scope extension of a request made through ``AppTransport``: ``{"read_timeout": seconds or None}``
IN_PROCESS = "synctool.in_process"
#: the answer header by which a fake says the client would not have had this answer in time
ANSWER_LOST = "x-fake-answer-lost"
#: how the read timeout travels from the transport to ``_InProcess`` (taken off before the app sees the request)
_READ_TIMEOUT = b"x-fake-read-timeout"


def gives_up_before(scope: Scope, seconds: float) -> bool:
    """Whether the request came through ``AppTransport`` from a client that stops waiting sooner than ``seconds``."""
    found = (scope.get("extensions") or {}).get(IN_PROCESS)
    return found is not None and found["read_timeout"] is not None and found["read_timeout"] < seconds


class _InProcess:
    """Puts the client's read timeout, sent by ``AppTransport`` as a header, into the scope as ``IN_PROCESS``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = next((value for name, value in scope["headers"] if name == _READ_TIMEOUT), b"")
            scope = dict(
                scope,
                headers=[(name, value) for name, value in scope["headers"] if name != _READ_TIMEOUT],
                extensions={**(scope.get("extensions") or {}), IN_PROCESS: {"read_timeout": float(raw) if raw else None}},
            )
        await self.app(scope, receive, send)


class AppTransport(httpx.BaseTransport):
    def __init__(self, app: ASGIApp) -> None:
        self._asgi = httpx.ASGITransport(app=_InProcess(app))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._start_lock = threading.Lock()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        with self._start_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, daemon=True, name="fake-app").start()
                self._loop = loop
            return self._loop

    async def _send(self, request: httpx.Request) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        response = await self._asgi.handle_async_request(request)
        body = await response.aread()
        return response.status_code, response.headers.raw, body

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        timeout = (request.extensions.get("timeout") or {}).get("read")
        headers = request.headers.copy()
        if timeout is not None:
            headers[_READ_TIMEOUT.decode()] = str(timeout)
        copy = httpx.Request(request.method, request.url, headers=headers, content=body)
        future = asyncio.run_coroutine_threadsafe(self._send(copy), self._event_loop())
        try:
            status, answer_headers, content = future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            raise httpx.ReadTimeout("the fake did not answer within the read timeout", request=request) from None
        if any(name.lower() == ANSWER_LOST.encode() for name, _ in answer_headers):
            raise httpx.ReadTimeout("the fake lost its answer (as if past the read timeout)", request=request)
        return httpx.Response(status, headers=answer_headers, content=content, request=request)

    def close(self) -> None:
        pass  # the loop thread is shared by every client of this fake and ends with the process
