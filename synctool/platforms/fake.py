"""What every fake is served with: the platforms' (``platforms/<p>/fake.py``, on the fakes' floor) and the CRM's
(``synctool/fakes/crm/``).

A fake's routes table: rows of (method, path, endpoint), one small function per operation of the platform's API,
so each can be read beside the official description. ``routes(rows, guard)`` makes one Starlette ``Route`` per
path, in the rows' order, taking every method the rows give that path (a method it lacks is a 405 naming those it
has; a HEAD is answered by the GET). ``guard``, when given, runs before every endpoint (a platform's request log
and authentication): a response it returns is the answer instead. ``serve`` is such a table as an app over the
fake's state.

An endpoint, or anything it calls, may raise ``Refusal(response)`` where it cannot go on (the record the path names
is not there, the body fails a check): ``response``, in the platform's own words, is then the answer. ``found``
is the look-up that raises it.

``FakeApi`` declares a platform's API endpoint by endpoint where each is written, and serves it over the fake's
state; ``json_body`` reads a request's JSON body and ``shows`` answers the record a look-up finds.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["Endpoint", "FakeApi", "Guard", "Operation", "Refusal", "Row", "found", "json_body", "routes", "serve", "shows"]

Endpoint = Callable[[Request], Awaitable[Response]]
Guard = Callable[[Request], Response | None]
Row = tuple[str, str, Endpoint]
Item = TypeVar("Item")
State = TypeVar("State")
#: an endpoint of a platform's fake: the request, and the fake's state it answers from
Operation = Callable[[Request, State], Awaitable[Response]]


class Refusal(Exception):
    """The answer to a request an endpoint cannot serve, raised from wherever that is found out."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def found(item: Item | None, missing: Callable[[], Response]) -> Item:
    """``item``, or a ``Refusal`` with the platform's not-found answer (``missing()``) when the look-up found none."""
    if item is None:
        raise Refusal(missing())
    return item


def routes(rows: list[Row], guard: Guard | None = None) -> list[Route]:
    """One Starlette ``Route`` a path of ``rows``, in their order, taking every method the rows give that path."""
    paths: dict[str, dict[str, Endpoint]] = {}
    for method, path, endpoint in rows:
        paths.setdefault(path, {})[method] = endpoint
    return [Route(path, _by_method(handlers, guard), methods=list(handlers)) for path, handlers in paths.items()]


def _by_method(handlers: dict[str, Endpoint], guard: Guard | None) -> Endpoint:
    async def endpoint(request: Request) -> Response:
        try:
            if guard is not None and (refused := guard(request)) is not None:
                return refused
            return await handlers[request.method if request.method in handlers else "GET"](request)
        except Refusal as refusal:
            return refusal.response

    return endpoint


def serve(rows: list[Row], guard: Guard, state: object) -> Starlette:
    """A fake's ASGI app: one route a path of ``rows`` , ``guard`` before every
    endpoint, and the fake's ``state`` on ``app.state.fake``, where its endpoints read it."""
    app = Starlette(routes=routes(rows, guard))
    app.state.fake = state
    return app


async def json_body(request: Request) -> dict:
    """The request's JSON body (an empty body is ``{}``)."""
    return json.loads(await request.body() or b"{}")


def shows(find: Callable[[Request, State], dict], view: Callable[[dict], object] | None = None) -> Operation[State]:
    """The endpoint that answers the record ``find`` looks up (``find`` raises the platform's 404 when there is
    none), as ``view(record)`` when a view is given."""

    async def endpoint(request: Request, state: State) -> Response:
        record = find(request, state)
        return JSONResponse(record if view is None else view(record))

    return endpoint


class FakeApi(Generic[State]):
    """A platform's API as its fake serves it, each endpoint declared by its method and path where it is written::

        api = FakeApi(FakeKind, guard)

        @api.get("/v1/gifts/{id}")
        async def get_gift(request: Request, kind: FakeKind) -> Response: ...

        create_app = api.create_app  # the app ``Served("package.fake:FakeKind")`` serves the state with

    Each endpoint takes the request and the fake's state. ``guard(request, state)``, when given, runs before every
    endpoint (the platform's request log and authentication): a response it returns is the answer instead. Paths
    are matched in the order they are declared."""

    def __init__(self, make: Callable[[], State], guard: Callable[[Request, State], Response | None] | None = None) -> None:
        self.make = make
        self.guard = guard
        self.rows: list[Row] = []

    def route(self, method: str, path: str) -> Callable[[Operation[State]], Operation[State]]:
        """Declares the function it decorates the endpoint of ``method`` ``path`` (``get``, ``post``, ... name the
        method); the function itself is kept as it is."""

        def declare(operation: Operation[State]) -> Operation[State]:
            async def endpoint(request: Request) -> Response:
                return await operation(request, request.app.state.fake)

            self.rows.append((method, path, endpoint))
            return operation

        return declare

    def get(self, path: str) -> Callable[[Operation[State]], Operation[State]]:
        return self.route("GET", path)

    def post(self, path: str) -> Callable[[Operation[State]], Operation[State]]:
        return self.route("POST", path)

    def put(self, path: str) -> Callable[[Operation[State]], Operation[State]]:
        return self.route("PUT", path)

    def patch(self, path: str) -> Callable[[Operation[State]], Operation[State]]:
        return self.route("PATCH", path)

    def delete(self, path: str) -> Callable[[Operation[State]], Operation[State]]:
        return self.route("DELETE", path)

    def create_app(self, state: State | None = None) -> Starlette:
        """The ASGI app serving these endpoints over ``state`` (a new ``make()`` when None)."""
        return serve(self.rows, self._guard, self.make() if state is None else state)

    def _guard(self, request: Request) -> Response | None:
        return None if self.guard is None else self.guard(request, request.app.state.fake)
