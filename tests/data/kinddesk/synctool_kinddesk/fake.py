"""KindDesk's API as a fake: ``GET /v1/gifts`` with a Bearer key."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class FakeKind:
    def __init__(self, key: str) -> None:
        self.key = key
        self.gifts: list[dict[str, Any]] = []


def create_app(kind: FakeKind) -> Starlette:
    async def gifts(request: Request) -> JSONResponse:
        if request.headers.get("authorization") != f"Bearer {kind.key}":
            return JSONResponse({"message": "unauthenticated"}, status_code=401)
        since = request.query_params.get("since")
        after = datetime.fromisoformat(since) if since else None
        return JSONResponse(
            {"gifts": [g for g in kind.gifts if after is None or datetime.fromisoformat(g["created_at"]) >= after]}
        )

    return Starlette(routes=[Route("/v1/gifts", gifts)])
