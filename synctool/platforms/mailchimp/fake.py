"""A local stand-in for Mailchimp's Marketing API v3: root (account), ping, lists, and audience members
(``PUT`` upsert with ``status_if_new``, ``GET``, and ``POST .../tags``), audience webhooks, with HTTP Basic auth (any user, the
key as password) and problem+json errors. ``members[list_id][subscriber_hash]`` holds each member and its tags.
``ROUTES`` names one function per operation."""

from __future__ import annotations

import base64
import hashlib
import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.fakes.routing import Row
from synctool.platforms.fake import serve

EVENTS = ("subscribe", "unsubscribe", "profile", "cleaned", "upemail", "campaign")


class FakeMailchimp:
    def __init__(self, api_key: str = "mc-api-key-us14"):
        self.api_key = api_key
        self.lists = [
            {"id": "b7e21c0d94", "web_id": 412937, "name": "Newsletter", "stats": {"member_count": 1840}},
            {"id": "c0ffee1234", "web_id": 412938, "name": "Volunteers", "stats": {"member_count": 212}},
        ]
        self.members: dict[str, dict[str, dict]] = {}
        #: list id -> its webhooks ``{id, url, events{...}, sources{user, admin, api}, list_id}``
        self.webhooks: dict[str, list[dict]] = {}
        self.requests: list[tuple[str, str]] = []


def _problem(status: int, title: str, detail: str) -> JSONResponse:
    return JSONResponse(
        {
            "type": "https://mailchimp.com/developer/marketing/docs/errors/",
            "title": title,
            "status": status,
            "detail": detail,
            "instance": "00000000-0000-0000-0000-000000000000",
        },
        status_code=status,
        media_type="application/problem+json",
    )


def _mailchimp(request: Request) -> FakeMailchimp:
    return request.app.state.fake


def guard(request: Request) -> JSONResponse | None:
    """HTTP Basic authentication: any user, the API key as the password."""
    header = request.headers.get("authorization", "")
    password = None
    if header.startswith("Basic "):
        try:
            _, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            pass
    if password != _mailchimp(request).api_key:
        return _problem(
            401, "API Key Invalid", "Your API key may be invalid, or you've attempted to access the wrong datacenter."
        )
    return None


def _not_found() -> JSONResponse:
    return _problem(404, "Resource Not Found", "The requested resource could not be found.")


def _recorded(request: Request) -> FakeMailchimp:
    """The fake, with the request recorded (``FakeMailchimp.requests`` keeps the members' requests)."""
    mc = _mailchimp(request)
    mc.requests.append((request.method, request.url.path))
    return mc


async def root(request: Request) -> Response:
    """The account (API root)."""
    return JSONResponse(
        {
            "account_id": "8d3a3db4d97663a9074efcc16",
            "account_name": "Friends of the Library",
            "email": "office@example.org",
            "role": "owner",
            "pricing_plan_type": "monthly",
            "total_subscribers": 2052,
        }
    )


async def ping(request: Request) -> Response:
    return JSONResponse({"health_status": "Everything's Chimpy!"})


async def lists(request: Request) -> Response:
    mc = _mailchimp(request)
    return JSONResponse({"lists": mc.lists, "total_items": len(mc.lists)})


def _audience(mc: FakeMailchimp, list_id: str) -> dict[str, dict] | None:
    """The list's members (made empty on first use), or None for a list the account does not have."""
    if not any(item["id"] == list_id for item in mc.lists):
        return None
    return mc.members.setdefault(list_id, {})


async def get_member(request: Request) -> Response:
    audience = _audience(_recorded(request), request.path_params["list_id"])
    key = request.path_params["hash"]
    if audience is None or key not in audience:
        return _not_found()
    return JSONResponse(audience[key])


async def set_member(request: Request) -> Response:
    """Add or update a member (``PUT``): ``email_address`` (its MD5 is the path's hash), ``status_if_new`` or
    ``status`` (a member's status stays), ``merge_fields`` (merged)."""
    list_id, key = request.path_params["list_id"], request.path_params["hash"]
    audience = _audience(_recorded(request), list_id)
    if audience is None:
        return _not_found()
    body = json.loads(await request.body() or b"{}")
    email = str(body.get("email_address") or "")
    if hashlib.md5(email.lower().encode()).hexdigest() != key:
        return _problem(400, "Invalid Resource", "The subscriber hash does not match the email_address.")
    existing = audience.get(key)
    status = existing["status"] if existing else body.get("status_if_new") or body.get("status")
    if status not in ("subscribed", "unsubscribed", "cleaned", "pending", "transactional"):
        return _problem(400, "Invalid Resource", "status_if_new is required for a new member.")
    audience[key] = {
        "id": key,
        "email_address": email,
        "status": status,
        "list_id": list_id,
        "merge_fields": {**(existing or {}).get("merge_fields", {}), **(body.get("merge_fields") or {})},
        "tags": (existing or {}).get("tags", []),
    }
    return JSONResponse(audience[key])


async def member_tags(request: Request) -> Response:
    """Add or remove a member's tags: ``tags`` of ``{name, status: active|inactive}``."""
    found = _recorded(request).members.get(request.path_params["list_id"], {}).get(request.path_params["hash"])
    if found is None:
        return _not_found()
    for tag in json.loads(await request.body() or b"{}").get("tags") or []:
        names = [t["name"] for t in found["tags"]]
        if tag.get("status") == "active" and tag["name"] not in names:
            found["tags"].append({"name": tag["name"]})
        elif tag.get("status") == "inactive":
            found["tags"] = [t for t in found["tags"] if t["name"] != tag["name"]]
    return Response(status_code=204)


# -- a list's webhooks ---------------------------------------------------------------------------------------------


def _webhook_problem(body: dict, partial: bool = False) -> JSONResponse | None:
    url = body.get("url")
    if (not partial or "url" in body) and not (isinstance(url, str) and url.startswith(("https://", "http://"))):
        return _problem(400, "Invalid Resource", "The resource submitted could not be validated: url must be a valid URL.")
    for key, allowed in (("events", EVENTS), ("sources", ("user", "admin", "api"))):
        given = body.get(key)
        if given is not None and (not isinstance(given, dict) or set(given) - set(allowed)):
            return _problem(400, "Invalid Resource", f"{key} accepts only: {', '.join(allowed)}.")
    return None


def _hooks(request: Request) -> list[dict] | None:
    """The list's webhooks, or None for a list the account does not have."""
    mc, list_id = _mailchimp(request), request.path_params["list_id"]
    if not any(item["id"] == list_id for item in mc.lists):
        return None
    return mc.webhooks.setdefault(list_id, [])


async def list_webhooks(request: Request) -> Response:
    hooks = _hooks(request)
    if hooks is None:
        return _not_found()
    return JSONResponse({"webhooks": hooks, "list_id": request.path_params["list_id"], "total_items": len(hooks)})


async def add_webhook(request: Request) -> Response:
    """``url`` (one webhook a url), ``events`` and ``sources`` (each a dict of flags; sources default to user and
    admin)."""
    hooks, list_id = _hooks(request), request.path_params["list_id"]
    if hooks is None:
        return _not_found()
    body = json.loads(await request.body() or b"{}")
    if (problem := _webhook_problem(body)) is not None:
        return problem
    if any(h["url"] == body["url"] for h in hooks):
        return _problem(400, "Invalid Resource", "Sorry, you can't use the same url for multiple webhooks.")
    hook = {
        "id": hashlib.md5(f"{list_id}{body['url']}".encode()).hexdigest()[:10],
        "url": body["url"],
        "events": {e: bool((body.get("events") or {}).get(e, False)) for e in EVENTS},
        "sources": {s: bool((body.get("sources") or {}).get(s, s != "api")) for s in ("user", "admin", "api")},
        "list_id": list_id,
    }
    hooks.append(hook)
    return JSONResponse(hook)


def _hook(request: Request) -> dict | None:
    hooks = _mailchimp(request).webhooks.get(request.path_params["list_id"], [])
    return next((h for h in hooks if h["id"] == request.path_params["id"]), None)


async def get_webhook(request: Request) -> Response:
    hook = _hook(request)
    return _not_found() if hook is None else JSONResponse(hook)


async def update_webhook(request: Request) -> Response:
    hook = _hook(request)
    if hook is None:
        return _not_found()
    body = json.loads(await request.body() or b"{}")
    if (problem := _webhook_problem(body, partial=True)) is not None:
        return problem
    if "url" in body:
        hook["url"] = body["url"]
    for key in ("events", "sources"):
        hook[key].update({k: bool(v) for k, v in (body.get(key) or {}).items()})
    return JSONResponse(hook)


async def delete_webhook(request: Request) -> Response:
    hook = _hook(request)
    if hook is None:
        return _not_found()
    _mailchimp(request).webhooks[request.path_params["list_id"]].remove(hook)
    return Response(status_code=204)


ROUTES: list[Row] = [
    ("GET", "/3.0/lists/{list_id}/webhooks", list_webhooks),
    ("POST", "/3.0/lists/{list_id}/webhooks", add_webhook),
    ("GET", "/3.0/lists/{list_id}/webhooks/{id}", get_webhook),
    ("PATCH", "/3.0/lists/{list_id}/webhooks/{id}", update_webhook),
    ("DELETE", "/3.0/lists/{list_id}/webhooks/{id}", delete_webhook),
    ("GET", "/3.0/", root),
    ("GET", "/3.0/ping", ping),
    ("GET", "/3.0/lists", lists),
    ("GET", "/3.0/lists/{list_id}/members/{hash}", get_member),
    ("PUT", "/3.0/lists/{list_id}/members/{hash}", set_member),
    ("POST", "/3.0/lists/{list_id}/members/{hash}/tags", member_tags),
]


def create_app(mc: FakeMailchimp | None = None) -> Starlette:
    return serve(ROUTES, guard, mc or FakeMailchimp())
