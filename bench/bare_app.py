"""The baseline: a Starlette app that only answers 200, run under the same uvicorn settings."""

from starlette.applications import Starlette
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route


async def ok(request):
    return JSONResponse({"status": "ok"})


app = Starlette(routes=[Route("/webhooks/pos", ok, methods=["POST"])])


PAGE = "<!doctype html><html><head><title>page</title></head><body><main><h1>A page</h1></main></body></html>"


async def page(request):
    return HTMLResponse(PAGE)


app.add_route("/admin/", page, methods=["GET"])
