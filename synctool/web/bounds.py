"""What every request may bring: a body up to a limit, and a query string without control characters.

A body is read as it streams and refused past its limit (413), whatever the client declared, so an
unauthenticated form costs at most its limit in memory. A query string whose decoded text holds a control
character (NUL, ESC, a newline...) is refused before any page or operation sees it (400): no search box, page
number or filter has a use for one, and some (a NUL in SQLite's full-text query) would be an error deeper in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import unquote_to_bytes

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from synctool.errors import PayloadTooLarge

#: how much of a refused body is read (and dropped) so its sender gets the 413 instead of a reset
DISCARD_BYTES = 16 * 1024 * 1024


async def _discard(chunks: AsyncIterator[bytes], budget: int) -> None:
    """Read what is left of a refused body from the stream already being read (a request's stream can be
    iterated once). Answering while the client still sends, then closing, makes the kernel reset the
    connection (unread data), and the client sees no answer at all."""
    async for chunk in chunks:
        budget -= len(chunk)
        if budget < 0:
            return


async def read_body(request: Request, limit: int) -> bytes:
    """The body, or PayloadTooLarge once it is over ``limit`` bytes, declared (Content-Length) or streamed
    (chunked)."""
    too_large = PayloadTooLarge("payload too large", f"the limit is {limit} bytes")
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        if int(declared) <= DISCARD_BYTES:
            await _discard(request.stream(), DISCARD_BYTES)
        raise too_large
    # counted as it streams, declared or not: a server may read a chunked body despite a small Content-Length
    # (h11 takes both headers and reads the chunks)
    chunks = []
    size = 0
    stream = request.stream()
    async for chunk in stream:
        size += len(chunk)
        if size > limit:
            await _discard(stream, DISCARD_BYTES - size)
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def control_characters(query: bytes) -> bool:
    """Whether a raw query string, once %-decoded (``+`` is a space), holds a C0 control character or DEL."""
    decoded = unquote_to_bytes(query.replace(b"+", b" "))
    return any(byte < 0x20 or byte == 0x7F for byte in decoded)


class QueryGuard:
    """ASGI middleware: a request whose query string holds a control character gets ``refuse(request)`` (a 400
    in the caller's own form: JSON for the receiver and the admin API, a page for the staff page)."""

    def __init__(self, app: ASGIApp, refuse: Callable[[Request], Awaitable[Response]], *, leave: str | None = None) -> None:
        self.app = app
        self.refuse = refuse
        self.leave = leave  # a mounted app under this path guards itself (the staff page answers with a page)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, root = scope.get("path", ""), scope.get("root_path", "")
        if root and path.startswith(root):  # the path under its mount (an organisation's app on a host: /o/NAME)
            path = path[len(root) :]
        if self.leave and (path == self.leave or path.startswith(self.leave + "/")):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http" and control_characters(scope.get("query_string", b"")):
            response = await self.refuse(Request(scope, receive))
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
