"""Gifts: a constituent's (``/constituents/{cid}/gifts``: list, create), ``/gifts/search`` and ``/gifts/{id}``
(show, update, delete). A gift names its fund, campaign, payment type, gift type, category and appeal by id or by
name, and LGL fills in the other; an ``external_id`` may be used once."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.fakes.crm import answers
from synctool.fakes.crm.reference import DATE, GIFT_TERMS, GIFT_UPDATE_FIELDS, REFERENCE, now_stamp, resolve_custom_fields
from synctool.fakes.crm.state import FakeCrm

#: what a gift names by ``<key>_id`` or ``<key>_name``, and the reference list it is found in
CODED = (
    ("funds", "fund"),
    ("campaigns", "campaign"),
    ("payment_types", "payment_type"),
    ("gift_types", "gift_type"),
    ("gift_categories", "gift_category"),
    ("appeals", "appeal"),
)
SHORT = ("id", "constituent_id", "gift_type_id", "gift_type_name", "created_at", "updated_at")


async def of_constituent(request: Request) -> Response:
    """``GET /constituents/{cid}/gifts``: each gift in short (``amount`` and ``date``)."""
    c = answers.constituent_of(request)
    short = [
        {k: g[k] for k in SHORT} | {"amount": g["received_amount"], "date": g["received_date"]}
        for g in answers.fake(request).gifts.values()
        if g["constituent_id"] == c["id"]
    ]
    return answers.envelope(short, request, "gift")


async def create(request: Request) -> Response:
    """``POST /constituents/{cid}/gifts``: 422 "External Gift ID already exists" for an ``external_id`` used before."""
    crm = answers.fake(request)
    c = answers.constituent_of(request)
    body = await answers.body_of(request)
    ext = body.get("external_id")
    if ext is not None and any(str(g.get("external_id")) == str(ext) for g in crm.gifts.values()):
        return answers.invalid("External Gift ID already exists")
    if body.get("received_amount") is None:
        return answers.invalid("received_amount can't be blank")
    gift = _new_gift(crm, c["id"], body)
    crm.gifts[gift["id"]] = gift
    return answers.record(gift)


def _new_gift(crm: FakeCrm, cid: int, body: dict) -> dict:
    gid = crm.new_id()
    now = now_stamp()
    gift: dict[str, Any] = {
        "id": gid,
        "constituent_id": cid,
        "external_id": body.get("external_id"),
        "is_anon": False,
        "gift_type_id": 1,
        "gift_type_name": "Gift",
        "fund_id": 0,
        "fund_name": None,
        "campaign_id": 0,
        "campaign_name": None,
        "appeal_id": 0,
        "event_id": 0,
        "payment_type_id": None,
        "payment_type_name": None,
        "note": None,
        "created_at": now,
        "updated_at": now,
        **body,
    }
    gift["received_amount"] = float(body["received_amount"])
    for kind, key in CODED:
        ref = _named(kind, body.get(f"{key}_id"), body.get(f"{key}_name"))
        if ref:
            gift[f"{key}_id"] = ref["id"]
            gift[f"{key}_name"] = ref.get("name", ref.get("display_name"))
    gift.setdefault("deductible_amount", gift["received_amount"])
    gift["custom_fields"] = resolve_custom_fields(body.get("custom_fields") or [], crm.gift_fields)
    return gift


def _named(kind: str, rid: object, name: object) -> dict | None:
    """The entry of reference list ``kind`` with id ``rid`` or, failing that, named ``name``."""
    return next(
        (r for r in REFERENCE[kind] if str(r["id"]) == str(rid) or (name and r.get("name", r.get("display_name")) == name)),
        None,
    )


async def search(request: Request) -> Response:
    """``GET /gifts/search``: by ``external_gift_ids``, ``gift_ids``, ``date_from`` / ``date_to`` (other terms are
    taken and ignored)."""
    found = answers.clauses(request, GIFT_TERMS)
    if isinstance(found, JSONResponse):
        return found
    hits = list(answers.fake(request).gifts.values())
    for field, value in found:
        if field == "external_gift_ids":
            wanted = set(value.split(","))
            hits = [g for g in hits if str(g.get("external_id")) in wanted]
        elif field == "gift_ids":
            wanted = set(value.split(","))
            hits = [g for g in hits if str(g["id"]) in wanted]
        elif field in ("date_from", "date_to"):
            if not DATE.match(value):
                return answers.param_error(f"{field} must be a date (YYYY-MM-DD)")
            if field == "date_from":
                hits = [g for g in hits if str(g.get("received_date") or "") >= value]
            else:
                hits = [g for g in hits if str(g.get("received_date") or "") <= value]
    return answers.envelope(hits, request, "gift")


def _gift(request: Request) -> dict:
    return answers.existing(answers.fake(request).gifts.get(int(request.path_params["id"])))


async def show(request: Request) -> Response:
    """``GET /gifts/{id}``."""
    return answers.record(_gift(request))


async def update(request: Request) -> Response:
    """``PATCH /gifts/{id}``: the fields of ``Gifts_Patch_Id_UpdateBody``, checked (``gift_update_problem``)."""
    gift = _gift(request)
    body = await answers.body_of(request)
    problem = gift_update_problem(body)
    if problem:
        return answers.invalid(problem)
    if "custom_fields" in body:
        body["custom_fields"] = resolve_custom_fields(body["custom_fields"] or [], answers.fake(request).gift_fields)
    gift.update(body, updated_at=now_stamp())
    for key in ("received_amount", "deductible_amount", "deposited_amount"):
        if key in body:
            gift[key] = float(body[key])
    return answers.record(gift)


async def delete(request: Request) -> Response:
    """``DELETE /gifts/{id}``."""
    del answers.fake(request).gifts[_gift(request)["id"]]
    return answers.deleted()


def gift_update_problem(body: object) -> str | None:
    """Why LGL would refuse ``body`` as a gift update (its fields and their types), or None."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    unknown = sorted(set(body) - GIFT_UPDATE_FIELDS)
    if unknown:
        return f"unknown gift field(s): {', '.join(unknown)}"
    for key in ("received_amount", "deductible_amount", "deposited_amount"):
        if key in body and (isinstance(body[key], bool) or not isinstance(body[key], (int, float))):
            return f"{key} must be a number"
        if key in body and body[key] < 0:
            return f"{key} must not be negative"
    for key in ("received_date", "deposit_date"):
        if key in body and not (isinstance(body[key], str) and DATE.match(body[key])):
            return f"{key} must be a date (YYYY-MM-DD)"
    if "note" in body and not isinstance(body["note"], str):
        return "note must be a string"
    return None
