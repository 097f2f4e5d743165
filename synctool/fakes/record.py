"""Every exchange with a fake, kept for the contract tests: method, path, query, content type, request body,
status, response body. An ASGI wrapper, so it sees what travels, whether over a socket or in process."""

from __future__ import annotations

from typing import TypedDict

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class Exchange(TypedDict):
    """One request to a fake and its answer, as they travelled."""

    method: str
    path: str
    query: str
    content_type: str
    body: bytes
    status: int | None
    response: bytes


class Recorder:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.exchanges: list[Exchange] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        exchange: Exchange = {
            "method": scope["method"],
            "path": scope["path"],
            "query": scope.get("query_string", b"").decode("latin-1"),
            "content_type": headers.get("content-type", ""),
            "body": b"",
            "status": None,
            "response": b"",
        }

        async def recv() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                exchange["body"] += message.get("body", b"")
            return message

        async def snd(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange["status"] = message["status"]
            elif message["type"] == "http.response.body":
                exchange["response"] += message.get("body", b"")
            await send(message)

        self.exchanges.append(exchange)
        await self.app(scope, recv, snd)
