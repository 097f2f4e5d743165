"""The host page (``/host``): the host's operators' overview of every organisation on the host.

One page, for the host's operators (``synctool users add EMAIL --host-admin``, ``synctool/host.py``): each
organisation's name, platforms in use, jobs due, failed, last drain and last poll (``ops.host_operators.overview``: counts and
times, no donor data), its error in its row when it cannot be read, and its name a link to its staff page
(``/o/NAME/admin/``) only where the operator is also an active user of that organisation.

Signing in is the staff page's (``sign_in_pages``: a one-time link shown by GET and spent by POST, an ``HttpOnly``
session cookie, CSRF on sign-out, the security headers) on the host's own database, with the cookie's path this
page's: an organisation's link, session or cookie opens nothing here, and a host operator's nothing of an
organisation's. The host sends no mail, so its sign-in page says how to get a link instead of offering to send one.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from synctool import host, platforms
from synctool.ops import sign_in
from synctool.ops.host_operators import overview
from synctool.runtime import Runtime
from synctool.web.render import Renderer, page_prefix
from synctool.web.sign_in_pages import SignInPages, signed_in_mount

__all__ = ["routes"]

#: what the sign-in page may say, by the code in its URL: the staff page's, but a host operator asks the host
MESSAGES = {**sign_in.MESSAGES, "deactivated": "This account is deactivated. Ask whoever runs synctool on this host."}


class HostPage(SignInPages):
    """The overview, and signing in and out (the staff page's, here)."""

    def __init__(self, rt: Runtime, pages: Renderer, environ: Mapping[str, str]):
        super().__init__(rt, pages)
        self.environ = environ

    def host_routes(self) -> list[BaseRoute]:
        return [
            Route("/", self.overview),
            Route("/sign-in", self.sign_in_form),
            Route("/login/{token}", self.login, methods=["GET", "POST"]),
            Route("/sign-out", self.sign_out, methods=["POST"]),
            Mount("/static", app=StaticFiles(packages=[("synctool.web", "static")]), name="static"),
        ]

    async def overview(self, request: Request) -> Response:
        if not request.user.is_authenticated:
            why = request.scope.get("synctool.signed_out")
            return RedirectResponse(f"{page_prefix(request)}/sign-in" + (f"?why={why}" if why else ""), status_code=303)
        rows = await run_in_threadpool(overview, self.environ, request.user.record["email"])
        return self.pages.render(request, "host.html", {"rows": rows})

    async def sign_in_form(self, request: Request) -> Response:
        """No form: the host sends no mail; says only what its code names, never text from the URL."""
        why = MESSAGES.get(request.query_params.get("why") or "")
        return self.pages.render(request, "host_sign_in.html", {"why": why})

    async def not_found(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return self.pages.message(request, exc.status_code, "Not here", f"{request.method} {request.url.path}")

    async def broken(self, request: Request, exc: Exception) -> Response:
        import logging

        logging.getLogger("synctool.host_page").exception("unexpected error on %s", request.url.path)
        return self.pages.message(request, 500, "Something went wrong", "It is in synctool's log; try again.")

    async def bad_query(self, request: Request) -> Response:
        return self.pages.message(request, 400, "Not a valid address", "The address holds a control character.")


def routes(environ: Mapping[str, str]) -> list[BaseRoute]:
    """The host page as one mount at ``/host`` (the app that serves it adds these routes beside its own, as it
    does ``staff_page.routes``): the host's database (made and migrated now), one connection per request, control
    characters in the address refused, the host's session cookie read. ``environ``: where the host's data folder
    is (``$SYNCTOOL_HOME``)."""
    platforms.registered()  # their config sections, before the host's config is read
    rt = host.runtime(environ)
    rt.open_database().close()
    page = HostPage(rt, Renderer(rt, ()), environ)
    return [signed_in_mount(host.PAGE_PATH, rt, page.host_routes(), page)]
