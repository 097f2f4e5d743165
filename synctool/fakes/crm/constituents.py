"""``/constituents``: search, list, create, show, update and delete; a constituent's contact rows (e-mail
addresses, phone numbers, street and web addresses) and its tags (``/constituents/{cid}/keywords``)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.fakes.crm import answers
from synctool.fakes.crm.reference import API, CONSTITUENT_TERMS, CONTACT_KINDS, SORTS, TAG_CATEGORY, TIMESTAMP
from synctool.fakes.crm.state import FakeCrm
from synctool.platforms.fake import Row


async def search(request: Request) -> Response:
    """``GET /constituents/search``: ``q[]`` clauses, ``sort`` (a trailing ``!`` reverses), ``expand``."""
    crm = answers.fake(request)
    found = answers.clauses(request, CONSTITUENT_TERMS)
    if isinstance(found, JSONResponse):
        return found
    expand = set(filter(None, request.query_params.get("expand", "").split(",")))
    hits = []
    for c in crm.constituents.values():
        ok = _matches(crm, c, found)
        if isinstance(ok, JSONResponse):
            return ok
        if ok:
            hits.append(c)
    sort = request.query_params.get("sort")
    if sort:
        key = SORTS.get(sort.rstrip("!"))
        if key is None:
            return answers.param_error(f"Unknown sort: {sort}")
        hits.sort(key=lambda c: (key(c), c["id"]), reverse=sort.endswith("!"))
    return answers.envelope([crm.constituent_view(c, expand) for c in hits], request, "constituent")


def _matches(crm: FakeCrm, c: dict, found: list[tuple[str, str]]) -> bool | JSONResponse:
    """Whether ``c`` meets every clause, in order (a term the fake does not filter on is met)."""
    for field, value in found:
        ok = _meets(crm, c, field, value)
        if isinstance(ok, JSONResponse) or not ok:
            return ok
    return True


def _meets(crm: FakeCrm, c: dict, field: str, value: str) -> bool | JSONResponse:
    v = value.lower()
    if field == "name":
        return any(v in str(c.get(k) or "").lower() for k in ("first_name", "last_name", "org_name", "nick_name"))
    if field == "eaddr":
        return any(r["address"].lower() == v for r in crm.contacts["email_addresses"].values() if r["item_id"] == c["id"])
    if field == "external_id":
        return str(c.get("external_constituent_id") or "") == value
    if field == "keyword":
        return int(value) in crm.keywords.get(c["id"], set())
    if field == "groups":
        ids = {int(x) for x in value.split(",") if x}
        return any(g["constituent_id"] == c["id"] and g["group_id"] in ids for g in crm.group_memberships.values())
    if field in ("updated_from", "updated_to"):
        if not TIMESTAMP.match(value):
            return answers.param_error(f"{field} must be YYYY-MM-DDTHH:MM:SSZ, got {value}")
        return c["updated_at"] >= value if field == "updated_from" else c["updated_at"] <= value
    return True


async def listing(request: Request) -> Response:
    """``GET /constituents``."""
    crm = answers.fake(request)
    return answers.envelope([crm.constituent_view(c, set()) for c in crm.constituents.values()], request, "constituent")


async def create(request: Request) -> Response:
    """``POST /constituents``."""
    crm = answers.fake(request)
    body = await answers.body_of(request)
    if not body.get("last_name") and not body.get("org_name"):
        return answers.invalid("last_name can't be blank")
    return answers.record(crm.constituent_view(crm.create_constituent(body), {"all"}))


async def show(request: Request) -> Response:
    """``GET /constituents/{id}``: with every nested array."""
    c = answers.constituent_of(request, "id")
    return answers.record(answers.fake(request).constituent_view(c, {"all"}))


async def update(request: Request) -> Response:
    """``PATCH /constituents/{id}``: contact rows given are added; ``remove_previous_*`` flags are taken and ignored."""
    crm = answers.fake(request)
    c = answers.constituent_of(request, "id")
    body = await answers.body_of(request)
    for key, value in body.items():
        if key in CONTACT_KINDS:
            for row in value or []:
                crm.add_contact_row(c["id"], key, row)
        elif not key.startswith("remove_previous"):
            c[key] = value
    crm.touch(c["id"])
    return answers.record(crm.constituent_view(c, {"all"}))


async def delete(request: Request) -> Response:
    """``DELETE /constituents/{id}``."""
    c = answers.constituent_of(request, "id")
    del answers.fake(request).constituents[c["id"]]
    return answers.deleted()


# -- contact rows: /constituents/{cid}/<kind> and /<kind>/{id}, for each kind of CONTACT_KINDS -------------------


def contact_rows(kind: str) -> list[Row]:
    """The routes of one kind of contact row (``email_addresses``, ...): listed and added under a constituent,
    shown, changed and deleted by id."""
    return [
        ("GET", f"/constituents/{{cid:int}}/{kind}", contacts),
        ("POST", f"/constituents/{{cid:int}}/{kind}", add_contact),
        ("GET", f"/{kind}/{{id:int}}", show_contact),
        ("PATCH", f"/{kind}/{{id:int}}", update_contact),
        ("DELETE", f"/{kind}/{{id:int}}", delete_contact),
    ]


def _kind_of_collection(request: Request) -> str:
    return request.url.path.rstrip("/").rsplit("/", 1)[-1]


def _kind_of_row(request: Request) -> str:
    return request.url.path.split("/")[-2]


async def contacts(request: Request) -> Response:
    """``GET /constituents/{cid}/email_addresses`` (and the other kinds)."""
    c = answers.constituent_of(request)
    kind = _kind_of_collection(request)
    rows = [r for r in answers.fake(request).contacts[kind].values() if r["item_id"] == c["id"]]
    return answers.envelope(rows, request, kind[:-1])


async def add_contact(request: Request) -> Response:
    """``POST /constituents/{cid}/email_addresses`` (and the other kinds): its address, number, street or url."""
    c = answers.constituent_of(request)
    kind = _kind_of_collection(request)
    body = await answers.body_of(request)
    if not body.get(CONTACT_KINDS[kind]):
        return answers.invalid(f"{CONTACT_KINDS[kind]} can't be blank")
    return answers.record(answers.fake(request).add_contact_row(c["id"], kind, body))


def _contact_row(request: Request) -> dict:
    return answers.existing(answers.fake(request).contacts[_kind_of_row(request)].get(int(request.path_params["id"])))


async def show_contact(request: Request) -> Response:
    """``GET /email_addresses/{id}`` (and the other kinds)."""
    return answers.record(_contact_row(request))


async def update_contact(request: Request) -> Response:
    """``PATCH /email_addresses/{id}`` (and the other kinds)."""
    row = _contact_row(request)
    answers.fake(request).touch(row["item_id"])
    row.update(await answers.body_of(request))
    return answers.record(row)


async def delete_contact(request: Request) -> Response:
    """``DELETE /email_addresses/{id}`` (and the other kinds)."""
    row = _contact_row(request)
    crm = answers.fake(request)
    crm.touch(row["item_id"])
    del crm.contacts[_kind_of_row(request)][row["id"]]
    return answers.deleted()


# -- tags ----------------------------------------------------------------------------------------------------------


async def add_keyword(request: Request) -> Response:
    """``POST /constituents/{cid}/keywords``: ``{id}`` of a keyword of the tag category."""
    crm = answers.fake(request)
    c = answers.constituent_of(request)
    body = await answers.body_of(request)
    kid = body.get("id")
    if not isinstance(kid, int) or not any(k["id"] == kid for k in TAG_CATEGORY["keywords"]):
        return answers.invalid("keyword not found")
    crm.keywords.setdefault(c["id"], set()).add(kid)
    crm.touch(c["id"])
    return JSONResponse({**API, "id": kid, "constituent_id": c["id"]})


async def remove_keyword(request: Request) -> Response:
    """``DELETE /constituents/{cid}/keywords/{id}``."""
    crm = answers.fake(request)
    c = answers.constituent_of(request)
    crm.keywords.setdefault(c["id"], set()).discard(int(request.path_params["id"]))
    crm.touch(c["id"])
    return answers.deleted()
