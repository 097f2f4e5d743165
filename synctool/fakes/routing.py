"""A fake's routes table: rows of (method, path, endpoint), one small function per operation of the platform's
API, so each can be read beside the official description.

``routes(rows, guard)`` makes one Starlette ``Route`` per path, in the rows' order, taking every method the rows
give that path (a method it lacks is a 405 naming those it has; a HEAD is answered by the GET). ``guard``, when
given, runs before every endpoint (a platform's request log and authentication): a response it returns is the
answer instead.

An endpoint, or anything it calls, may raise ``Refusal(response)`` where it cannot go on (the record the path names
is not there, the body fails a check): ``response``, in the platform's own words, is then the answer. ``found``
is the look-up that raises it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

Endpoint = Callable[[Request], Awaitable[Response]]
Guard = Callable[[Request], Response | None]
Row = tuple[str, str, Endpoint]
Item = TypeVar("Item")


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
