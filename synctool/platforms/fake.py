"""What the platforms' fakes share (``platforms/<p>/fake.py``, on the fakes' floor): ``FakeApi``, a platform's API
declared endpoint by endpoint and served over the fake's state, and what every fake's endpoints do the same way:
read a JSON body (``json_body``), look up the record a path names or answer the platform's 404 (``found``, which
raises a ``Refusal``: any endpoint may raise one with the platform's own error as the answer), and show that record
(``shows``).

``serve`` is a routes table (``synctool.fakes.routing``) as an app, the one ``FakeApi.create_app`` makes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from synctool.fakes.routing import Guard, Refusal, Row, found, routes

__all__ = ["FakeApi", "Operation", "Refusal", "found", "json_body", "serve", "shows"]

State = TypeVar("State")
#: an endpoint of a platform's fake: the request, and the fake's state it answers from
Operation = Callable[[Request, State], Awaitable[Response]]


def serve(rows: list[Row], guard: Guard, state: object) -> Starlette:
    """A fake's ASGI app: one route a path of ``rows`` (``synctool.fakes.routing``), ``guard`` before every
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
