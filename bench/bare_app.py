"""The baseline: a Starlette app that only answers 200, run under the same uvicorn settings."""

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route


async def ok(request):
    return JSONResponse({"status": "ok"})


app = Starlette(routes=[Route("/webhooks/pos", ok, methods=["POST"])])
