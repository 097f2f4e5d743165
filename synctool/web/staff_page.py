"""The staff page (``synctool serve --admin-ui``): the sync log, failures, money and donor changes in a browser,
under ``/admin``, for each role.

Read it top-down: ``PAGES`` and ``ACTIONS`` are the page's two tables, and everything else is built from them.

- ``PAGES``: one row a page (path, minimum role, navigation label, view). The view is a function of
  ``staff_views`` and its name is the page's one name: its template is ``templates/<name>.html`` and it is the
  navigation's key. A row with a label is in the navigation, in the table's order. A new page is a view, a
  template and a row here.
- ``ACTIONS``: one row a form's POST (path, minimum role, the name the staff actions record it by, the action
  function of ``staff_views``, the page it returns to when the form names none).
- ``StaffPage`` turns a row into an endpoint behind the request guard (``guard``): a page needs a session and
  its role; an action also a form from this site with the session's CSRF token, whatever the browser sends,
  and runs the operation, its staff-action record and the message for the next page in one transaction, then
  redirects to the page it came from (post, redirect, get). Signing in and out is ``sign_in_pages``; the
  templates, the navigation and the security headers are ``render``.

Each page calls the same operation as its CLI command and admin API route, and shows what it returns.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from synctool.errors import PayloadTooLarge
from synctool.ops import sign_in
from synctool.runtime import Runtime
from synctool.web import guard
from synctool.web import staff_views as views
from synctool.web.auth import ADMIN, SUPER, VIEWER
from synctool.web.bounds import QueryGuard
from synctool.web.render import PREFIX, SECURITY_HEADERS, Problem, Renderer
from synctool.web.sign_in_pages import COOKIE, SessionBackend, SignInPages, other_site, read_form
from synctool.web.staff_views import Ask, Shown

__all__ = ["ACTIONS", "COOKIE", "PAGES", "PREFIX", "SECURITY_HEADERS", "Action", "Page", "routes"]

logger = logging.getLogger("synctool.staff_page")


@dataclass(frozen=True)
class Page:
    """A page: ``path`` (under ``/admin``) shows ``view``'s result in ``templates/<view's name>.html`` to
    ``role`` and above; with a ``label`` it is in the navigation."""

    path: str
    role: str
    label: str | None
    view: Callable[[Ask], Shown]

    @property
    def name(self) -> str:
        return self.view.__name__

    @property
    def template(self) -> str:
        return f"{self.name}.html"


@dataclass(frozen=True)
class Action:
    """A form's POST to ``path``: ``act`` for ``role`` and above, recorded as ``name``; back to ``back`` when
    the form names no page of its own. ``calls_out``: it asks an outside system, so it does not hold the
    write lock while it waits (it commits as it goes, then its record)."""

    path: str
    role: str
    name: str
    act: Callable[[Ask], tuple[str, str | None]]
    back: str
    calls_out: bool = False


PAGES = (
    Page("/", VIEWER, "Overview", views.overview),
    Page("/syncs", VIEWER, "Sync log", views.syncs),
    Page("/syncs/{id}", VIEWER, None, views.sync_record),
    Page("/failed", VIEWER, "Failed", views.failed),
    Page("/events", VIEWER, "Events", views.events),
    Page("/events/{campaign}", VIEWER, None, views.event_detail),
    Page("/reconcile", ADMIN, "Reconcile", views.reconcile),
    Page("/donors", ADMIN, "Donors", views.donors),
    Page("/payouts", ADMIN, "Payouts", views.payouts),
    Page("/year-end", ADMIN, "Year end", views.year_end),
    Page("/mappings", ADMIN, "Mappings", views.mappings),
    Page("/settings", ADMIN, "Settings", views.settings),
    Page("/team", SUPER, "Team", views.team),
    Page("/actions", VIEWER, "Actions", views.actions),
)

ACTIONS = (
    Action("/syncs/{id}/retry", ADMIN, "retry", views.retry, "/failed"),
    Action("/syncs/{id}/resolve", ADMIN, "resolve", views.resolve, "/failed"),
    Action("/syncs/{id}/release", ADMIN, "release held money", views.release, "/failed"),
    Action("/events/map", ADMIN, "map event campaign", views.map_event, "/events"),
    Action("/events/remove", ADMIN, "remove event mapping", views.unmap_event, "/events"),
    Action("/reconcile/accept", ADMIN, "accept difference", views.accept, "/reconcile"),
    Action("/donors/{id:int}/apply", ADMIN, "apply donor change", views.apply_change, "/donors", calls_out=True),
    Action("/donors/{id:int}/dismiss", ADMIN, "dismiss donor change", views.dismiss_change, "/donors"),
    Action("/donors/matches/{id:int}/accept", ADMIN, "accept donor match", views.accept_match, "/donors"),
    Action("/donors/matches/{id:int}/new", ADMIN, "new constituent for donor match", views.new_constituent, "/donors"),
    Action("/mappings/types", ADMIN, "set type default", views.set_type_default, "/mappings"),
    Action("/mappings/overrides", ADMIN, "set campaign override", views.set_campaign_override, "/mappings"),
    Action("/mappings/funds", ADMIN, "set fund override", views.set_fund_override, "/mappings"),
    Action("/mappings/payments", ADMIN, "set payment method", views.set_payment_method, "/mappings"),
    Action("/mappings/custom-fields", ADMIN, "set custom field", views.set_custom_field, "/mappings"),
    Action("/mappings/mailing-lists", ADMIN, "set mailing list mapping", views.set_mailing_list, "/mappings"),
    Action("/mappings/tag-rules", ADMIN, "set tag rule", views.set_tag_rule, "/mappings"),
    Action("/mappings/remove", ADMIN, "remove mapping", views.remove_mapping, "/mappings"),
    Action("/mappings/refresh", ADMIN, "read the CRM's lists", views.refresh_lists, "/mappings", calls_out=True),
    Action("/settings/sync-mode", ADMIN, "set sync mode", views.set_sync_mode, "/settings"),
    Action("/settings/donor-matching", ADMIN, "set donor matching", views.set_donor_matching, "/settings"),
    Action("/settings/alert-recipients", ADMIN, "set alert recipients", views.set_alert_recipients, "/settings"),
    Action("/settings/platform/{name}", ADMIN, "change platform setting", views.set_platform_setting, "/settings"),
    Action("/team/invite", SUPER, "invite", views.invite, "/team"),
    Action("/team/{id:int}", SUPER, "change user", views.change_user, "/team"),
)

#: the pages in the navigation, in order
NAV = tuple(p for p in PAGES if p.label)


def section(page: Page) -> str:
    """The navigation's page a page sits under (itself, or the one whose path leads to it: ``/syncs/{id}``
    is under the sync log)."""
    under = [n for n in NAV if page.path == n.path or (n.path != "/" and page.path.startswith(n.path + "/"))]
    return max(under, key=lambda n: len(n.path)).name if under else page.name


def _back(target: str | None, fallback: str) -> str:
    """Where an action returns: a page of this site, never another origin."""
    if target and target.startswith(PREFIX + "/") and not target.startswith("//") and "\\" not in target:
        return target
    return PREFIX + fallback


#: why a form is refused before its action runs: (status, title, text)
Refusal = tuple[int, str, str]


class StaffPage:
    """The endpoints of ``PAGES`` and ``ACTIONS``, and the page's error pages."""

    def __init__(self, rt: Runtime, pages: Renderer):
        self.rt = rt
        self.pages = pages

    async def show(self, page: Page, request: Request) -> Response:
        """A page: signed in, then the role, then the view and the message an action left, on one connection."""
        if not request.user.is_authenticated:
            why = request.scope.get("synctool.signed_out")
            return RedirectResponse(f"{PREFIX}/sign-in" + (f"?why={why}" if why else ""), status_code=303)
        refused = guard.role_refusal(request, page.role)
        if refused:
            return self.pages.message(request, 403, "Not for your role", f"This page {refused}.")
        secret = request.user.session.secret

        def read(conn: sqlite3.Connection) -> tuple[guard.Done[Shown], str | None]:
            ask = Ask(conn, self.rt, request.user.record, dict(request.path_params), dict(request.query_params))
            return guard.attempt(lambda: page.view(ask)), sign_in.said(conn, secret)

        done, waiting = await guard.in_thread(request, read)
        flash, problem = Problem.read(waiting)
        if done.value is None:  # the view refused: its error's page, with what an action left to say
            said = {"title": str(done.error), "text": done.detail}
            return self.pages.render(request, "message.html", said, done.status, flash=flash, problem=problem)
        shown = done.value
        return self.pages.render(
            request, page.template, shown.context, shown.status, flash=flash, problem=problem, current=section(page)
        )

    def refusal(self, request: Request, action: Action, form: dict[str, str]) -> Refusal | None:
        """A form from another site, a role below the action's, or a CSRF token not this session's."""
        if other_site(request):
            return 403, "Refused", "The form came from another site."
        refused = guard.role_refusal(request, action.role)
        if refused:
            return 403, "Not for your role", f"{action.name} {refused}."
        if not sign_in.csrf_ok(request.user.session, form.get("csrf")):
            return 403, "Refused", "The form's security token is missing or not this session's: reload the page and try again."
        return None

    async def act(self, action: Action, request: Request) -> Response:
        """A POST: role, then CSRF token, then the operation; its outcome is recorded and said on the next page."""
        if not request.user.is_authenticated:
            return self.pages.message(request, 401, "Signed out", "Sign in again, then repeat what you did.")
        try:
            form = await read_form(request)
        except PayloadTooLarge as exc:
            return self.too_large(request, exc)
        refused = self.refusal(request, action, form)
        await guard.in_thread(request, lambda conn: self.run(conn, request, action, form, refused))
        if refused is not None:
            return self.pages.message(request, *refused)
        # refused by the operation, the page shows the problem beside its field and focuses the field (which
        # brings it into view; a #fragment would stop the browser's autofocus)
        return RedirectResponse(_back(form.get("back"), action.back), status_code=303)

    def run(
        self, conn: sqlite3.Connection, request: Request, action: Action, form: dict[str, str], refused: Refusal | None
    ) -> None:
        """The action (or its refusal), its staff-action record and the message for the next page: done, or
        refused with what was typed kept for the form (``Problem``)."""
        user, session = request.user.record, request.user.session
        ask = Ask(conn, self.rt, user, dict(request.path_params), dict(request.query_params), form)
        actor = guard.Actor.of(user, "page")
        named = form.get("target") or next(iter(ask.path.values()), None)
        target = None if named is None else str(named)
        note = form.get("note") or None
        if refused is not None:
            guard.record(conn, actor, action.name, target=target, note=note, outcome=f"refused ({refused[0]}): {refused[2]}")
            return

        def written(done: guard.Done[tuple[str, str | None]]) -> None:
            if done.value is not None:
                (said, acted_on), outcome = done.value, "done"
            else:
                said = views.problem(done.error, request.url.path.removeprefix(PREFIX), form).said()
                acted_on, outcome = target, f"refused: {done.error}"
            guard.record(conn, actor, action.name, target=acted_on, note=note, outcome=outcome)
            sign_in.say(conn, session.secret, said)

        guard.perform(conn, lambda: action.act(ask), written, together=not action.calls_out)

    def too_large(self, request: Request, exc: PayloadTooLarge) -> Response:
        return self.pages.message(request, 413, "The form is too large", exc.detail)

    async def not_found(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return self.pages.message(request, exc.status_code, "Not here", f"{request.method} {request.url.path}")

    async def broken(self, request: Request, exc: Exception) -> Response:
        logger.exception("unexpected error on %s", request.url.path)
        return self.pages.message(
            request, 500, "Something went wrong", "It is in synctool's log; try again, or tell your administrator."
        )

    async def bad_query(self, request: Request) -> Response:
        return self.pages.message(request, 400, "Not a valid address", "The address holds a control character.")

    def routes(self) -> list[BaseRoute]:
        """``PAGES`` (GET and HEAD), ``ACTIONS`` (POST), signing in and out, and the stylesheet."""
        return [
            *[Route(p.path, partial(self.show, p)) for p in PAGES],
            *[Route(a.path, partial(self.act, a), methods=["POST"]) for a in ACTIONS],
            *SignInPages(self.rt, self.pages).routes(),
            Mount("/static", app=StaticFiles(packages=[("synctool.web", "static")]), name="static"),
        ]


def routes(rt: Runtime) -> list[Mount]:
    """The staff page as one mount at ``/admin``: one connection per request (``guard.OneConnection``) shared
    by the session check and the page, control characters in the address refused, the session cookie read."""
    staff = StaffPage(rt, Renderer(rt, NAV))
    app = Starlette(
        routes=staff.routes(),
        middleware=[
            Middleware(guard.OneConnection, rt=rt),
            Middleware(QueryGuard, refuse=staff.bad_query),
            Middleware(AuthenticationMiddleware, backend=SessionBackend()),
        ],
        exception_handlers={HTTPException: staff.not_found, Exception: staff.broken},
    )
    return [Mount(PREFIX, app=app)]
