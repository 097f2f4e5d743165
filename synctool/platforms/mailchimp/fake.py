"""A local stand-in for Mailchimp's Marketing API v3: root (account), ping, lists, and audience members
(``PUT`` upsert with ``status_if_new``, ``GET``, and ``POST .../tags``), audience webhooks, with HTTP Basic auth (any user, the
key as password) and problem+json errors. ``members[list_id][subscriber_hash]`` holds each member and its tags."""

from __future__ import annotations

import base64
import hashlib
import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

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


def create_app(mc: FakeMailchimp | None = None) -> Starlette:
    mc = mc or FakeMailchimp()

    def authorized(request: Request) -> bool:
        header = request.headers.get("authorization", "")
        if not header.startswith("Basic "):
            return False
        try:
            _, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return False
        return password == mc.api_key

    def guarded(fn):
        async def endpoint(request: Request):
            if not authorized(request):
                return _problem(
                    401, "API Key Invalid", "Your API key may be invalid, or you've attempted to access the wrong datacenter."
                )
            return await fn(request)

        return endpoint

    async def root(request: Request):
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

    async def ping(request: Request):
        return JSONResponse({"health_status": "Everything's Chimpy!"})

    async def lists(request: Request):
        return JSONResponse({"lists": mc.lists, "total_items": len(mc.lists)})

    def not_found() -> JSONResponse:
        return _problem(404, "Resource Not Found", "The requested resource could not be found.")

    async def member(request: Request):
        list_id, key = request.path_params["list_id"], request.path_params["hash"]
        mc.requests.append((request.method, request.url.path))
        if not any(item["id"] == list_id for item in mc.lists):
            return not_found()
        audience = mc.members.setdefault(list_id, {})
        if request.method == "GET":
            return JSONResponse(audience[key]) if key in audience else not_found()
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

    async def member_tags(request: Request):
        list_id, key = request.path_params["list_id"], request.path_params["hash"]
        mc.requests.append((request.method, request.url.path))
        found = mc.members.get(list_id, {}).get(key)
        if found is None:
            return not_found()
        for tag in json.loads(await request.body() or b"{}").get("tags") or []:
            names = [t["name"] for t in found["tags"]]
            if tag.get("status") == "active" and tag["name"] not in names:
                found["tags"].append({"name": tag["name"]})
            elif tag.get("status") == "inactive":
                found["tags"] = [t for t in found["tags"] if t["name"] != tag["name"]]
        return Response(status_code=204)

    def webhook_problem(body: dict, partial: bool = False) -> JSONResponse | None:
        url = body.get("url")
        if (not partial or "url" in body) and not (isinstance(url, str) and url.startswith(("https://", "http://"))):
            return _problem(400, "Invalid Resource", "The resource submitted could not be validated: url must be a valid URL.")
        for key, allowed in (("events", EVENTS), ("sources", ("user", "admin", "api"))):
            given = body.get(key)
            if given is not None and (not isinstance(given, dict) or set(given) - set(allowed)):
                return _problem(400, "Invalid Resource", f"{key} accepts only: {', '.join(allowed)}.")
        return None

    async def list_webhooks(request: Request):
        list_id = request.path_params["list_id"]
        if not any(item["id"] == list_id for item in mc.lists):
            return not_found()
        hooks = mc.webhooks.setdefault(list_id, [])
        if request.method == "GET":
            return JSONResponse({"webhooks": hooks, "list_id": list_id, "total_items": len(hooks)})
        body = json.loads(await request.body() or b"{}")
        if (problem := webhook_problem(body)) is not None:
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

    async def list_webhook(request: Request):
        list_id = request.path_params["list_id"]
        hook = next((h for h in mc.webhooks.get(list_id, []) if h["id"] == request.path_params["id"]), None)
        if hook is None:
            return not_found()
        if request.method == "PATCH":
            body = json.loads(await request.body() or b"{}")
            if (problem := webhook_problem(body, partial=True)) is not None:
                return problem
            if "url" in body:
                hook["url"] = body["url"]
            for key in ("events", "sources"):
                hook[key].update({k: bool(v) for k, v in (body.get(key) or {}).items()})
        elif request.method == "DELETE":
            mc.webhooks[list_id].remove(hook)
            return Response(status_code=204)
        return JSONResponse(hook)

    app = Starlette(
        routes=[
            Route("/3.0/lists/{list_id}/webhooks", guarded(list_webhooks), methods=["GET", "POST"]),
            Route("/3.0/lists/{list_id}/webhooks/{id}", guarded(list_webhook), methods=["GET", "PATCH", "DELETE"]),
            Route("/3.0/", guarded(root)),
            Route("/3.0/ping", guarded(ping)),
            Route("/3.0/lists", guarded(lists)),
            Route("/3.0/lists/{list_id}/members/{hash}", guarded(member), methods=["GET", "PUT"]),
            Route("/3.0/lists/{list_id}/members/{hash}/tags", guarded(member_tags), methods=["POST"]),
        ]
    )
    app.state.fake = mc
    return app
