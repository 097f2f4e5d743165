"""A constituent's records of one shape: memberships (``/constituents/{cid}/memberships``, ``/memberships/{id}``),
relationships (``constituent_relationships``) and group memberships (``group_memberships``). ``FakeCrm`` keeps each
kind in the attribute of its name; a change to one moves its constituent's ``updated_at``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from synctool.fakes.crm.answers import (
    body_of,
    constituent_gone,
    constituent_of,
    deleted,
    envelope,
    fake,
    invalid,
    not_found,
    record,
)
from synctool.fakes.routing import Endpoint, Row

#: the route's name (``/constituents/{cid}/<name>``, ``/<name>/{id}``) -> FakeCrm's attribute, the item type, the
#: field a new one must have (its ``*_name`` will do), and what a new one says unless told
KINDS: dict[str, tuple[str, str, str | None, dict]] = {
    "memberships": ("memberships", "membership", None, {}),
    "constituent_relationships": ("relationships", "constituent_relationship", None, {}),
    "group_memberships": ("group_memberships", "group_membership", "group_id", {"is_current": True}),
}


def rows(name: str) -> list[Row]:
    """The routes of one kind of ``KINDS``: listed and added under a constituent, shown, changed and deleted by id."""
    return [
        ("GET", f"/constituents/{{cid:int}}/{name}", listing(name)),
        ("POST", f"/constituents/{{cid:int}}/{name}", create(name)),
        ("GET", f"/{name}/{{id:int}}", show(name)),
        ("PATCH", f"/{name}/{{id:int}}", update(name)),
        ("DELETE", f"/{name}/{{id:int}}", delete(name)),
    ]


def _records(request: Request, name: str) -> dict[int, dict]:
    return getattr(fake(request), KINDS[name][0])


def listing(name: str) -> Endpoint:
    """``GET /constituents/{cid}/<name>``."""

    async def endpoint(request: Request) -> Response:
        c = constituent_of(request)
        if c is None:
            return constituent_gone(request)
        rows = [r for r in _records(request, name).values() if r["constituent_id"] == c["id"]]
        return envelope(rows, request, KINDS[name][1])

    return endpoint


def create(name: str) -> Endpoint:
    """``POST /constituents/{cid}/<name>``."""
    _, _, required, defaults = KINDS[name]

    async def endpoint(request: Request) -> Response:
        c = constituent_of(request)
        if c is None:
            return constituent_gone(request)
        body = await body_of(request)
        if required and not (body.get(required) or body.get(required.replace("_id", "_name"))):
            return invalid(f"{required} can't be blank")
        crm = fake(request)
        rid = crm.new_id()
        made = {"id": rid, "constituent_id": c["id"], **defaults, **body}
        _records(request, name)[rid] = made
        crm.touch(c["id"])
        return record(made)

    return endpoint


def show(name: str) -> Endpoint:
    """``GET /<name>/{id}``."""

    async def endpoint(request: Request) -> Response:
        found = _records(request, name).get(int(request.path_params["id"]))
        return not_found() if found is None else record(found)

    return endpoint


def update(name: str) -> Endpoint:
    """``PATCH /<name>/{id}``."""

    async def endpoint(request: Request) -> Response:
        found = _records(request, name).get(int(request.path_params["id"]))
        if found is None:
            return not_found()
        fake(request).touch(found.get("constituent_id"))
        found.update(await body_of(request))
        return record(found)

    return endpoint


def delete(name: str) -> Endpoint:
    """``DELETE /<name>/{id}``."""

    async def endpoint(request: Request) -> Response:
        records = _records(request, name)
        found = records.get(int(request.path_params["id"]))
        if found is None:
            return not_found()
        fake(request).touch(found.get("constituent_id"))
        del records[found["id"]]
        return deleted()

    return endpoint
