"""A local stand-in for Mailchimp's Marketing API v3: root (account), ping, lists, and audience members
(``PUT`` upsert with ``status_if_new``, ``GET``, and ``POST .../tags``), with HTTP Basic auth (any user, the
key as password) and problem+json errors. ``members[list_id][subscriber_hash]`` holds each member and its tags."""

from __future__ import annotations

import base64
import hashlib
import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


class FakeMailchimp:
    def __init__(self, api_key: str = "mc-api-key-us14"):
        self.api_key = api_key
        self.lists = [
            {"id": "b7e21c0d94", "web_id": 412937, "name": "Newsletter", "stats": {"member_count": 1840}},
            {"id": "c0ffee1234", "web_id": 412938, "name": "Volunteers", "stats": {"member_count": 212}},
        ]
        self.members: dict[str, dict[str, dict]] = {}
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

    app = Starlette(
        routes=[
            Route("/3.0/", guarded(root)),
            Route("/3.0/ping", guarded(ping)),
            Route("/3.0/lists", guarded(lists)),
            Route("/3.0/lists/{list_id}/members/{hash}", guarded(member), methods=["GET", "PUT"]),
            Route("/3.0/lists/{list_id}/members/{hash}/tags", guarded(member_tags), methods=["POST"]),
        ]
    )
    app.state.fake = mc
    return app
