"""The fake's own controls, not part of LGL (no ``api_version``, no authentication, not recorded): ``POST
/_fake/faults`` (fail the next requests: ``{mode, count, method, path}``; ``gate.py`` makes them), ``GET
/_fake/state`` (what the account holds, and the last requests) and ``POST /_fake/reset``."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.fakes.crm.answers import body_of, fake


async def faults(request: Request) -> Response:
    crm = fake(request)
    body = await body_of(request)
    crm.faults.append(
        {
            "mode": body.get("mode", "500"),
            "count": int(body.get("count", 1)),
            "method": body.get("method"),
            "path": body.get("path"),
        }
    )
    return JSONResponse({"faults": crm.faults})


async def state(request: Request) -> Response:
    crm = fake(request)
    return JSONResponse(
        {
            "stats": crm.stats(),
            "constituents": list(crm.constituents.values()),
            "gifts": list(crm.gifts.values()),
            "events": list(crm.events.values()),
            "invitations": list(crm.invitations.values()),
            "keywords": {str(k): sorted(v) for k, v in crm.keywords.items()},
            "memberships": list(crm.memberships.values()),
            "relationships": list(crm.relationships.values()),
            "group_memberships": list(crm.group_memberships.values()),
            "contact_reports": list(crm.contact_reports.values()),
            "requests": crm.requests[-2000:],
        }
    )


async def reset(request: Request) -> Response:
    fake(request).reset()
    return JSONResponse({"status": "reset"})
