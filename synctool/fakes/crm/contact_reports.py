"""Contact reports, as ``lgl-openapi.json`` describes them: a constituent's (``GET/POST
/constituents/{cid}/contact_reports``), the account's (``GET /contact_reports``) and one by id (``GET/PATCH/DELETE
/contact_reports/{id}``). A report is ``{id, constituent_id, name, contact_report_type_id, contact_report_type_name,
original_date, text, team_member (a name), team_member_email, created_at, updated_at}``; its type is found by id or
name among ``TYPES["contact_report_types"]``, its team member by id, e-mail or "first_name last_name" among the
account's team members (the documented ways to name one); an unknown type or team member, a missing ``text`` or a
date not ``YYYY-MM-DD`` is a 422."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.crm.types import JsonObject
from synctool.fakes.crm import answers
from synctool.fakes.crm.reference import DATE, REFERENCE, TYPES, now_stamp

#: ``ConstituentRelationship_Post_ContactReports_CreateBody``; the PATCH body adds ``constituent_id``
FIELDS = frozenset({"name", "contact_report_type_id", "contact_report_type_name", "original_date", "text", "team_member"})


def _type(body: JsonObject) -> JsonObject | None:
    wanted_id, wanted_name = body.get("contact_report_type_id"), body.get("contact_report_type_name")
    return next(
        (t for t in TYPES["contact_report_types"]
         if (wanted_id is not None and str(t["id"]) == str(wanted_id)) or (wanted_id is None and t["name"] == wanted_name)),
        None,
    )  # fmt: skip


def _team_member(named: object) -> JsonObject | None:
    wanted = str(named).strip().lower()
    return next(
        (m for m in REFERENCE["team_members"]
         if wanted in (str(m["id"]), str(m["email"]).lower(), f"{m['first_name']} {m['last_name']}".lower())),
        None,
    )  # fmt: skip


def _apply(report: JsonObject, body: JsonObject) -> JSONResponse | None:
    """Put ``body``'s fields on ``report`` as LGL resolves them; a 422 when one does not resolve."""
    unknown = set(body) - FIELDS - {"constituent_id"}
    if unknown:
        return answers.invalid(f"unknown fields: {', '.join(sorted(unknown))}")
    if "text" in body and not str(body.get("text") or "").strip():
        return answers.invalid("text can't be blank")
    if body.get("original_date") is not None and not DATE.match(str(body["original_date"])):
        return answers.invalid("original_date must be YYYY-MM-DD")
    changes: JsonObject = {k: body[k] for k in ("name", "original_date", "text") if k in body}
    if "contact_report_type_id" in body or "contact_report_type_name" in body:
        kind = _type(body)
        if kind is None:
            return answers.invalid("Contact report type not found")
        changes |= {"contact_report_type_id": kind["id"], "contact_report_type_name": kind["name"]}
    if body.get("team_member") not in (None, ""):
        member = _team_member(body["team_member"])
        if member is None:
            return answers.invalid("Team member not found")
        changes |= {"team_member": f"{member['first_name']} {member['last_name']}", "team_member_email": member["email"]}
    report.update(changes, updated_at=now_stamp())
    return None


async def of_constituent(request: Request) -> Response:
    """``GET /constituents/{cid}/contact_reports``."""
    c = answers.constituent_of(request)
    found = [r for r in answers.fake(request).contact_reports.values() if r["constituent_id"] == c["id"]]
    return answers.envelope(found, request, "contact_report")


async def listing(request: Request) -> Response:
    """``GET /contact_reports``: every report of the account."""
    return answers.envelope(list(answers.fake(request).contact_reports.values()), request, "contact_report")


async def create(request: Request) -> Response:
    """``POST /constituents/{cid}/contact_reports``: ``text`` required; LGL names an unnamed report after the
    constituent (the documented example: "Contact report for 'Appleton, Larry'") and dates an undated one today."""
    c = answers.constituent_of(request)
    body = await answers.body_of(request)
    if "constituent_id" in body:
        return answers.invalid("unknown fields: constituent_id")
    if not str(body.get("text") or "").strip():
        return answers.invalid("text can't be blank")
    crm = answers.fake(request)
    now = now_stamp()
    report: JsonObject = {
        "id": crm.new_id(), "constituent_id": c["id"], "name": f"Contact report for '{c.get('sort_name') or ''}'",
        "contact_report_type_id": None, "contact_report_type_name": None, "original_date": now[:10], "text": None,
        "team_member": None, "team_member_email": None, "created_at": now, "updated_at": now,
    }  # fmt: skip
    refused = _apply(report, body)
    if refused is not None:
        return refused
    crm.contact_reports[report["id"]] = report
    crm.touch(c["id"])
    return answers.record(report)


async def show(request: Request) -> Response:
    """``GET /contact_reports/{id}``."""
    return answers.record(answers.existing(answers.fake(request).contact_reports.get(int(request.path_params["id"]))))


async def update(request: Request) -> Response:
    """``PATCH /contact_reports/{id}``: the create's fields (``text`` required by the schema)."""
    found = answers.existing(answers.fake(request).contact_reports.get(int(request.path_params["id"])))
    changed = dict(found)
    refused = _apply(changed, await answers.body_of(request))
    if refused is not None:
        return refused
    found.update(changed)
    answers.fake(request).touch(found["constituent_id"])
    return answers.record(found)


async def delete(request: Request) -> Response:
    """``DELETE /contact_reports/{id}``."""
    reports = answers.fake(request).contact_reports
    found = answers.existing(reports.pop(int(request.path_params["id"]), None))
    answers.fake(request).touch(found["constituent_id"])
    return answers.deleted()
