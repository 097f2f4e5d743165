"""A local stand-in for Givebutter's REST API v1: transactions (with the ``createdAfter``,
``transactedAfter`` and ``transactedBefore`` filters),
campaigns and their members (peer-to-peer fundraisers), tickets, payouts and webhooks (the signing secret returned as ``signature``), Laravel-style paging (``per_page`` at most 100), ``{"message"}`` errors, Bearer
auth, and an optional rate limit answered with 429 and ``Retry-After``."""

from __future__ import annotations

import json
import secrets
import time
import uuid
from datetime import datetime

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

#: the live API's webhook event enum
WEBHOOK_EVENTS = {
    "campaign.created", "campaign.updated", "ticket.created", "transaction.succeeded", "contact.created",
    "plan.canceled", "plan.created", "plan.failed", "plan.paused", "plan.resumed", "plan.updated", "refund.created",
}  # fmt: skip


class FakeGivebutter:
    def __init__(self, api_key: str = "gb-api-key"):
        self.api_key = api_key
        self.transactions: dict[str, dict] = {}
        self.campaigns: dict[int, dict] = {}
        #: peer-to-peer fundraisers (``CampaignMemberResource``), by (campaign id, member id)
        self.members: dict[tuple[int, int], dict] = {}
        self.tickets: dict[str, dict] = {}
        #: bank deposits: ``{id, amount, fee, status, paid_at, created_at}``; transactions name theirs by ``payout_id``
        self.payouts: dict[str, dict] = {}
        #: registered webhooks (``WebhookResource``: id, name, events, enabled, url, signature, ...)
        self.webhooks: dict[str, dict] = {}
        #: each webhook's delivery history (``WebhookActivityResource``), newest last
        self.activities: dict[str, list[dict]] = {}
        self.requests: list[dict] = []
        self.throttle_next = 0  # answer this many requests with 429

    def record_delivery(self, event: str, data: dict, *, failed: bool, at: str | None = None) -> dict:
        """Record an attempt to deliver ``event`` to every webhook that takes it, as Givebutter's activities
        list shows it: the payload it sent, and whether the receiver took it. ``failed`` says the receiver
        never got it (the tests' "the delivery failed"); the status words are not enumerated by the API
        description, so "failed" and "success" are this fake's."""
        at = at or datetime.now().astimezone().isoformat(timespec="seconds")
        envelope = {"id": f"evt_{uuid.uuid4().hex[:16]}", "event": event, "data": data}
        made = {}
        for hook in self.webhooks.values():
            if event not in hook["events"]:
                continue
            made = {
                "id": str(uuid.uuid4()), "webhook_id": hook["id"], "status": "failed" if failed else "success",
                "status_description": "Connection timed out" if failed else "200 OK", "event": event, "url": hook["url"],
                "payload": envelope, "response": None if failed else [], "created_at": at, "updated_at": at,
            }  # fmt: skip
            self.activities.setdefault(hook["id"], []).append(made)
        return made

    def add_member(self, campaign_id: int, member: dict) -> dict:
        """A fundraiser on a campaign, with every field the description requires."""
        now = datetime.now().astimezone().isoformat(timespec="seconds")
        first, last = member.get("first_name", ""), member.get("last_name", "")
        full = {
            "display_name": f"{first} {last}".strip(), "email": "", "phone": "", "picture": "", "raised": 0, "goal": 0,
            "donors": 0, "items": 0, "url": f"https://givebutter.com/c/{campaign_id}/{member['id']}", "created_at": now,
            "updated_at": now, "first_name": first, "last_name": last, **member, "id": str(member["id"]),
        }  # fmt: skip
        self.members[(int(campaign_id), int(member["id"]))] = full
        return full

    def refund_transaction(self, txn_id: str) -> dict:
        """Refund a transaction's parts as Givebutter records it: each part ``refunded`` with ``refunded_at``, and
        the transaction's ``updated_at`` moved (which ``updatedAfter`` filters on). No webhook is sent."""
        txn = self.transactions[txn_id]
        now = datetime.now().astimezone().isoformat(timespec="seconds")
        txn["transactions"] = [{**t, "refunded": True, "refunded_at": now} for t in txn.get("transactions") or []]
        txn["updated_at"] = now  # the resource itself has no refunded flag (its description): its parts do
        return txn

    def add_transaction(self, txn: dict) -> dict:
        self.transactions[txn["id"]] = txn
        return txn


def _payout(stored: dict) -> dict:
    """A payout as Givebutter's PayoutResource describes it, from what a test or the demo stored."""
    amount = stored.get("amount") or 0
    when = stored.get("paid_at") or stored.get("created_at")
    return {
        "campaign_id": None, "method": "bank", "status": "paid", "fee": 0, "tip": 0, "payout": amount, "currency": "USD",
        "address": None, "memo": None, "expected_at": when, "paid_at": when, "created_at": when, "updated_at": when, **stored,
    }  # fmt: skip


def _page(items: list, request: Request) -> JSONResponse:
    try:
        per_page = int(request.query_params.get("per_page", 20))
        page = int(request.query_params.get("page", 1))
    except ValueError:
        return JSONResponse({"message": "The per page must be an integer."}, status_code=422)
    if per_page > 100 or per_page < 1:
        return JSONResponse(
            {
                "message": "The per page field must not be greater than 100.",
                "errors": {"per_page": ["The per page field must not be greater than 100."]},
            },
            status_code=422,
        )
    last = max(1, (len(items) + per_page - 1) // per_page)
    chunk = items[(page - 1) * per_page : page * per_page]
    base = str(request.url).split("?")[0]
    return JSONResponse(
        {
            "data": chunk,
            "links": {
                "first": f"{base}?page=1",
                "last": f"{base}?page={last}",
                "prev": f"{base}?page={page - 1}" if page > 1 else None,
                "next": f"{base}?page={page + 1}" if page < last else None,
            },
            "meta": {  # Laravel's paginator, as Givebutter's description has it
                "current_page": page,
                "from": (page - 1) * per_page + 1 if chunk else None,
                "last_page": last,
                "links": [{"url": f"{base}?page={n}", "label": str(n), "active": n == page} for n in range(1, min(last, 10) + 1)],
                "path": base,
                "per_page": per_page,
                "to": (page - 1) * per_page + len(chunk) if chunk else None,
                "total": len(items),
                "unfiltered_total": len(items),
            },
        }
    )


def create_app(gb: FakeGivebutter | None = None) -> Starlette:
    gb = gb or FakeGivebutter()

    def guard(request: Request) -> JSONResponse | None:
        gb.requests.append(
            {"at": time.time(), "method": request.method, "path": request.url.path, "query": dict(request.query_params)}
        )
        if gb.throttle_next > 0:
            gb.throttle_next -= 1
            return JSONResponse({"message": "Too Many Attempts."}, status_code=429, headers={"Retry-After": "1"})
        if request.headers.get("authorization") != f"Bearer {gb.api_key}":
            return JSONResponse({"message": "Unauthorized."}, status_code=401)
        return None

    async def transactions(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        items = sorted(gb.transactions.values(), key=lambda t: t["created_at"])
        after = request.query_params.get("createdAfter")
        if after:
            try:
                cutoff = datetime.fromisoformat(after.replace("Z", "+00:00"))
            except ValueError:
                return JSONResponse(
                    {"message": "The created after is not a valid date.", "errors": {"createdAfter": ["invalid"]}},
                    status_code=422,
                )
            items = [t for t in items if datetime.fromisoformat(t["created_at"].replace("Z", "+00:00")) > cutoff]
        checks = (
            ("transactedAfter", "transacted_at", lambda t, c: t >= c),
            ("transactedBefore", "transacted_at", lambda t, c: t <= c),
            ("updatedAfter", "updated_at", lambda t, c: t > c),
            ("updatedBefore", "updated_at", lambda t, c: t <= c),
        )
        for name, field, keep in checks:
            value = request.query_params.get(name)
            if value:
                try:
                    cutoff = datetime.fromisoformat(value.replace("Z", "+00:00"))
                except ValueError:
                    return JSONResponse(
                        {"message": f"The {name} is not a valid date.", "errors": {name: ["invalid"]}}, status_code=422
                    )
                items = [
                    t
                    for t in items
                    if keep(datetime.fromisoformat((t.get(field) or t["created_at"]).replace("Z", "+00:00")), cutoff)
                ]
        return _page(items, request)

    async def transaction(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        txn = gb.transactions.get(request.path_params["id"])
        # a single resource comes unwrapped (reference A5: "returns a single TransactionResource"; the description agrees)
        return JSONResponse(txn) if txn else JSONResponse({"message": "Not found."}, status_code=404)

    async def campaigns(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        return _page(list(gb.campaigns.values()), request)

    async def campaign(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        try:
            found = gb.campaigns.get(int(request.path_params["id"]))
        except ValueError:
            found = None
        return JSONResponse(found) if found else JSONResponse({"message": "Not found."}, status_code=404)

    async def member(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        try:
            key = (int(request.path_params["campaign"]), int(request.path_params["member"]))
        except ValueError:
            return JSONResponse({"message": "Not found."}, status_code=404)
        found = gb.members.get(key)
        return JSONResponse(found) if found else JSONResponse({"message": "Not found."}, status_code=404)

    async def payouts(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        return _page([_payout(p) for p in sorted(gb.payouts.values(), key=lambda p: p.get("created_at") or "")], request)

    def webhook_problem(body: dict, partial: bool = False) -> JSONResponse | None:
        errors: dict[str, list[str]] = {}
        url = body.get("url")
        if not partial or "url" in body:
            if not isinstance(url, str) or not url.startswith(("https://", "http://")):
                errors["url"] = ["The url field must be a valid URL."]
        events = body.get("events") if "events" in body else ([body["event"]] if body.get("event") else None)
        if events is not None or not partial:
            if not isinstance(events, list) or not events:
                errors["events"] = ["The events field must have at least 1 items."]
            elif any(e not in WEBHOOK_EVENTS for e in events):
                errors["events"] = [f"The selected events is invalid: {', '.join(e for e in events if e not in WEBHOOK_EVENTS)}."]
        if errors:
            return JSONResponse({"message": next(iter(errors.values()))[0], "errors": errors}, status_code=422)
        return None

    async def webhooks(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        if request.method == "GET":
            return _page(list(gb.webhooks.values()), request)
        body = json.loads(await request.body() or b"{}")
        if (problem := webhook_problem(body)) is not None:
            return problem
        now = datetime.now().astimezone().isoformat(timespec="seconds")
        hook = {
            "id": str(uuid.uuid4()),
            "name": body.get("name"),
            "events": body.get("events") or [body["event"]],
            "enabled": body.get("enabled", True),
            "url": body["url"],
            "signature": secrets.token_hex(16),
            "last_status": None,
            "last_used_at": None,
            "created_at": now,
            "updated_at": now,
        }
        gb.webhooks[hook["id"]] = hook
        return JSONResponse(hook)  # the description: 200 and the WebhookResource

    async def activities(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        if request.path_params["id"] not in gb.webhooks:
            return JSONResponse({"message": "Not found."}, status_code=404)
        return _page(list(reversed(gb.activities.get(request.path_params["id"], []))), request)  # newest first

    async def webhook(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        hook = gb.webhooks.get(request.path_params["id"])
        if hook is None:
            return JSONResponse({"message": "Not found."}, status_code=404)
        if request.method == "DELETE":
            del gb.webhooks[hook["id"]]
            return JSONResponse({}, status_code=200)
        if request.method == "PUT":
            body = json.loads(await request.body() or b"{}")
            if (problem := webhook_problem(body)) is not None:
                return problem
            hook.update({k: body[k] for k in ("url", "events", "name", "enabled") if k in body})
        return JSONResponse(hook)

    async def tickets(request: Request):
        if (denied := guard(request)) is not None:
            return denied
        return _page(list(gb.tickets.values()), request)

    app = Starlette(
        routes=[
            Route("/v1/transactions", transactions),
            Route("/v1/transactions/{id}", transaction),
            Route("/v1/campaigns", campaigns),
            Route("/v1/campaigns/{id}", campaign),
            Route("/v1/campaigns/{campaign}/members/{member}", member),
            Route("/v1/tickets", tickets),
            Route("/v1/payouts", payouts),
            Route("/v1/webhooks", webhooks, methods=["GET", "POST"]),
            Route("/v1/webhooks/{id}", webhook, methods=["GET", "PUT", "DELETE"]),
            Route("/v1/webhooks/{id}/activities", activities),
        ]
    )
    app.state.fake = gb
    return app
