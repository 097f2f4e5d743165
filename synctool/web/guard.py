"""The request guard the staff page and the admin API share: one database connection per request, the role
check, a refused operation's status, and the staff-action record a change leaves.

- ``OneConnection`` (ASGI middleware, outermost) gives each request one SQLite connection, opened when first
  asked for and closed when the response is sent: the session or token check, the role check, the operation
  and its record all use it (``in_thread``).
- ``refusal`` is the one check of every route's row (a page, a form's action, an API route): signed in, then
  at least the row's role (Starlette's scopes: a role's include every lower role's). Each answers a refusal in
  its own form (a page, JSON), and the staff page adds its forms' Origin and CSRF checks (``staff_page``).
- ``attempt`` runs an operation and gives what it came to (``Attempted``): its result, or the ``SynctoolError`` that refused it
  and its status (``synctool.errors.http_status``).
- ``perform`` runs a change and what is written about it (its ``staff_actions`` record, the page's message for
  the next page) in one transaction: one commit per click.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from starlette.authentication import has_required_scope
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from synctool import store
from synctool.errors import SynctoolError, http_status
from synctool.ops.sign_in import User
from synctool.runtime import Runtime

T = TypeVar("T")

#: where a request's connection waits in its ASGI scope
CONNECTION = "synctool.connection"


class _Opened:
    """A request's connection: opened on first use (a request that needs none opens none)."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self.conn: store.Connection | None = None

    def get(self) -> store.Connection:
        if self.conn is None:
            self.conn = self.rt.open_database(migrate=False)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class OneConnection:
    """One connection per HTTP request, shared by whatever the request runs (put it first in the middleware)."""

    def __init__(self, app: ASGIApp, rt: Runtime):
        self.app = app
        self.rt = rt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        opened = _Opened(self.rt)
        scope[CONNECTION] = opened
        try:
            await self.app(scope, receive, send)
        finally:
            opened.close()


async def in_thread(request: HTTPConnection, work: Callable[[store.Connection], T]) -> T:
    """``work(conn)`` with the request's connection, in the thread pool (SQLite blocks)."""
    opened: _Opened = request.scope[CONNECTION]
    return await run_in_threadpool(lambda: work(opened.get()))


@dataclass(frozen=True)
class Refusal:
    """Why a route refused a request before its code ran: 401 (signed out) or 403 (``reason``: the role)."""

    status: int
    reason: str

    @property
    def signed_out(self) -> bool:
        return self.status == 401


def refusal(request: HTTPConnection, role: str) -> Refusal | None:
    """Whether the request may take a route whose row needs ``role``: None when signed in with that role or a
    higher one."""
    if not request.user.is_authenticated:
        return Refusal(401, "signed out")
    if has_required_scope(request, [role]):
        return None
    return Refusal(403, f"needs {role}; you are {request.user.role}")


@dataclass(frozen=True)
class Attempted(Generic[T]):
    """What an operation came to: its result, or the ``SynctoolError`` that refused it and its status."""

    status: int
    value: T | None = None
    error: SynctoolError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def detail(self) -> str:
        return getattr(self.error, "detail", "") or ""


def attempt(op: Callable[[], T]) -> Attempted[T]:
    """Run ``op``; a ``SynctoolError`` becomes its status (404, 409, 422, 502, 503 ...)."""
    try:
        return Attempted(200, op())
    except SynctoolError as exc:
        return Attempted(http_status(exc), None, exc)


@dataclass(frozen=True)
class Actor:
    """Who took an action and through what: ``via`` is ``page`` or ``api``."""

    email: str
    role: str | None
    via: str

    @classmethod
    def of(cls, user: User, via: str) -> Actor:
        return cls(user["email"], user["role"], via)


def record(
    conn: store.Connection, actor: Actor, action: str, *, target: str | None, note: str | None = None, outcome: str = "done"
) -> None:
    """One row of the staff actions (``synctool syncs actions``, the Actions page, ``GET /api/actions``)."""
    from synctool.ops.actions import record as write

    write(conn, who=actor.email, role=actor.role, via=actor.via, action=action, target=target, note=note, outcome=outcome)


def perform(
    conn: store.Connection, op: Callable[[], T], written: Callable[[Attempted[T]], None], *, together: bool = True
) -> Attempted[T]:
    """Run a change, then ``written(outcome)`` (its staff-action record, the page's message).

    Together (the default): one transaction and one commit; the operation's own writes sit in a savepoint,
    undone when it is refused while its record stays. Not together, for an operation that asks an outside
    system (which must not hold the write lock while it waits): it commits as it goes, then its record."""
    if not together:
        outcome = attempt(op)
        with store.atomic(conn):
            written(outcome)
        return outcome

    def inside() -> T:
        with store.atomic(conn):  # a savepoint within the transaction below
            return op()

    with store.atomic(conn):
        outcome = attempt(inside)
        written(outcome)
    return outcome
