"""The account's reference lists (``GET /funds``, ``/campaigns``, ``/groups``, ``/team_members``, ... one route each:
``REFERENCE``), a type's values (``GET /types/{type}``: ``TYPES``) and its categories: ``GET /categories`` (the tag category, or the gift custom fields) and a gift field's values
(``/categories/{id}/keywords``: list, add)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from synctool.fakes.crm import answers
from synctool.fakes.crm.reference import REFERENCE, TAG_CATEGORY, TYPES
from synctool.platforms.fake import Endpoint


def reference(kind: str) -> Endpoint:
    """``GET /<kind>``: the reference list ``kind`` of ``REFERENCE``."""

    async def endpoint(request: Request) -> Response:
        return answers.envelope(REFERENCE[kind], request, kind[:-1])

    return endpoint


async def types(request: Request) -> Response:
    """``GET /types/{type}``: the values of one type (``contact_report_types``, ...); an unknown type is a 404."""
    kind = str(request.path_params["type"])
    return answers.not_found() if kind not in TYPES else answers.envelope(TYPES[kind], request, kind[:-1])


async def categories(request: Request) -> Response:
    """``GET /categories``: ``item_type`` Constituent (the default: the tag category) or Gift (the custom fields)."""
    kind = request.query_params.get("item_type", "Constituent")
    found = [TAG_CATEGORY] if kind == "Constituent" else answers.fake(request).gift_fields if kind == "Gift" else []
    return answers.envelope(found, request, "category")


def _gift_field(request: Request) -> dict | None:
    return next((c for c in answers.fake(request).gift_fields if c["id"] == request.path_params["id"]), None)


async def keywords(request: Request) -> Response:
    """``GET /categories/{id}/keywords``: a gift field's values."""
    category = _gift_field(request)
    return answers.not_found() if category is None else answers.envelope(category["keywords"], request, "keyword")


async def add_keyword(request: Request) -> Response:
    """``POST /categories/{id}/keywords``: a new value ``{name}`` of a gift field."""
    category = _gift_field(request)
    if category is None:
        return answers.not_found()
    body = await answers.body_of(request)
    name = str(body.get("name") or "").strip()
    if not name:
        return answers.invalid("name can't be blank")
    if any(k["name"] == name for k in category["keywords"]):
        return answers.invalid("Name has already been taken")
    keyword = {"id": answers.fake(request).new_id(), "category_id": category["id"], "name": name, "short_code": None}
    category["keywords"].append(keyword)
    return answers.record(keyword)
