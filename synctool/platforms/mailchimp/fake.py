"""A local stand-in for Mailchimp's Marketing API v3: root (account), ping, lists, and audience members
(``PUT`` upsert with ``status_if_new``, ``GET``, and ``POST .../tags``), audience webhooks, with HTTP Basic auth (any user, the
key as password) and problem+json errors. ``members[list_id][subscriber_hash]`` holds each member and its tags.
One function per operation, each declared with its method and path."""

from __future__ import annotations

import base64
import hashlib

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.platform.edges import FakeApi, Refusal, found, json_body, shows

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


def guard(request: Request, mc: FakeMailchimp) -> JSONResponse | None:
    """HTTP Basic authentication: any user, the API key as the password."""
    header = request.headers.get("authorization", "")
    password = None
    if header.startswith("Basic "):
        try:
            _, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            pass
    if password != mc.api_key:
        return _problem(
            401, "API Key Invalid", "Your API key may be invalid, or you've attempted to access the wrong datacenter."
        )
    return None


api = FakeApi(FakeMailchimp, guard)


def _not_found() -> JSONResponse:
    return _problem(404, "Resource Not Found", "The requested resource could not be found.")


def _recorded(request: Request, mc: FakeMailchimp) -> FakeMailchimp:
    """The fake, with the request recorded (``FakeMailchimp.requests`` keeps the members' requests)."""
    mc.requests.append((request.method, request.url.path))
    return mc


@api.get("/3.0/")
async def root(request: Request, mc: FakeMailchimp) -> Response:
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


@api.get("/3.0/ping")
async def ping(request: Request, mc: FakeMailchimp) -> Response:
    return JSONResponse({"health_status": "Everything's Chimpy!"})


@api.get("/3.0/lists")
async def lists(request: Request, mc: FakeMailchimp) -> Response:
    return JSONResponse({"lists": mc.lists, "total_items": len(mc.lists)})


def _audience(mc: FakeMailchimp, list_id: str) -> dict[str, dict] | None:
    """The list's members (made empty on first use), or None for a list the account does not have."""
    if not any(item["id"] == list_id for item in mc.lists):
        return None
    return mc.members.setdefault(list_id, {})


@api.get("/3.0/lists/{list_id}/members/{hash}")
async def get_member(request: Request, mc: FakeMailchimp) -> Response:
    audience = _audience(_recorded(request, mc), request.path_params["list_id"])
    key = request.path_params["hash"]
    if audience is None or key not in audience:
        return _not_found()
    return JSONResponse(audience[key])


@api.put("/3.0/lists/{list_id}/members/{hash}")
async def set_member(request: Request, mc: FakeMailchimp) -> Response:
    """Add or update a member (``PUT``): ``email_address`` (its MD5 is the path's hash), ``status_if_new`` or
    ``status`` (a member's status stays), ``merge_fields`` (merged)."""
    list_id, key = request.path_params["list_id"], request.path_params["hash"]
    audience = _audience(_recorded(request, mc), list_id)
    if audience is None:
        return _not_found()
    body = await json_body(request)
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


@api.post("/3.0/lists/{list_id}/members/{hash}/tags")
async def member_tags(request: Request, mc: FakeMailchimp) -> Response:
    """Add or remove a member's tags: ``tags`` of ``{name, status: active|inactive}``."""
    audience = _recorded(request, mc).members.get(request.path_params["list_id"], {})
    member = found(audience.get(request.path_params["hash"]), _not_found)
    for tag in (await json_body(request)).get("tags") or []:
        names = [t["name"] for t in member["tags"]]
        if tag.get("status") == "active" and tag["name"] not in names:
            member["tags"].append({"name": tag["name"]})
        elif tag.get("status") == "inactive":
            member["tags"] = [t for t in member["tags"] if t["name"] != tag["name"]]
    return Response(status_code=204)


# -- a list's webhooks ---------------------------------------------------------------------------------------------


async def _webhook_body(request: Request, partial: bool = False) -> dict:
    """A webhook's JSON body, checked (``partial``: an update); Mailchimp's 400 (a ``Refusal``) when it is wrong."""
    body = await json_body(request)
    url = body.get("url")
    if (not partial or "url" in body) and not (isinstance(url, str) and url.startswith(("https://", "http://"))):
        raise Refusal(
            _problem(400, "Invalid Resource", "The resource submitted could not be validated: url must be a valid URL.")
        )
    for key, allowed in (("events", EVENTS), ("sources", ("user", "admin", "api"))):
        given = body.get(key)
        if given is not None and (not isinstance(given, dict) or set(given) - set(allowed)):
            raise Refusal(_problem(400, "Invalid Resource", f"{key} accepts only: {', '.join(allowed)}."))
    return body


def _hooks(request: Request, mc: FakeMailchimp) -> list[dict]:
    """The list's webhooks, or Mailchimp's 404 for a list the account does not have."""
    list_id = request.path_params["list_id"]
    if not any(item["id"] == list_id for item in mc.lists):
        raise Refusal(_not_found())
    return mc.webhooks.setdefault(list_id, [])


@api.get("/3.0/lists/{list_id}/webhooks")
async def list_webhooks(request: Request, mc: FakeMailchimp) -> Response:
    hooks = _hooks(request, mc)
    return JSONResponse({"webhooks": hooks, "list_id": request.path_params["list_id"], "total_items": len(hooks)})


@api.post("/3.0/lists/{list_id}/webhooks")
async def add_webhook(request: Request, mc: FakeMailchimp) -> Response:
    """``url`` (one webhook a url), ``events`` and ``sources`` (each a dict of flags; sources default to user and
    admin)."""
    hooks, list_id = _hooks(request, mc), request.path_params["list_id"]
    body = await _webhook_body(request)
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


def _hook(request: Request, mc: FakeMailchimp) -> dict:
    """The webhook the path names, or Mailchimp's 404."""
    hooks = mc.webhooks.get(request.path_params["list_id"], [])
    return found(next((h for h in hooks if h["id"] == request.path_params["id"]), None), _not_found)


get_webhook = api.get("/3.0/lists/{list_id}/webhooks/{id}")(shows(_hook))


@api.patch("/3.0/lists/{list_id}/webhooks/{id}")
async def update_webhook(request: Request, mc: FakeMailchimp) -> Response:
    hook = _hook(request, mc)
    body = await _webhook_body(request, partial=True)
    if "url" in body:
        hook["url"] = body["url"]
    for key in ("events", "sources"):
        hook[key].update({k: bool(v) for k, v in (body.get(key) or {}).items()})
    return JSONResponse(hook)


@api.delete("/3.0/lists/{list_id}/webhooks/{id}")
async def delete_webhook(request: Request, mc: FakeMailchimp) -> Response:
    hook = _hook(request, mc)  # Mailchimp's 404 before the list's webhooks are looked at
    mc.webhooks[request.path_params["list_id"]].remove(hook)
    return Response(status_code=204)


create_app = api.create_app
