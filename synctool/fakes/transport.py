"""An httpx transport that hands each request to an ASGI app in this process: the fakes without a socket.

httpx's own ``ASGITransport`` is async only, and synctool's clients are sync. This one runs the app on
one event loop in a background thread and waits for each answer as long as the request's read timeout
allows, so a fake that is told to be slow makes the client time out exactly as it would over the network,
while the app goes on (and commits) behind it. A fake that knows the request came this way (``IN_PROCESS``)
may instead mark an answer as lost (``ANSWER_LOST``) at once: the client meets the same ``ReadTimeout``
without the wait (the LGL fake's ``timeout`` / ``commit_timeout`` faults).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import httpx
from starlette.types import ASGIApp

#: the request header this transport adds, and the answer header that tells it the answer was lost
IN_PROCESS = "x-fake-in-process"
ANSWER_LOST = "x-fake-answer-lost"


class AppTransport(httpx.BaseTransport):
    def __init__(self, app: ASGIApp) -> None:
        self._asgi = httpx.ASGITransport(app=app)
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
        headers = request.headers.copy()
        headers[IN_PROCESS] = "1"
        copy = httpx.Request(request.method, request.url, headers=headers, content=body)
        timeout = (request.extensions.get("timeout") or {}).get("read")
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
