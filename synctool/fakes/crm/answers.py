"""What every endpoint of the fake LGL says the same way: the ``{api_version, ...}`` bodies, the list envelope
(``limit``/``offset``/``next_item``/``total_items``), LGL's errors (``Not Found``, ``Validation Failed``,
``Parameter Error``), and how a request's JSON body, search clauses, constituent and the record its path names are
read."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from synctool.fakes.crm.reference import API
from synctool.fakes.crm.state import FakeCrm
from synctool.platforms.fake import found


def fake(request: Request) -> FakeCrm:
    """The account the app serves (``create_app`` keeps it in the app's state)."""
    return request.app.state.fake


async def body_of(request: Request) -> dict:
    raw = await request.body()
    if not raw:
        return {}
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("body must be a JSON object")
    return data


def record(fields: dict) -> JSONResponse:
    """One record, as LGL answers a GET, POST or PATCH of it."""
    return JSONResponse({**API, **fields})


def existing(found_record: dict | None) -> dict:
    """The record the path named, or LGL's ``Not Found`` (a ``Refusal``) when there is none."""
    return found(found_record, not_found)


def deleted() -> JSONResponse:
    return JSONResponse({**API, "result": "success"})


def not_found() -> JSONResponse:
    return JSONResponse({**API, "error": "Not Found", "description": "Record not found"}, status_code=404)


def invalid(description: str, status: int = 422) -> JSONResponse:
    return JSONResponse({**API, "error": "Validation Failed", "description": description}, status_code=status)


def param_error(description: str) -> JSONResponse:
    return JSONResponse({**API, "error": "Parameter Error", "description": description}, status_code=400)


def constituent_of(request: Request, param: str = "cid") -> dict:
    """The constituent the path names; one that is not there (deleted) is answered as ``constituent_gone`` says
    (a ``Refusal``)."""
    try:
        named = fake(request).constituents.get(int(request.path_params[param]))
    except (TypeError, ValueError):
        named = None
    return found(named, lambda: constituent_gone(request))


def constituent_gone(request: Request) -> JSONResponse:
    """LGL documents no 404 for a deleted constituent: the fake answers as ``FakeCrm.gone_status`` says."""
    status = fake(request).gone_status
    return not_found() if status == 404 else invalid("Constituent not found", status)


def envelope(items: list, request: Request, item_type: str) -> JSONResponse:
    try:
        limit = int(request.query_params.get("limit", 25))
        offset = int(request.query_params.get("offset", 0))
    except ValueError:
        return param_error("limit/offset must be integers")
    page = items[offset : offset + limit]
    body: dict[str, Any] = {
        **API,
        "items_count": len(page),
        "total_items": len(items),
        "limit": limit,
        "offset": offset,
        "item_type": item_type,
        "items": page,
    }
    if offset + len(page) < len(items):
        body["next_item"] = offset + len(page)
        body["next_link"] = f"{request.url.path}?limit={limit}&offset={offset + len(page)}"
    return JSONResponse(body)


def clauses(request: Request, allowed: set[str]) -> list[tuple[str, str]] | JSONResponse:
    """A search's ``q[]=field=value`` clauses (a bare or unknown term is a 400 ``Parameter Error``)."""
    found = []
    for key in request.query_params:
        if key not in ("q[]", "q", "expand", "sort", "limit", "offset", "access_token"):
            return param_error(f"Unknown query parameter: {key}")
    for raw in request.query_params.getlist("q[]") + request.query_params.getlist("q"):
        for part in raw.split(";"):
            field, sep, value = part.partition("=")
            if not sep or field not in allowed:
                return param_error(f"Unknown query parameter: {part}")
            found.append((field, value))
    if not found:
        return param_error("q[] is required")
    return found
