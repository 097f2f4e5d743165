"""How the staff page answers: a template rendered with what every page shows (who is signed in, what their
role can do, the navigation, the message an action left), under the security headers every answer carries.

Server-rendered HTML (Jinja2, autoescaped), no script at all, and a stylesheet from the same origin, which the
``Content-Security-Policy`` header holds it to.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from starlette.authentication import has_required_scope
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from synctool import platforms
from synctool.errors import InvalidInput
from synctool.ops import sign_in
from synctool.ops.users import ROLES
from synctool.runtime import Runtime
from synctool.timeutil import parse_moment
from synctool.web.auth import ADMIN, SUPER, VIEWER

PREFIX = sign_in.PAGE_PATH
SECURITY_HEADERS = {
    # no script, no frame, nothing from another origin; forms post only here
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # a sign-in link's token never leaves in a Referer; the page's own forms keep their Origin (with no-referrer
    # a browser sends "Origin: null", which the Origin check must refuse)
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def when(value: str | None) -> str:
    """A stored UTC time, shortened for a table: ``2026-11-24 14:05 UTC``."""
    if not value:
        return ""
    try:
        moment = parse_moment(value)
    except InvalidInput:
        return value
    return datetime.strftime(moment, "%Y-%m-%d %H:%M UTC")


def _environment(nav: Sequence[Any]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("synctool.web", "templates"),
        autoescape=jinja2.select_autoescape(default=True),
    )
    env.globals.update(prefix=PREFIX, nav=nav, roles=ROLES)
    env.filters["when"] = when
    env.filters["query"] = lambda params, **changes: urlencode({k: v for k, v in {**params, **changes}.items() if v})
    env.filters["segment"] = lambda value: quote(str(value), safe="")  # one path segment, whatever it holds
    return env


class Renderer:
    """The staff page's templates. ``nav``: the pages in the navigation (``staff_page.PAGES``' rows with a label;
    each has ``name``, ``label``, ``path`` and ``role``)."""

    def __init__(self, rt: Runtime, nav: Sequence[Any]):
        self.templates = Jinja2Templates(env=_environment(nav))
        self.sources = [p.role for p in platforms.in_use(rt.config)]

    def render(
        self,
        request: Request,
        template: str,
        context: dict[str, Any],
        status: int = 200,
        *,
        flash: str | None = None,
        current: str | None = None,
    ) -> Response:
        """``template`` with ``context`` and what every page shows; ``current`` names the navigation's page."""
        known = "user" in request.scope and request.user.is_authenticated  # not yet, when a guard refused the request
        session = getattr(request.user, "session", None) if known else None
        shared = {
            "user": request.user.record if known else None,
            "csrf": session.csrf if session else "",
            "can": {role: known and has_required_scope(request, [role]) for role in (VIEWER, ADMIN, SUPER)},
            "flash": flash,
            "here": request.url.path + (f"?{request.url.query}" if request.url.query else ""),
            "sources": self.sources,
            "current": current,
        }
        response = self.templates.TemplateResponse(request, template, {**shared, **context}, status_code=status)
        response.headers.update(SECURITY_HEADERS)
        return response

    def message(self, request: Request, status: int, title: str, text: str) -> Response:
        """A page that says one thing: a refusal, an error, a page not here."""
        return self.render(request, "message.html", {"title": title, "text": text}, status)
