"""The one request context every page view, page action and admin API handler gets: ``StaffRequest``.

A team member's request, as the code behind a route sees it: the request's one database connection, the
Runtime, who asked (and their role), the path's parameters, the query string, and what was sent (a page's form
or the API's JSON body). The staff page and the admin API build it the same way (``StaffRequest.of``), so a
page can call an API handler (a platform's route) with the request it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel
from starlette.requests import Request

from synctool.runtime import Runtime
from synctool.validation import parse
from synctool.web.auth import User

if TYPE_CHECKING:
    from synctool import store

M = TypeVar("M", bound=BaseModel)

#: a JSON value as a client sent it or the admin API answers it: any JSON at all
Json: TypeAlias = Any

#: where a request came in: the staff page or the admin API (the staff actions record it)
Via = Literal["page", "api"]


@dataclass
class StaffRequest:
    """One request of a signed-in team member: ``path`` holds the path's parameters, ``query`` the query
    string, ``form`` a page form's fields and ``body`` the API's JSON body."""

    conn: store.Connection
    rt: Runtime
    user: User
    via: Via
    path: dict[str, Any] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    form: dict[str, str] = field(default_factory=dict)
    body: Json = field(default_factory=dict)  # whatever the client sent

    @classmethod
    def of(cls, conn: store.Connection, rt: Runtime, request: Request, via: Via, **sent: Any) -> StaffRequest:
        """The request a route's code gets, from Starlette's (signed in: ``request.user`` is a ``TeamMember``);
        ``sent`` is the page's ``form`` or the API's ``body``."""
        return cls(conn, rt, request.user.record, via, dict(request.path_params), dict(request.query_params), **sent)

    @property
    def role(self) -> str:
        return self.user["role"]

    def body_as(self, model: type[M]) -> M:
        """The JSON body as ``model``, strictly (422 naming the field)."""
        return parse(model, self.body, where="request body", strict=True)

    def query_as(self, model: type[M]) -> M:
        """The query string as ``model``, converted from text (422 naming the field)."""
        return parse(model, self.query, where="query string")
