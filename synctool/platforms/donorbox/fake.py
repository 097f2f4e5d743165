"""Donorbox's API as a fake, for the tests, the demo and ``check_platform``, shaped by its documentation
(github.com/donorbox/donorbox-api README.md, commit e6b4daf; ``tests/specs/donorbox.json`` holds the subset):

``GET /api/v1/donations`` (filters ``id``, ``email``, ``campaign_id``, ``date_from``, ``date_to``; ``order``,
``page``, ``per_page``), ``GET /api/v1/plans`` and ``GET /api/v1/campaigns``, each a JSON array, every request
with HTTP Basic auth (any login e-mail, the API key as the password). It signs deliveries as Donorbox does
(``signed``: ``Donorbox-Signature: <timestamp>,<hex HMAC-SHA256 of "<timestamp>.<body>">``)."""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.platform.edges import FakeApi
from synctool.platforms.donorbox.webhook import sign

#: Donorbox's default page and its largest (README: "default page size ... 50, maximum 100 allowed")
DEFAULT_PAGE, MAX_PAGE = 50, 100
DONOR = {"id": 59, "name": "John Doe", "first_name": "John", "last_name": "Doe", "email": "johndoeemail@hotmail.com",
         "address": "123 6th St.", "address_line_2": "Lakeside Road", "city": "Melbourne", "state": "FL",
         "zip_code": "32904", "country": "US", "employer": None, "occupation": None}  # fmt: skip


class FakeDonorbox:
    """Donorbox's state: its campaigns, donations (each with its running ``amount_refunded``) and plans."""

    def __init__(self, key: str = "donorbox-demo-key") -> None:
        self.key = key
        self.campaigns: list[dict[str, Any]] = [
            {"id": 1, "name": "Donorbox Campaign", "slug": "donorbox-campaign", "currency": "usd",
             "created_at": "2026-01-05T15:00:00.000Z", "updated_at": "2026-01-05T15:00:00.000Z", "goal_amt": "10000.0",
             "formatted_goal_amount": "$10,000", "total_raised": "0.0", "formatted_total_raised": "$0",
             "donations_count": 0},
        ]  # fmt: skip
        self.donations: list[dict[str, Any]] = []
        self.plans: list[dict[str, Any]] = []

    def donate(self, donation_id: int, amount: str, at: str, **fields: Any) -> dict[str, Any]:
        """A donation as Donorbox lists it (the README's Stripe example's fields), added to the state."""
        donation: dict[str, Any] = {
            "action": "new", "campaign": {"id": 1, "name": "Donorbox Campaign"}, "donor": dict(DONOR),
            "amount": amount, "formatted_amount": f"${amount}", "converted_amount": amount,
            "formatted_converted_amount": f"${amount}", "recurring": False, "first_recurring_donation": False,
            "amount_refunded": "0.0", "formatted_amount_refunded": "$0", "stripe_charge_id": f"ch_fake{donation_id}",
            "id": donation_id, "status": "paid", "donation_type": "stripe", "donation_date": at,
            "anonymous_donation": False, "gift_aid": False, "designation": None, "join_mailing_list": False,
            "comment": None, "donating_company": None, "currency": "USD", "converted_currency": "USD",
            "processing_fee": round(float(Decimal(amount) * Decimal("0.029") + Decimal("0.30")), 2),
            **{k: DONOR[k] for k in ("address", "address_line_2", "city", "state", "zip_code", "country")},
            "questions": [],
        }  # fmt: skip
        for key, value in fields.items():
            if key == "donor":
                donation["donor"] = {**donation["donor"], **value}
            else:
                donation[key] = value
        self.donations.append(donation)
        return donation

    def refund(self, donation_id: int, amount: str) -> dict[str, Any]:
        """Refund part of a donation: Donorbox raises its running ``amount_refunded`` (what its update carries)."""
        donation = next(d for d in self.donations if d["id"] == donation_id)
        total = Decimal(str(donation["amount_refunded"])) + Decimal(amount)
        donation.update(action="update", amount_refunded=str(total), formatted_amount_refunded=f"${total}")
        if total >= Decimal(str(donation["amount"])):
            donation["status"] = "refunded"
        return donation

    def plan(self, plan_id: int, amount: str, status: str = "active", **fields: Any) -> dict[str, Any]:
        """A recurring plan as Donorbox lists it, added to (or replacing one in) the state."""
        plan: dict[str, Any] = {
            "id": plan_id, "campaign": {"id": 1, "name": "Donorbox Campaign"}, "donor": dict(DONOR), "type": "monthly",
            "amount": amount, "formatted_amount": f"${amount}", "payment_method": "Stripe", "started_at": "2026-01-05",
            "last_donation_date": "2026-01-05T15:00:00.000Z", "next_donation_date": "2026-02-05", "status": status,
            **fields,
        }  # fmt: skip
        self.plans = [p for p in self.plans if p["id"] != plan_id] + [plan]
        return plan


def signed(
    record: dict[str, Any], secret: str, *, event: str | None = None, at: float | None = None
) -> tuple[bytes, dict[str, str]]:
    """A delivery as Donorbox sends it: the record in an array (v1), or ``[{event_name, donation|plan}]`` (v2,
    with ``event``), and its ``Donorbox-Signature``."""
    item = record if event is None else {"event_name": event, event.partition(".")[0]: record}
    body = json.dumps([item]).encode()
    return body, {"Donorbox-Signature": sign(secret, body, at), "Content-Type": "application/json"}


def guard(request: Request, box: FakeDonorbox) -> Response | None:
    """Donorbox's Basic auth: the login e-mail (any here) and the API key as the password."""
    try:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        user, _, password = base64.b64decode(token).decode().partition(":")
    except ValueError:
        user = password = scheme = ""
    if scheme.lower() != "basic" or not user or password != box.key:
        return JSONResponse({"error": "You need to sign in or sign up before continuing."}, status_code=401)
    return None


api = FakeApi(FakeDonorbox, guard)


def _paged(request: Request, items: list[dict[str, Any]], day_of: str | None = None) -> JSONResponse:
    query = request.query_params
    if day_of is not None:
        after, before = query.get("date_from"), query.get("date_to")
        items = [
            i
            for i in items
            if (not after or str(i.get(day_of))[:10] >= after) and (not before or str(i.get(day_of))[:10] <= before)
        ]
    if query.get("order", "desc") != "asc":
        items = list(reversed(items))
    try:
        size = int(query.get("per_page", DEFAULT_PAGE))
        page = max(int(query.get("page", 1)), 1)
    except ValueError:
        size, page = DEFAULT_PAGE, 1
    size = size if 0 < size <= MAX_PAGE else DEFAULT_PAGE  # "If it exceeds the maximum, it will fallback to default"
    return JSONResponse(items[(page - 1) * size : page * size])


@api.get("/api/v1/donations")
async def list_donations(request: Request, box: FakeDonorbox) -> Response:
    query = request.query_params
    found = sorted(box.donations, key=lambda d: str(d.get("donation_date")))
    if "id" in query:
        found = [d for d in found if str(d["id"]) == query["id"]]
    if "email" in query:
        found = [d for d in found if str(d["donor"].get("email")).lower() == query["email"].lower()]
    if "campaign_id" in query:
        found = [d for d in found if str((d.get("campaign") or {}).get("id")) == query["campaign_id"]]
    return _paged(request, found, "donation_date")


@api.get("/api/v1/plans")
async def list_plans(request: Request, box: FakeDonorbox) -> Response:
    found = sorted(box.plans, key=lambda p: str(p.get("started_at")))
    if "email" in request.query_params:
        found = [p for p in found if str(p["donor"].get("email")).lower() == request.query_params["email"].lower()]
    return _paged(request, found, "started_at")


@api.get("/api/v1/campaigns")
async def list_campaigns(request: Request, box: FakeDonorbox) -> Response:
    return _paged(request, list(box.campaigns))


create_app = api.create_app
