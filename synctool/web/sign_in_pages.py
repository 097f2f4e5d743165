"""Signing in and out of the staff page, and the session cookie between.

Sign-in is a one-time link (``synctool.ops.sign_in``): the sign-in form queues one by mail; the link's GET shows
who it is for (a mail scanner that opens it spends nothing) and its POST spends it and opens a session, whose
secret goes in an ``HttpOnly`` cookie. ``SessionBackend`` turns that cookie into the user as they are now, with
their role's scopes, for Starlette's ``AuthenticationMiddleware``; sign-out ends the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol
from urllib.parse import parse_qsl, urlsplit

from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from synctool import store
from synctool.errors import InvalidSignature, PayloadTooLarge
from synctool.ops import sign_in
from synctool.runtime import Runtime
from synctool.web import guard
from synctool.web.auth import TeamMember, User, credentials
from synctool.web.bounds import QueryGuard, read_body
from synctool.web.render import Renderer, page_prefix

COOKIE = "synctool_session"
MAX_FORM_BYTES = 64 * 1024


class StaffMember(TeamMember):
    def __init__(self, record: User, session: sign_in.Session):
        super().__init__(record)
        self.session = session


class SessionBackend(AuthenticationBackend):
    """The session cookie -> the user as they are now, with their role's scopes; none when signed out. Read on
    the request's one connection (``guard.OneConnection``)."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        secret = conn.cookies.get(COOKIE)
        if not secret:
            return None
        try:
            session = await guard.in_thread(conn, lambda db: sign_in.session(db, secret))
        except sign_in.SignedOut as exc:
            conn.scope["synctool.signed_out"] = exc.code
            return None
        scopes, _ = credentials(session.user)
        return scopes, StaffMember(session.user, session)


async def read_form(request: Request) -> dict[str, str]:
    """An HTML form's ``application/x-www-form-urlencoded`` body (the only kind these forms send), read up to
    MAX_FORM_BYTES as it streams (PayloadTooLarge past it, whatever the client declared)."""
    raw = await read_body(request, MAX_FORM_BYTES)
    return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))


def other_site(request: Request) -> bool:
    """A form posted from another host (its ``Origin`` names one; "null" is an opaque origin). Forms without an
    ``Origin`` (older browsers, scripts) are judged by the CSRF token alone. This also stops a login CSRF: another
    site signing a person in as someone else with its own link."""
    origin = request.headers.get("origin")
    if origin is None:
        return False
    return origin == "null" or urlsplit(origin).hostname != request.url.hostname


def signed(conn: store.Connection, user: User, what: str) -> None:
    """``sign in`` and ``sign out`` in the staff actions."""
    guard.record(conn, guard.Actor.of(user, "page"), what, target=user["email"])


class SignInPages:
    """``/sign-in``, ``/login/{token}`` and ``/sign-out``: the pages that need no session."""

    def __init__(self, rt: Runtime, pages: Renderer):
        self.rt = rt
        self.pages = pages

    def routes(self) -> list[Route]:
        return [
            Route("/sign-in", self.sign_in_form, methods=["GET", "POST"]),
            Route("/login/{token}", self.login, methods=["GET", "POST"]),
            Route("/sign-out", self.sign_out, methods=["POST"]),
        ]

    def form_page(self, request: Request, sent: bool, why: str | None, status: int = 200) -> Response:
        return self.pages.render(request, "sign_in.html", {"sent": sent, "why": why}, status)

    def refused_elsewhere(self, request: Request) -> Response:
        return self.pages.message(request, 403, "Refused", "The form came from another site.")

    def too_large(self, request: Request, exc: PayloadTooLarge) -> Response:
        return self.pages.message(request, 413, "The form is too large", exc.detail)

    async def sign_in_form(self, request: Request) -> Response:
        if request.method != "POST":  # says only what its code names: no text from the URL reaches the page
            return self.form_page(request, False, sign_in.MESSAGES.get(request.query_params.get("why") or ""))
        if other_site(request):
            return self.refused_elsewhere(request)
        try:
            form = await read_form(request)
        except PayloadTooLarge as exc:
            return self.too_large(request, exc)
        email = (form.get("email") or "").strip()
        if "@" not in email:
            return self.form_page(request, False, sign_in.MESSAGES["email"], 400)
        client = request.client.host if request.client else ""
        # the same answer, status and work whoever asks, and the mail leaves from drain's outbox
        await guard.in_thread(request, lambda conn: sign_in.request_link(conn, email, client))
        return self.form_page(request, True, None)

    async def login(self, request: Request) -> Response:
        token = request.path_params["token"]
        if request.method != "POST":  # GET and HEAD only show who the link is for: a mail scanner spends nothing
            try:
                who = await guard.in_thread(request, lambda conn: sign_in.link_user(conn, token))
            except InvalidSignature as exc:
                return self.pages.message(request, 401, str(exc), exc.detail)
            return self.pages.render(request, "login.html", {"who": who, "token": token})
        if other_site(request):
            return self.refused_elsewhere(request)

        def open_session(conn: store.Connection) -> tuple[sign_in.Session, bool]:
            with store.atomic(conn):  # the link spent, the session opened and the sign-in recorded: one commit
                opened = sign_in.redeem(conn, token)
                signed(conn, opened.user, "sign in")
            return opened, sign_in.base_url(conn, self.rt).startswith("https://")

        try:
            opened, public_https = await guard.in_thread(request, open_session)
        except InvalidSignature as exc:
            return self.pages.message(request, 401, str(exc), exc.detail)
        prefix = page_prefix(request)
        response = RedirectResponse(prefix + "/", status_code=303)
        # behind HTTPS (the proxy says so, or the public URL is https) the cookie is never sent in the clear; its
        # path is this staff page's (an organisation's cookie is never sent to another's pages)
        secure = request.url.scheme == "https" or public_https
        response.set_cookie(COOKIE, opened.secret, max_age=int(sign_in.SESSION_TTL.total_seconds()), path=prefix,
                            httponly=True, samesite="lax", secure=secure)  # fmt: skip
        return response

    async def sign_out(self, request: Request) -> Response:
        if request.user.is_authenticated:
            try:
                form = await read_form(request)
            except PayloadTooLarge as exc:
                return self.too_large(request, exc)
            session, user = request.user.session, request.user.record
            if not sign_in.csrf_ok(session, form.get("csrf")):
                return self.pages.message(
                    request, 403, "Refused", "The form's security token is not this session's: reload the page."
                )

            def end(conn: store.Connection) -> None:
                with store.atomic(conn):
                    sign_in.end(conn, session.secret)
                    signed(conn, user, "sign out")

            await guard.in_thread(request, end)
        prefix = page_prefix(request)
        response = RedirectResponse(prefix + "/sign-in", status_code=303)
        response.delete_cookie(COOKIE, path=prefix)
        return response


class PageAnswers(Protocol):
    """What a page behind the session answers when a request goes wrong (the staff page's, the host page's)."""

    async def bad_query(self, request: Request) -> Response: ...

    async def not_found(self, request: Request, exc: Exception) -> Response: ...

    async def broken(self, request: Request, exc: Exception) -> Response: ...


def signed_in_mount(path: str, rt: Runtime, routes: Sequence[BaseRoute], page: PageAnswers) -> Mount:
    """``routes`` mounted at ``path`` behind the session: one connection per request (``guard.OneConnection``) shared
    by the session check and the page, control characters in the address refused, the session cookie read."""
    handlers: dict[type[Exception], Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: page.not_found,
        Exception: page.broken,
    }
    app = Starlette(
        routes=list(routes),
        middleware=[
            Middleware(guard.OneConnection, rt=rt),
            Middleware(QueryGuard, refuse=page.bad_query),
            Middleware(AuthenticationMiddleware, backend=SessionBackend()),
        ],
        exception_handlers=handlers,  # type: ignore[arg-type]
    )
    return Mount(path, app=app)
