"""A local stand-in for Givebutter's REST API v1: transactions (with the ``createdAfter``,
``transactedAfter`` and ``transactedBefore`` filters),
campaigns and their members (peer-to-peer fundraisers), tickets, recurring plans (``/v1/plans``), payouts and webhooks (the signing secret returned as ``signature``), Laravel-style paging (``per_page`` at most 100), ``{"message"}`` errors, Bearer
auth, and an optional rate limit answered with 429 and ``Retry-After``.

Events: ``add_event_campaign`` (a campaign of type "event" with its ``event`` block), ``sell_tickets`` (an order:
its transaction and a ticket per holder), ``check_in``, and refunds of a whole order (``refund_transaction``,
optionally revoking its tickets) or of some of its tickets (``refund_tickets``). Shapes follow the recorded bodies
(tests/data/real_bodies/givebutter): ``givebutter_event_campaign`` and ``givebutter_ticket_order`` build them.

Here: the HTTP surface, one function per operation, each declared with its method and path; the account it serves
is ``FakeGivebutter`` (``fake_state.py``), the shapes it makes ``fake_samples.py``; this module is the name callers
import all three by."""

from __future__ import annotations

import secrets
import time
import uuid
from datetime import datetime

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.platform.edges import FakeApi, Refusal, found, json_body, shows
from synctool.platforms.givebutter.fake_samples import (
    givebutter_event_campaign,
    givebutter_fee,
    givebutter_moment,
    givebutter_pdf,
    givebutter_ticket,
    givebutter_ticket_order,
    givebutter_time,
)
from synctool.platforms.givebutter.fake_state import FakeGivebutter

__all__ = [
    "FakeGivebutter",
    "create_app",
    "givebutter_event_campaign",
    "givebutter_fee",
    "givebutter_moment",
    "givebutter_pdf",
    "givebutter_ticket",
    "givebutter_ticket_order",
    "givebutter_time",
]

#: the live API's webhook event enum
WEBHOOK_EVENTS = {
    "campaign.created", "campaign.updated", "ticket.created", "transaction.succeeded", "contact.created",
    "plan.canceled", "plan.created", "plan.failed", "plan.paused", "plan.resumed", "plan.updated", "refund.created",
}  # fmt: skip


def _payout(stored: dict) -> dict:
    """A payout as Givebutter's PayoutResource describes it, from what a test or the demo stored."""
    amount = stored.get("amount") or 0
    when = stored.get("paid_at") or stored.get("created_at")
    return {
        "campaign_id": None, "method": "bank", "status": "paid", "fee": 0, "tip": 0, "payout": amount, "currency": "USD",
        "address": None, "memo": None, "expected_at": when, "paid_at": when, "created_at": when, "updated_at": when, **stored,
    }  # fmt: skip


def _page(items: list, request: Request, *, unfiltered: bool = False) -> JSONResponse:
    """One page of ``items``, as Laravel's paginator answers (reference A5). ``meta.links`` holds the previous and
    next entries around the page numbers, as the recorded pages do; ``meta.unfiltered_total`` only where the
    recorded pages and the description have it (the transactions and campaigns lists, ``unfiltered``)."""
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
                "links": [
                    {"url": f"{base}?page={page - 1}" if page > 1 else None, "label": "&laquo; Previous", "active": False},
                    *({"url": f"{base}?page={n}", "label": str(n), "active": n == page} for n in range(1, min(last, 10) + 1)),
                    {"url": f"{base}?page={page + 1}" if page < last else None, "label": "Next &raquo;", "active": False},
                ],
                "path": base,
                "per_page": per_page,
                "to": (page - 1) * per_page + len(chunk) if chunk else None,
                "total": len(items),
                **({"unfiltered_total": len(items)} if unfiltered else {}),
            },
        }
    )


def guard(request: Request, gb: FakeGivebutter) -> JSONResponse | None:
    """Every request is recorded (``FakeGivebutter.requests``); ``throttle_next`` answers the next ones with 429;
    then the API key as Bearer."""
    gb.requests.append(
        {"at": time.time(), "method": request.method, "path": request.url.path, "query": dict(request.query_params)}
    )
    if gb.throttle_next > 0:
        gb.throttle_next -= 1
        return JSONResponse({"message": "Too Many Attempts."}, status_code=429, headers={"Retry-After": "1"})
    if request.headers.get("authorization") != f"Bearer {gb.api_key}":
        return JSONResponse({"message": "Unauthorized."}, status_code=401)
    return None


api = FakeApi(FakeGivebutter, guard)


def _not_found() -> JSONResponse:
    return JSONResponse({"message": "Not found."}, status_code=404)


def _single(item: dict | None) -> JSONResponse:
    """A single resource comes unwrapped (reference A5: "returns a single TransactionResource"; the description agrees)."""
    return JSONResponse(item) if item else _not_found()


def _moment(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


#: the transactions list's date filters: parameter, the field it compares, and what is kept
DATE_FILTERS = (
    ("transactedAfter", "transacted_at", lambda t, c: t >= c),
    ("transactedBefore", "transacted_at", lambda t, c: t <= c),
    ("updatedAfter", "updated_at", lambda t, c: t > c),
    ("updatedBefore", "updated_at", lambda t, c: t <= c),
)


@api.get("/v1/transactions")
async def list_transactions(request: Request, gb: FakeGivebutter) -> Response:
    """Oldest first; ``createdAfter``, ``transactedAfter`` / ``transactedBefore``, ``updatedAfter`` /
    ``updatedBefore`` (an unreadable date is a 422)."""
    items = sorted(gb.transactions.values(), key=lambda t: t["created_at"])
    after = request.query_params.get("createdAfter")
    if after:
        try:
            cutoff = _moment(after)
        except ValueError:
            return JSONResponse(
                {"message": "The created after is not a valid date.", "errors": {"createdAfter": ["invalid"]}}, status_code=422
            )
        items = [t for t in items if _moment(t["created_at"]) > cutoff]
    for name, field, keep in DATE_FILTERS:
        value = request.query_params.get(name)
        if value:
            try:
                cutoff = _moment(value)
            except ValueError:
                return JSONResponse(
                    {"message": f"The {name} is not a valid date.", "errors": {name: ["invalid"]}}, status_code=422
                )
            items = [t for t in items if keep(_moment(t.get(field) or t["created_at"]), cutoff)]
    return _page(items, request, unfiltered=True)


@api.get("/v1/transactions/{id}")
async def get_transaction(request: Request, gb: FakeGivebutter) -> Response:
    return _single(gb.transactions.get(request.path_params["id"]))


@api.get("/v1/campaigns")
async def list_campaigns(request: Request, gb: FakeGivebutter) -> Response:
    return _page(list(gb.campaigns.values()), request, unfiltered=True)


@api.get("/v1/campaigns/{id}")
async def get_campaign(request: Request, gb: FakeGivebutter) -> Response:
    try:
        campaign = gb.campaigns.get(int(request.path_params["id"]))
    except ValueError:
        campaign = None
    return _single(campaign)


@api.get("/v1/campaigns/{campaign}/members/{member}")
async def get_campaign_member(request: Request, gb: FakeGivebutter) -> Response:
    """A peer-to-peer fundraiser (``CampaignMemberResource``)."""
    try:
        key = (int(request.path_params["campaign"]), int(request.path_params["member"]))
    except ValueError:
        return _not_found()
    return _single(gb.members.get(key))


@api.get("/v1/tickets")
async def list_tickets(request: Request, gb: FakeGivebutter) -> Response:
    """The list takes no filter, only paging (reference A5), and neither the reference nor the description documents
    its order. The one recorded page (MissionBit ticket.spec.ts) lists A0020 (created 04:31:32) before A0019
    (04:30:49): newest first, which this fake follows; the tickets of one order (one moment) by their count
    (``id_suffix``), then id, so the order is stable."""
    listed = sorted(
        gb.tickets.values(),
        key=lambda t: (str(t.get("created_at") or ""), str(t.get("id_suffix") or ""), str(t.get("id"))),
        reverse=True,
    )
    return _page(listed, request)


@api.get("/v1/tickets/{id}")
async def get_ticket(request: Request, gb: FakeGivebutter) -> Response:
    """A revoked ticket is not found (``FakeGivebutter.refund_transaction``)."""
    return _single(gb.tickets.get(request.path_params["id"]))


@api.get("/v1/plans")
async def list_plans(request: Request, gb: FakeGivebutter) -> Response:
    """Every plan, oldest first (the order is not documented); only paging (``contacts``, the one documented filter,
    is not served)."""
    listed = sorted(gb.plans.values(), key=lambda p: (str(p.get("created_at")), str(p["id"])))
    return _page(listed, request)


@api.get("/v1/plans/{id}")
async def get_plan(request: Request, gb: FakeGivebutter) -> Response:
    """The bare plan (no ``data`` wrapper, GB-API); 404 with the documented message (GB-DOCS-2023)."""
    plan = gb.plans.get(request.path_params["id"])
    if plan is None:
        return JSONResponse({"message": "The recurring plan you were looking for was not found."}, status_code=404)
    return JSONResponse(plan)


@api.get("/v1/payouts")
async def list_payouts(request: Request, gb: FakeGivebutter) -> Response:
    stored = sorted(gb.payouts.values(), key=lambda p: p.get("created_at") or "")
    return _page([_payout(p) for p in stored], request)


# -- webhooks: the signing secret is returned as ``signature`` ------------------------------------------------------


async def _webhook_body(request: Request, partial: bool = False) -> dict:
    """A webhook's JSON body, checked (``partial``: an update); Givebutter's 422 (a ``Refusal``) when it is wrong."""
    body = await json_body(request)
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
        raise Refusal(JSONResponse({"message": next(iter(errors.values()))[0], "errors": errors}, status_code=422))
    return body


@api.get("/v1/webhooks")
async def list_webhooks(request: Request, gb: FakeGivebutter) -> Response:
    return _page(list(gb.webhooks.values()), request)


@api.post("/v1/webhooks")
async def create_webhook(request: Request, gb: FakeGivebutter) -> Response:
    """``url``, ``events`` (or one ``event``), ``name``, ``enabled``; the description: 200 and the WebhookResource."""
    body = await _webhook_body(request)
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
    return JSONResponse(hook)


def _webhook(request: Request, gb: FakeGivebutter) -> dict:
    """The webhook the path names, or Givebutter's 404."""
    return found(gb.webhooks.get(request.path_params["id"]), _not_found)


get_webhook = api.get("/v1/webhooks/{id}")(shows(_webhook))


@api.put("/v1/webhooks/{id}")
async def update_webhook(request: Request, gb: FakeGivebutter) -> Response:
    """``url``, ``events``, ``name``, ``enabled`` (checked as a new one is)."""
    hook = _webhook(request, gb)
    body = await _webhook_body(request)
    hook.update({k: body[k] for k in ("url", "events", "name", "enabled") if k in body})
    return JSONResponse(hook)


@api.delete("/v1/webhooks/{id}")
async def delete_webhook(request: Request, gb: FakeGivebutter) -> Response:
    del gb.webhooks[_webhook(request, gb)["id"]]
    return JSONResponse({}, status_code=200)


@api.get("/v1/webhooks/{id}/activities")
async def list_webhook_activities(request: Request, gb: FakeGivebutter) -> Response:
    """A webhook's deliveries (``WebhookActivityResource``), newest first."""
    hook_id = request.path_params["id"]
    if hook_id not in gb.webhooks:
        return _not_found()
    return _page(list(reversed(gb.activities.get(hook_id, []))), request)


create_app = api.create_app
