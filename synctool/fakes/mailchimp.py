"""A local stand-in for Mailchimp's Marketing API v3: root (account), ping and lists, with HTTP Basic
auth (any user, the key as password) and problem+json errors."""

from __future__ import annotations

import base64

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class FakeMailchimp:
    def __init__(self, api_key: str = "mc-api-key-us14"):
        self.api_key = api_key
        self.lists = [{"id": "b7e21c0d94", "web_id": 412937, "name": "Newsletter", "stats": {"member_count": 1840}},
                      {"id": "c0ffee1234", "web_id": 412938, "name": "Volunteers", "stats": {"member_count": 212}}]


def _problem(status: int, title: str, detail: str) -> JSONResponse:
    return JSONResponse({"type": "https://mailchimp.com/developer/marketing/docs/errors/", "title": title,
                         "status": status, "detail": detail, "instance": "00000000-0000-0000-0000-000000000000"},
                        status_code=status, media_type="application/problem+json")


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
                return _problem(401, "API Key Invalid", "Your API key may be invalid, or you've attempted to access the wrong datacenter.")
            return await fn(request)
        return endpoint

    async def root(request: Request):
        return JSONResponse({"account_id": "8d3a3db4d97663a9074efcc16", "account_name": "Friends of the Library",
                             "email": "office@example.org", "role": "owner", "pricing_plan_type": "monthly",
                             "total_subscribers": 2052})

    async def ping(request: Request):
        return JSONResponse({"health_status": "Everything's Chimpy!"})

    async def lists(request: Request):
        return JSONResponse({"lists": mc.lists, "total_items": len(mc.lists)})

    app = Starlette(routes=[Route("/3.0/", guarded(root)), Route("/3.0/ping", guarded(ping)),
                            Route("/3.0/lists", guarded(lists))])
    app.state.fake = mc
    return app
