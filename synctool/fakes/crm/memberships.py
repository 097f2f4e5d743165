"""A constituent's records of one shape: memberships (``/constituents/{cid}/memberships``, ``/memberships/{id}``),
relationships (``constituent_relationships``) and group memberships (``group_memberships``). ``FakeCrm`` keeps each
kind in the attribute of its name; a change to one moves its constituent's ``updated_at``. A group membership is
answered as lgl-openapi.json's item (``{id, constituent_id, group_id, group_name, date_start, date_end, is_current,
created_at, updated_at}``): its group found by id or name among the account's groups (an unknown one is a 422), its
``updated_at`` moved by a change; its create answers ``{api_version}`` alone when ``FakeCrm.bare_group_membership_answer``
says so (LGL documents that answer's body not at all)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.fakes.crm import answers
from synctool.fakes.crm.reference import API, DATE, REFERENCE, now_stamp
from synctool.platforms.fake import Endpoint, Refusal, Row

#: the route's name (``/constituents/{cid}/<name>``, ``/<name>/{id}``) -> FakeCrm's attribute, the item type, the
#: field a new one must have (its ``*_name`` will do)
KINDS: dict[str, tuple[str, str, str | None]] = {
    "memberships": ("memberships", "membership", None),
    "constituent_relationships": ("relationships", "constituent_relationship", None),
    "group_memberships": ("group_memberships", "group_membership", "group_id"),
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
    return getattr(answers.fake(request), KINDS[name][0])


def listing(name: str) -> Endpoint:
    """``GET /constituents/{cid}/<name>``."""

    async def endpoint(request: Request) -> Response:
        c = answers.constituent_of(request)
        rows = [r for r in _records(request, name).values() if r["constituent_id"] == c["id"]]
        return answers.envelope(rows, request, KINDS[name][1])

    return endpoint


def create(name: str) -> Endpoint:
    """``POST /constituents/{cid}/<name>``."""
    required = KINDS[name][2]

    async def endpoint(request: Request) -> Response:
        c = answers.constituent_of(request)
        body = await answers.body_of(request)
        if required and not (body.get(required) or body.get(required.replace("_id", "_name"))):
            return answers.invalid(f"{required} can't be blank")
        crm = answers.fake(request)
        rid = crm.new_id()
        if name == "group_memberships":
            group = _group_fields(body)
            now = now_stamp()
            made = {"id": rid, "constituent_id": c["id"], **group,
                    "date_start": body.get("date_start"), "date_end": body.get("date_end"),
                    "is_current": bool(body.get("is_current", True)), "created_at": now, "updated_at": now}  # fmt: skip
        else:
            made = {"id": rid, "constituent_id": c["id"], **body}
        _records(request, name)[rid] = made
        crm.touch(c["id"])
        if name == "group_memberships" and crm.bare_group_membership_answer:
            return JSONResponse(API)
        return answers.record(made)

    return endpoint


def show(name: str) -> Endpoint:
    """``GET /<name>/{id}``."""

    async def endpoint(request: Request) -> Response:
        return answers.record(answers.existing(_records(request, name).get(int(request.path_params["id"]))))

    return endpoint


def update(name: str) -> Endpoint:
    """``PATCH /<name>/{id}``."""

    async def endpoint(request: Request) -> Response:
        found = answers.existing(_records(request, name).get(int(request.path_params["id"])))
        changes = await answers.body_of(request)
        if name == "group_memberships":
            group = _group_fields(changes)
            changes = {k: v for k, v in changes.items() if k not in ("group_id", "group_name", "constituent_id")}
            changes |= group | {"updated_at": now_stamp()}
        answers.fake(request).touch(found.get("constituent_id"))
        found.update(changes)
        return answers.record(found)

    return endpoint


def delete(name: str) -> Endpoint:
    """``DELETE /<name>/{id}``."""

    async def endpoint(request: Request) -> Response:
        records = _records(request, name)
        found = answers.existing(records.get(int(request.path_params["id"])))
        answers.fake(request).touch(found.get("constituent_id"))
        del records[found["id"]]
        return answers.deleted()

    return endpoint


def _group_fields(body: dict) -> dict:
    """The group a membership body names, as the fields to set (``group_id``, ``group_name``; none when the body
    names no group); LGL's 422 (a ``Refusal``) for a group the account has not or a date not ``YYYY-MM-DD``."""
    fields: dict = {}
    if "group_id" in body or "group_name" in body:
        group = _group(body)
        if group is None:
            raise Refusal(answers.invalid("Group not found"))
        fields = {"group_id": group["id"], "group_name": group["name"]}
    if any(body.get(k) is not None and not DATE.match(str(body[k])) for k in ("date_start", "date_end")):
        raise Refusal(answers.invalid("dates must be YYYY-MM-DD"))
    return fields


def _group(body: dict) -> dict | None:
    """The account's group a membership body names (``group_id``, else ``group_name``), or None."""
    return next(
        (g for g in REFERENCE["groups"]
         if str(g["id"]) == str(body.get("group_id")) or (not body.get("group_id") and g["name"] == body.get("group_name"))),
        None,
    )  # fmt: skip
