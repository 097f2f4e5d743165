"""The staff page (``synctool serve --admin-ui``): the sync log, failures, money and donor changes in a browser,
under ``/admin``, for each role.

Server-rendered HTML (Starlette's Jinja2 templates, autoescaped), no script at all, and a stylesheet from the
same origin, which the ``Content-Security-Policy`` header holds it to. Sign-in is a one-time link
(``synctool.ops.sign_in``) that opens a session cookie; Starlette's ``AuthenticationMiddleware`` turns the cookie
into the user and their role's scopes, as the admin API does with its bearer token.

Each page calls the same operation as its CLI command and admin API route, and shows what it returns. Each
action is a POST carrying the session's CSRF token, refused (403) when the role may not take it or the token
is wrong whatever the browser sends, and written to the staff actions with who asked; it answers with a
redirect to the page it came from (post, redirect, get), which shows what it did.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import jinja2
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser, has_required_scope
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from synctool import platforms, store
from synctool.errors import InvalidSignature, PayloadTooLarge, SynctoolError, http_status
from synctool.ops import sign_in
from synctool.ops.users import ROLES
from synctool.runtime import Runtime
from synctool.web import staff_views as views
from synctool.web.auth import ADMIN, SUPER, VIEWER, TeamMember, credentials
from synctool.web.bounds import QueryGuard, read_body
from synctool.web.staff_views import Ask, Shown

logger = logging.getLogger("synctool.staff_page")

COOKIE = "synctool_session"
PREFIX = sign_in.PAGE_PATH
MAX_FORM_BYTES = 64 * 1024
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
#: the pages in the navigation, with the least role that sees each
NAV = (
    ("overview", "Overview", "/", VIEWER),
    ("syncs", "Sync log", "/syncs", VIEWER),
    ("failed", "Failed", "/failed", VIEWER),
    ("events", "Events", "/events", VIEWER),
    ("reconcile", "Reconcile", "/reconcile", ADMIN),
    ("donors", "Donors", "/donors", ADMIN),
    ("payouts", "Payouts", "/payouts", ADMIN),
    ("year-end", "Year end", "/year-end", ADMIN),
    ("team", "Team", "/team", SUPER),
    ("actions", "Actions", "/actions", VIEWER),
)


class StaffMember(TeamMember):
    def __init__(self, record: dict[str, Any], session: sign_in.Session):
        super().__init__(record)
        self.session = session


class SessionBackend(AuthenticationBackend):
    """The session cookie -> the user as they are now, with their role's scopes; none when signed out."""

    def __init__(self, rt: Runtime):
        self.rt = rt

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        secret = conn.cookies.get(COOKIE)
        if not secret:
            return None

        def find() -> sign_in.Session:
            db = store.connect(self.rt.config.db_path, migrate=False)
            try:
                return sign_in.session(db, secret)
            finally:
                db.close()

        try:
            found = await run_in_threadpool(find)
        except sign_in.SignedOut as exc:
            conn.scope["synctool.signed_out"] = exc.code
            return None
        scopes, _ = credentials(found.user)
        return scopes, StaffMember(found.user, found)


async def _form(request: Request) -> dict[str, str]:
    """An HTML form's ``application/x-www-form-urlencoded`` body (the only kind these forms send), read up to
    MAX_FORM_BYTES as it streams (PayloadTooLarge past it, whatever the client declared)."""
    raw = await read_body(request, MAX_FORM_BYTES)
    return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))


def _other_site(request: Request) -> bool:
    """A form posted from another host (its ``Origin`` names one; "null" is an opaque origin). Forms without an
    ``Origin`` (older browsers, scripts) are judged by the CSRF token alone. This also stops a login CSRF: another
    site signing a person in as someone else with its own link."""
    origin = request.headers.get("origin")
    if origin is None:
        return False
    return origin == "null" or urlsplit(origin).hostname != request.url.hostname


def _back(target: str | None, fallback: str) -> str:
    """Where an action returns: a page of this site, never another origin."""
    if target and target.startswith(PREFIX + "/") and not target.startswith("//") and "\\" not in target:
        return target
    return PREFIX + fallback


def routes(rt: Runtime) -> list[Mount]:
    """The staff page as one mount at ``/admin``."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("synctool.web", "templates"),
        autoescape=jinja2.select_autoescape(default=True),
    )
    env.globals.update(prefix=PREFIX, nav=NAV, roles=ROLES)
    env.filters["when"] = views.when
    env.filters["query"] = lambda params, **changes: urlencode({k: v for k, v in {**params, **changes}.items() if v})
    env.filters["segment"] = lambda value: quote(str(value), safe="")  # one path segment, whatever it holds
    templates = Jinja2Templates(env=env)
    sources = [p.role for p in platforms.in_use(rt.config)]

    def render(request: Request, shown: Shown, flash: str | None = None) -> Response:
        known = "user" in request.scope and request.user.is_authenticated  # not yet, when a guard refused the request
        user = request.user.record if known else None
        session = getattr(request.user, "session", None) if known else None
        context = {
            "user": user,
            "csrf": session.csrf if session else "",
            "can": {role: known and has_required_scope(request, [role]) for role in (VIEWER, ADMIN, SUPER)},
            "flash": flash,
            "here": request.url.path + (f"?{request.url.query}" if request.url.query else ""),
            "sources": sources,
            **shown.context,
        }
        response = templates.TemplateResponse(request, shown.template, context, status_code=shown.status)
        response.headers.update(SECURITY_HEADERS)
        return response

    def message(request: Request, status: int, title: str, text: str) -> Response:
        return render(request, Shown("message.html", {"title": title, "text": text}, status))

    def in_db(work: Callable[[sqlite3.Connection], Any]) -> Any:
        conn = store.connect(rt.config.db_path, migrate=False)
        try:
            return work(conn)
        finally:
            conn.close()

    def page(min_role: str, view: Callable[[Ask], Shown]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            if not request.user.is_authenticated:
                why = request.scope.get("synctool.signed_out")
                return RedirectResponse(f"{PREFIX}/sign-in" + (f"?why={why}" if why else ""), status_code=303)
            if not has_required_scope(request, [min_role]):
                return message(request, 403, "Not for your role", f"This page needs {min_role}; you are {request.user.role}.")
            secret = request.user.session.secret

            def run(conn: sqlite3.Connection) -> tuple[Shown, str | None]:
                ask = Ask(conn, rt, request.user.record, dict(request.path_params), dict(request.query_params))
                try:
                    shown = view(ask)
                except SynctoolError as exc:
                    detail = getattr(exc, "detail", "")
                    shown = Shown("message.html", {"title": str(exc), "text": detail}, http_status(exc))
                return shown, sign_in.said(conn, secret)

            shown, flash = await run_in_threadpool(in_db, run)
            return render(request, shown, flash)

        return endpoint

    def action(min_role: str, name: str, act: Callable[[Ask], tuple[str, str | None]], fallback: str) -> Callable[[Request], Any]:
        """A POST: role, then CSRF token, then the operation; its outcome is recorded and said on the next page."""

        async def endpoint(request: Request) -> Response:
            if not request.user.is_authenticated:
                return message(request, 401, "Signed out", "Sign in again, then repeat what you did.")
            try:
                form = await _form(request)
            except PayloadTooLarge as exc:
                return too_large(request, exc)
            user, session = request.user.record, request.user.session
            refusal = None
            if _other_site(request):
                refusal = (403, "Refused", "The form came from another site.")
            elif not has_required_scope(request, [min_role]):
                refusal = (403, "Not for your role", f"{name} needs {min_role}; you are {user['role']}.")
            elif not sign_in.csrf_ok(session, form.get("csrf")):
                refusal = (
                    403,
                    "Refused",
                    "The form's security token is missing or not this session's: reload the page and try again.",
                )

            def run(conn: sqlite3.Connection) -> tuple[str, str | None, bool]:
                from synctool.ops.actions import record

                ask = Ask(conn, rt, user, dict(request.path_params), dict(request.query_params), form)
                named = form.get("target") or next(iter(ask.path.values()), None)
                target = None if named is None else str(named)
                note = form.get("note") or None
                if refusal is not None:
                    record(conn, who=user["email"], role=user["role"], via="page", action=name, target=target, note=note,
                           outcome=f"refused ({refusal[0]}): {refusal[2]}")  # fmt: skip
                    return "", None, False
                try:
                    said, target = act(ask)
                    outcome, ok = "done", True
                except SynctoolError as exc:
                    detail = getattr(exc, "detail", "")
                    said, outcome, ok = f"Not done: {exc}" + (f" ({detail})" if detail else ""), f"refused: {exc}", False
                record(
                    conn, who=user["email"], role=user["role"], via="page", action=name, target=target, note=note, outcome=outcome
                )
                sign_in.say(conn, session.secret, said)
                return said, target, ok

            await run_in_threadpool(in_db, run)
            if refusal is not None:
                return message(request, *refusal)
            return RedirectResponse(_back(form.get("back"), fallback), status_code=303)

        return endpoint

    # -- signing in and out (no session needed) --------------------------------------------------------

    async def sign_in_form(request: Request) -> Response:
        if request.method != "POST":  # says only what its code names: no text from the URL reaches the page
            why = sign_in.MESSAGES.get(request.query_params.get("why") or "")
            return render(request, Shown("sign_in.html", {"sent": False, "why": why}))
        if _other_site(request):
            return message(request, 403, "Refused", "The form came from another site.")
        try:
            form = await _form(request)
        except PayloadTooLarge as exc:
            return too_large(request, exc)
        email = (form.get("email") or "").strip()
        if "@" not in email:
            return render(request, Shown("sign_in.html", {"sent": False, "why": sign_in.MESSAGES["email"]}, 400))
        client = request.client.host if request.client else ""
        # the same answer, status and work whoever asks, and the mail leaves from drain's outbox
        await run_in_threadpool(in_db, lambda conn: sign_in.request_link(conn, email, client))
        return render(request, Shown("sign_in.html", {"sent": True, "why": None}))

    async def login(request: Request) -> Response:
        token = request.path_params["token"]
        if request.method != "POST":  # GET and HEAD only show who the link is for: a mail scanner spends nothing
            try:
                who = await run_in_threadpool(in_db, lambda conn: sign_in.link_user(conn, token))
            except InvalidSignature as exc:
                return message(request, 401, str(exc), exc.detail)
            return render(request, Shown("login.html", {"who": who, "token": token}))
        if _other_site(request):
            return message(request, 403, "Refused", "The form came from another site.")

        def open_session(conn: sqlite3.Connection) -> tuple[sign_in.Session, bool]:
            opened = sign_in.redeem(conn, token)
            _signed(conn, opened.user, "sign in")
            return opened, sign_in.base_url(conn, rt).startswith("https://")

        try:
            opened, public_https = await run_in_threadpool(in_db, open_session)
        except InvalidSignature as exc:
            return message(request, 401, str(exc), exc.detail)
        response = RedirectResponse(PREFIX + "/", status_code=303)
        # behind HTTPS (the proxy says so, or the public URL is https) the cookie is never sent in the clear
        secure = request.url.scheme == "https" or public_https
        response.set_cookie(COOKIE, opened.secret, max_age=int(sign_in.SESSION_TTL.total_seconds()), path=PREFIX,
                            httponly=True, samesite="lax", secure=secure)  # fmt: skip
        return response

    async def sign_out(request: Request) -> Response:
        if request.user.is_authenticated:
            try:
                form = await _form(request)
            except PayloadTooLarge as exc:
                return too_large(request, exc)
            session = request.user.session
            if not sign_in.csrf_ok(session, form.get("csrf")):
                return message(request, 403, "Refused", "The form's security token is not this session's: reload the page.")

            def end(conn: sqlite3.Connection) -> None:
                sign_in.end(conn, session.secret)
                _signed(conn, request.user.record, "sign out")

            await run_in_threadpool(in_db, end)
        response = RedirectResponse(PREFIX + "/sign-in", status_code=303)
        response.delete_cookie(COOKIE, path=PREFIX)
        return response

    def too_large(request: Request, exc: PayloadTooLarge) -> Response:
        return message(request, 413, "The form is too large", exc.detail)

    async def not_found(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return message(request, exc.status_code, "Not here", f"{request.method} {request.url.path}")

    async def broken(request: Request, exc: Exception) -> Response:
        logger.exception("unexpected error on %s", request.url.path)
        return message(request, 500, "Something went wrong", "It is in synctool's log; try again, or tell your administrator.")

    async def bad_query(request: Request) -> Response:
        return message(request, 400, "Not a valid address", "The address holds a control character.")

    page_routes = [
        Route("/", page(VIEWER, views.overview)),
        Route("/syncs", page(VIEWER, views.sync_log)),
        Route("/syncs/{id}", page(VIEWER, views.sync_record)),
        Route("/failed", page(VIEWER, views.failed)),
        Route("/reconcile", page(ADMIN, views.reconcile)),
        Route("/donors", page(ADMIN, views.donor_changes)),
        Route("/payouts", page(ADMIN, views.payouts)),
        Route("/year-end", page(ADMIN, views.year_end_page)),
        Route("/events", page(VIEWER, views.events)),
        Route("/events/map", action(ADMIN, "map event campaign", views.map_event, "/events"), methods=["POST"]),
        Route("/events/remove", action(ADMIN, "remove event mapping", views.unmap_event, "/events"), methods=["POST"]),
        Route("/events/{campaign}", page(VIEWER, views.event_detail)),
        Route("/team", page(SUPER, views.team)),
        Route("/actions", page(VIEWER, views.actions)),
        Route("/syncs/{id}/retry", action(ADMIN, "retry", views.retry, "/failed"), methods=["POST"]),
        Route("/syncs/{id}/resolve", action(ADMIN, "resolve", views.resolve, "/failed"), methods=["POST"]),
        Route("/syncs/{id}/release", action(ADMIN, "release held money", views.release, "/failed"), methods=["POST"]),
        Route("/reconcile/accept", action(ADMIN, "accept difference", views.accept, "/reconcile"), methods=["POST"]),
        Route("/donors/{id:int}/apply", action(ADMIN, "apply donor change", views.apply_change, "/donors"), methods=["POST"]),
        Route(
            "/donors/{id:int}/dismiss", action(ADMIN, "dismiss donor change", views.dismiss_change, "/donors"), methods=["POST"]
        ),
        Route(
            "/donors/matches/{id:int}/accept",
            action(ADMIN, "accept donor match", views.accept_match, "/donors"),
            methods=["POST"],
        ),
        Route(
            "/donors/matches/{id:int}/new",
            action(ADMIN, "new constituent for donor match", views.new_constituent, "/donors"),
            methods=["POST"],
        ),
        Route("/team/invite", action(SUPER, "invite", views.invite, "/team"), methods=["POST"]),
        Route("/team/{id:int}", action(SUPER, "change user", views.change_user, "/team"), methods=["POST"]),
        Route("/sign-in", sign_in_form, methods=["GET", "POST"]),
        Route("/login/{token}", login, methods=["GET", "POST"]),
        Route("/sign-out", sign_out, methods=["POST"]),
        Mount("/static", app=StaticFiles(packages=[("synctool.web", "static")]), name="static"),
    ]
    app = Starlette(
        routes=page_routes,
        middleware=[
            Middleware(QueryGuard, refuse=bad_query),
            Middleware(AuthenticationMiddleware, backend=SessionBackend(rt)),
        ],
        exception_handlers={HTTPException: not_found, Exception: broken},
    )
    return [Mount(PREFIX, app=app)]


def _signed(conn: sqlite3.Connection, user: dict[str, Any], what: str) -> None:
    from synctool.ops.actions import record

    record(conn, who=user["email"], role=user["role"], via="page", action=what, target=user["email"])
