"""The staff page (``synctool serve --admin-ui``): the sync log, failures, money and donor changes in a browser,
under ``/admin``, for each role.

Read it top-down: ``PAGES`` and ``ACTIONS`` are the page's two tables, and everything else is built from them.

- ``PAGES``: one row a page (path, minimum role, navigation label, view). The view is a function of its page's
  module in ``pages`` and its name is the page's one name: its template is ``templates/<name>.html`` and it is
  the navigation's key. A row with a label is in the navigation, in the table's order. A new page is a view, a
  template and a row here.
- ``ACTIONS``: one row a form's POST (path, minimum role, the name the staff actions record it by, the action
  function of its page's module, the page it returns to when the form names none).
- ``StaffPage`` turns a row into an endpoint, and is the one place every row's rules are kept: a page needs a
  session and its row's role (``guard.refusal``); an action also a form from this site with the session's CSRF
  token (``StaffPage.form_refusal``), whatever the browser sends. It runs the view or the action with the
  request's ``StaffRequest``; an action's operation, its staff-action record and the message for the next page
  are one transaction, then it redirects to the page it came from (post, redirect, get). Signing in and out is
  ``sign_in_pages``; the templates, the navigation and the security headers are ``render``.

Each page calls the same operation as its CLI command and admin API route, and shows what it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from synctool.errors import PayloadTooLarge
from synctool.ops import sign_in
from synctool.runtime import Runtime
from synctool.web import guard
from synctool.web.auth import ADMIN, SUPER, VIEWER
from synctool.web.pages import (
    actions,
    donors,
    events,
    forms,
    mappings,
    overview,
    payouts,
    plans,
    reconcile,
    settings,
    syncs,
    team,
    year_end,
)
from synctool.web.pages.base import ActionResult, ViewResult
from synctool.web.render import PREFIX, SECURITY_HEADERS, Problem, Renderer, page_prefix
from synctool.web.request import StaffRequest
from synctool.web.sign_in_pages import COOKIE, SignInPages, other_site, read_form, signed_in_mount

if TYPE_CHECKING:
    from synctool import store

__all__ = ["ACTIONS", "COOKIE", "PAGES", "PREFIX", "SECURITY_HEADERS", "Action", "Page", "routes"]

logger = logging.getLogger("synctool.staff_page")


@dataclass(frozen=True)
class Page:
    """A page: ``path`` (under ``/admin``) shows ``view``'s result in ``templates/<view's name>.html`` to
    ``role`` and above; with a ``label`` it is in the navigation."""

    path: str
    role: str
    label: str | None
    view: Callable[[StaffRequest], ViewResult]

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
    act: Callable[[StaffRequest], ActionResult]
    back: str
    calls_out: bool = False


PAGES = (
    Page("/", VIEWER, "Overview", overview.overview),
    Page("/syncs", VIEWER, "Sync log", syncs.syncs),
    Page("/syncs/{id}", VIEWER, None, syncs.sync_record),
    Page("/failed", VIEWER, "Failed", syncs.failed),
    Page("/events", VIEWER, "Events", events.events),
    Page("/events/{campaign}", VIEWER, None, events.event_detail),
    Page("/plans", VIEWER, "Plans", plans.plans),
    Page("/plans/{id}", VIEWER, None, plans.plan_detail),
    Page("/reconcile", ADMIN, "Reconcile", reconcile.reconcile),
    Page("/donors", ADMIN, "Donors", donors.donors),
    Page("/payouts", ADMIN, "Payouts", payouts.payouts),
    Page("/year-end", ADMIN, "Year end", year_end.year_end),
    Page("/mappings", ADMIN, "Mappings", mappings.mappings),
    Page("/settings", ADMIN, "Settings", settings.settings),
    Page("/team", SUPER, "Team", team.team),
    Page("/actions", VIEWER, "Actions", actions.actions),
)

ACTIONS = (
    Action("/syncs/{id}/retry", ADMIN, "retry", syncs.retry, "/failed"),
    Action("/syncs/{id}/resolve", ADMIN, "resolve", syncs.resolve, "/failed"),
    Action("/syncs/{id}/release", ADMIN, "release held money", syncs.release, "/failed"),
    Action("/events/map", ADMIN, "map event campaign", events.map_event, "/events"),
    Action("/events/remove", ADMIN, "remove event mapping", events.unmap_event, "/events"),
    Action("/reconcile/accept", ADMIN, "accept difference", reconcile.accept, "/reconcile"),
    Action("/donors/{id:int}/apply", ADMIN, "apply donor change", donors.apply_change, "/donors", calls_out=True),
    Action("/donors/{id:int}/dismiss", ADMIN, "dismiss donor change", donors.dismiss_change, "/donors"),
    Action("/donors/matches/{id:int}/accept", ADMIN, "accept donor match", donors.accept_match, "/donors"),
    Action("/donors/matches/{id:int}/new", ADMIN, "new constituent for donor match", donors.new_constituent, "/donors"),
    Action("/mappings/types", ADMIN, "set type default", mappings.set_type_default, "/mappings"),
    Action("/mappings/overrides", ADMIN, "set campaign override", mappings.set_campaign_override, "/mappings"),
    Action("/mappings/funds", ADMIN, "set fund override", mappings.set_fund_override, "/mappings"),
    Action("/mappings/plans", ADMIN, "set plans mapping", mappings.set_plans_mapping, "/mappings"),
    Action("/mappings/payments", ADMIN, "set payment method", mappings.set_payment_method, "/mappings"),
    Action("/mappings/custom-fields", ADMIN, "set custom field", mappings.set_custom_field, "/mappings"),
    Action("/mappings/mailing-lists", ADMIN, "set mailing list mapping", mappings.set_mailing_list, "/mappings"),
    Action("/mappings/tag-rules", ADMIN, "set tag rule", mappings.set_tag_rule, "/mappings"),
    Action("/mappings/remove", ADMIN, "remove mapping", mappings.remove_mapping, "/mappings"),
    Action("/mappings/refresh", ADMIN, "read the CRM's lists", mappings.refresh_lists, "/mappings", calls_out=True),
    Action("/settings/sync-mode", ADMIN, "set sync mode", settings.set_sync_mode, "/settings"),
    Action("/settings/donor-matching", ADMIN, "set donor matching", settings.set_donor_matching, "/settings"),
    Action("/settings/alert-recipients", ADMIN, "set alert recipients", settings.set_alert_recipients, "/settings"),
    Action("/settings/platform/{name}", ADMIN, "change platform setting", settings.set_platform_setting, "/settings"),
    Action("/team/invite", SUPER, "invite", team.invite, "/team"),
    Action("/team/{id:int}", SUPER, "change user", team.change_user, "/team"),
)

#: the pages in the navigation, in order
NAV = tuple(p for p in PAGES if p.label)


def section(page: Page) -> str:
    """The navigation's page a page sits under (itself, or the one whose path leads to it: ``/syncs/{id}``
    is under the sync log)."""
    under = [n for n in NAV if page.path == n.path or (n.path != "/" and page.path.startswith(n.path + "/"))]
    return max(under, key=lambda n: len(n.path)).name if under else page.name


def _back(target: str | None, fallback: str, prefix: str) -> str:
    """Where an action returns: a page of this staff page (under ``prefix``), never another origin."""
    if target and target.startswith(prefix + "/") and not target.startswith("//") and "\\" not in target:
        return target
    return prefix + fallback


@dataclass(frozen=True)
class FormRefusal:
    """Why a form is refused before its action runs: the page's status, title and text."""

    status: int
    title: str
    text: str


class StaffPage:
    """The endpoints of ``PAGES`` and ``ACTIONS``, and the page's error pages."""

    def __init__(self, rt: Runtime, pages: Renderer):
        self.rt = rt
        self.pages = pages

    async def show(self, page: Page, request: Request) -> Response:
        """A page: signed in, then the role, then the view and the message an action left, on one connection."""
        refused = guard.refusal(request, page.role)
        if refused and refused.signed_out:
            why = request.scope.get("synctool.signed_out")
            return RedirectResponse(f"{page_prefix(request)}/sign-in" + (f"?why={why}" if why else ""), status_code=303)
        if refused:
            return self.pages.message(request, 403, "Not for your role", f"This page {refused.reason}.")
        secret = request.user.session.secret

        def read(conn: store.Connection) -> tuple[guard.Attempted[ViewResult], str | None]:
            staff_request = StaffRequest.of(conn, self.rt, request, "page")
            return guard.attempt(lambda: page.view(staff_request)), sign_in.take_flash(conn, secret)

        outcome, waiting = await guard.in_thread(request, read)
        flash, problem = Problem.read(waiting)
        if outcome.value is None:  # the view refused: its error's page, with what an action left to say
            error = {"title": str(outcome.error), "text": outcome.detail}
            return self.pages.render(request, "message.html", error, outcome.status, flash=flash, problem=problem)
        result = outcome.value
        return self.pages.render(
            request, page.template, result.context, result.status, flash=flash, problem=problem, current=section(page)
        )

    def form_refusal(
        self, request: Request, action: Action, form: dict[str, str], refused: guard.Refusal | None
    ) -> FormRefusal | None:
        """A form from another site, a role below the action's (``refused``), or a CSRF token not this session's."""
        if other_site(request):
            return FormRefusal(403, "Refused", "The form came from another site.")
        if refused:
            return FormRefusal(403, "Not for your role", f"{action.name} {refused.reason}.")
        if not sign_in.csrf_ok(request.user.session, form.get("csrf")):
            return FormRefusal(403, "Refused", "The form's security token is missing or not this session's: reload the page and try again.")  # fmt: skip
        return None

    async def act(self, action: Action, request: Request) -> Response:
        """A POST: role, then CSRF token, then the operation; its outcome is recorded and said on the next page."""
        refused = guard.refusal(request, action.role)
        if refused and refused.signed_out:
            return self.pages.message(request, 401, "Signed out", "Sign in again, then repeat what you did.")
        try:
            form = await read_form(request)
        except PayloadTooLarge as exc:
            return self.too_large(request, exc)
        form_refused = self.form_refusal(request, action, form, refused)
        await guard.in_thread(request, lambda conn: self.run(conn, request, action, form, form_refused))
        if form_refused is not None:
            return self.pages.message(request, form_refused.status, form_refused.title, form_refused.text)
        # refused by the operation, the page shows the problem beside its field and focuses the field (which
        # brings it into view; a #fragment would stop the browser's autofocus)
        return RedirectResponse(_back(form.get("back"), action.back, page_prefix(request)), status_code=303)

    def run(
        self, conn: store.Connection, request: Request, action: Action, form: dict[str, str], refused: FormRefusal | None
    ) -> None:
        """The action (or its refusal), its staff-action record and the message for the next page: done, or
        refused with what was typed kept for the form (``Problem``)."""
        staff_request = StaffRequest.of(conn, self.rt, request, "page", form=form)
        actor = guard.Actor.of(staff_request.user, staff_request.via)
        named = form.get("target") or next(iter(staff_request.path.values()), None)
        target = None if named is None else str(named)
        note = form.get("note") or None
        if refused is not None:
            recorded = f"refused ({refused.status}): {refused.text}"
            guard.record(conn, actor, action.name, target=target, note=note, outcome=recorded)
            return

        def written(outcome: guard.Attempted[ActionResult]) -> None:
            if outcome.value is not None:
                (message, acted_on), recorded = outcome.value, "done"
            else:
                message = forms.problem(outcome.error, request.url.path.removeprefix(page_prefix(request)), form).as_message()
                acted_on, recorded = target, f"refused: {outcome.error}"
            guard.record(conn, actor, action.name, target=acted_on, note=note, outcome=recorded)
            sign_in.flash(conn, request.user.session.secret, message)

        guard.perform(conn, lambda: action.act(staff_request), written, together=not action.calls_out)

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
    """The staff page as one mount at ``/admin``, behind the session (``sign_in_pages.signed_in_mount``)."""
    staff = StaffPage(rt, Renderer(rt, NAV))
    return [signed_in_mount(PREFIX, rt, staff.routes(), staff)]
