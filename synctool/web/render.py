"""How the staff page answers: a template rendered with what every page shows (who is signed in, what their
role can do, the navigation, the message an action left), under the security headers every answer carries.

Server-rendered HTML (Jinja2, autoescaped), no script at all, and a stylesheet from the same origin, which the
``Content-Security-Policy`` header holds it to.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from dataclasses import field as default
from datetime import datetime
from typing import Any, Protocol
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


#: marks a stored message as a refused form's problem (``Problem.as_message``), not a plain message
PROBLEM_MARK = "\x1eproblem:"


@dataclass
class Problem:
    """A form the operation refused, for the page it returns to: what is wrong in plain words, which form
    (its action's path under ``/admin``, and its ``target`` when one page has several forms to one action),
    which field (None: the form as a whole) and what was typed, so the page shows the error beside its field
    with the values kept. A page that shows it there marks it ``placed``; otherwise ``base.html`` shows it at
    the top. An empty one (no problem) answers every question with no."""

    text: str = ""
    form: str = ""
    field: str | None = None
    target: str | None = None
    kept: dict[str, str] = default(default_factory=dict)
    placed: bool = False

    def __bool__(self) -> bool:
        return bool(self.text)

    def as_message(self) -> str:
        """The problem as the session's waiting message (``sign_in.flash``)."""
        return PROBLEM_MARK + json.dumps({k: v for k, v in asdict(self).items() if k != "placed"})

    @classmethod
    def read(cls, message: str | None) -> tuple[str | None, Problem]:
        """A waiting message: (a plain message, or None; the problem, or an empty one)."""
        if not message or not message.startswith(PROBLEM_MARK):
            return message, cls()
        try:
            stored = json.loads(message[len(PROBLEM_MARK) :])
            return None, cls(
                **{k: stored.get(k) for k in ("text", "form", "field", "target")}, kept=dict(stored.get("kept") or {})
            )
        except (ValueError, TypeError):
            return None, cls(text="The last form was not saved.")

    def of(self, form: str, target: Any = None) -> bool:
        """Whether the problem is this form's (``target``: the form's own, where several post to one action)."""
        return bool(self) and self.form == form and (target is None or self.target == str(target))

    def kept_for(self, form: str, target: Any = None) -> dict[str, str] | None:
        """What was typed into this form, when it was refused (None: fill it as usual)."""
        return self.kept if self.of(form, target) else None

    def at(self, form: str, name: str | None, target: Any = None) -> bool:
        """Whether the problem is this form's field ``name`` (None: the form's, no field of it named)."""
        return self.of(form, target) and self.field == name

    def place(self) -> str:
        """The page shows it where it belongs (so not at the top)."""
        self.placed = True
        return ""


class NavPage(Protocol):
    """A page in the navigation (a row of ``staff_page.PAGES`` with a label)."""

    @property
    def name(self) -> str: ...

    @property
    def path(self) -> str: ...

    @property
    def label(self) -> str | None: ...

    @property
    def role(self) -> str: ...


def page_prefix(request: Request) -> str:
    """Where this request's staff page is: the path its mount answers under (``/admin``, or ``/o/NAME/admin`` for an
    organisation on a host: ``web/host.py`` gives the organisation's app a ``root_path`` of ``/o/NAME``, and the
    staff page's own mount adds ``/admin``). Its links, forms, redirects and session cookie all carry it."""
    return request.scope.get("root_path") or PREFIX  # (none: called outside its mount)


@functools.cache
def _environment(nav: tuple[NavPage, ...]) -> jinja2.Environment:
    """One environment (its templates compiled once) for every organisation a host serves; what differs between
    them (the prefix, the platforms in use) comes with each render."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("synctool.web", "templates"),
        autoescape=jinja2.select_autoescape(default=True),
    )
    env.globals.update(prefix=PREFIX, nav=nav, roles=ROLES, page_roles={p.path: p.role for p in nav})
    env.filters["when"] = when
    env.filters["query"] = lambda params, **changes: urlencode({k: v for k, v in {**params, **changes}.items() if v})
    env.filters["segment"] = lambda value: quote(str(value), safe="")  # one path segment, whatever it holds
    return env


@functools.cache
def _templates(nav: tuple[NavPage, ...]) -> Jinja2Templates:
    return Jinja2Templates(env=_environment(nav))


class Renderer:
    """The staff page's templates. ``nav``: the pages in the navigation (``staff_page.PAGES``' rows with a label;
    each has ``name``, ``label``, ``path`` and ``role``)."""

    def __init__(self, rt: Runtime, nav: Sequence[NavPage]):
        self.templates = _templates(tuple(nav))
        self.sources = [p.role for p in platforms.in_use(rt.config)]

    def render(
        self,
        request: Request,
        template: str,
        context: Mapping[str, object],
        status: int = 200,
        *,
        flash: str | None = None,
        problem: Problem | None = None,
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
            "problem": problem or Problem(),
            "here": request.url.path + (f"?{request.url.query}" if request.url.query else ""),
            "sources": self.sources,
            "current": current,
            "prefix": page_prefix(request),
        }
        response = self.templates.TemplateResponse(request, template, {**shared, **context}, status_code=status)
        response.headers.update(SECURITY_HEADERS)
        return response

    def message(self, request: Request, status: int, title: str, text: str) -> Response:
        """A page that says one thing: a refusal, an error, a page not here."""
        return self.render(request, "message.html", {"title": title, "text": text}, status)
