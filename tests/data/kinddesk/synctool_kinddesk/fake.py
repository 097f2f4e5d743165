"""KindDesk's API as a fake, for the tests, the demo and ``check_platform``: every request needs the Bearer key.

``GET /v1/gifts?since=&until=``, ``GET /v1/gifts/{id}``, ``GET /v1/payouts?since=&until=``, ``GET
/v1/deliveries?status=failed&since=``, ``GET|POST /v1/webhooks``, ``PUT /v1/webhooks/{id}``."""

from __future__ import annotations

import secrets
from datetime import datetime
from decimal import Decimal
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class FakeKind:
    """KindDesk's state: its gifts (each with its ``refunds``), its payouts, the deliveries it failed to make
    and its webhook registrations."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.gifts: list[dict[str, Any]] = []
        self.payouts: list[dict[str, Any]] = []
        self.failed: list[dict[str, Any]] = []
        self.webhooks: list[dict[str, Any]] = []

    def refund(self, gift_id: str, refund_id: str, amount: str, created_at: str) -> dict[str, Any]:
        """Refund part of a gift, as KindDesk records it; returns the refund (what its webhook carries)."""
        gift = next(g for g in self.gifts if g["id"] == gift_id)
        refund = {"id": refund_id, "gift_id": gift_id, "amount": amount, "created_at": created_at}
        gift.setdefault("refunds", []).append({k: v for k, v in refund.items() if k != "gift_id"})
        return refund


def _moment(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def create_app(kind: FakeKind) -> Starlette:
    def authorised(request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {kind.key}"

    def refused() -> JSONResponse:
        return JSONResponse({"message": "unauthenticated"}, status_code=401)

    async def gifts(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        after, before = (_moment(request.query_params.get(k)) for k in ("since", "until"))
        listed = [
            g
            for g in kind.gifts
            if (after is None or _moment(g["created_at"]) >= after) and (before is None or _moment(g["created_at"]) < before)  # type: ignore[operator]
        ]
        return JSONResponse({"gifts": listed})

    async def gift(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        found = next((g for g in kind.gifts if g["id"] == request.path_params["gift_id"]), None)
        return JSONResponse(found) if found else JSONResponse({"message": "no such gift"}, status_code=404)

    async def payouts(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        since, until = request.query_params.get("since", ""), request.query_params.get("until", "9999")
        return JSONResponse({"payouts": [p for p in kind.payouts if since <= p["arrival_date"] <= until]})

    async def deliveries(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        return JSONResponse({"deliveries": kind.failed})

    async def webhooks(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        if request.method == "POST":
            body = await request.json()
            made = {"id": f"wh_{len(kind.webhooks) + 1}", "url": body["url"], "events": body["events"], "enabled": True,
                    "secret": secrets.token_hex(16)}  # fmt: skip
            kind.webhooks.append(made)
            return JSONResponse(made, status_code=201)
        return JSONResponse({"webhooks": [{k: v for k, v in w.items() if k != "secret"} for w in kind.webhooks]})

    async def webhook(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        found = next((w for w in kind.webhooks if w["id"] == request.path_params["webhook_id"]), None)
        if found is None:
            return JSONResponse({"message": "no such webhook"}, status_code=404)
        found.update(await request.json())
        return JSONResponse({k: v for k, v in found.items() if k != "secret"})

    return Starlette(
        routes=[
            Route("/v1/gifts", gifts),
            Route("/v1/gifts/{gift_id}", gift),
            Route("/v1/payouts", payouts),
            Route("/v1/deliveries", deliveries),
            Route("/v1/webhooks", webhooks, methods=["GET", "POST"]),
            Route("/v1/webhooks/{webhook_id}", webhook, methods=["PUT"]),
        ]
    )


def payout(payout_id: str, arrival_date: str, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """A payout as KindDesk lists it: its lines (``gift_id``, ``gross``, ``fee``, ``refund``) and its net."""
    net = sum(
        (Decimal(line["gross"]) - Decimal(line.get("fee", "0")) - Decimal(line.get("refund", "0")) for line in lines), Decimal(0)
    )
    return {"id": payout_id, "arrival_date": arrival_date, "net": str(net), "lines": lines}
