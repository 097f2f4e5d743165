"""The webhook receiver: ``/health`` and ``/webhooks/*``.

Size check -> signature on the raw bytes -> delivery and job committed -> 200. It never calls the CRM
or any platform. Every rejection is a 4xx (or 503 when synctool itself cannot take the delivery yet,
so the platform retries) with a JSON body ``{"error": ..., "detail": ...}``.

``Receiver`` holds the app's one connection and its one committing thread; ``Receiver.routes`` is one route a
registered platform's webhook (an idle one for a platform not in use) and ``Receiver.app`` the Starlette app.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from synctool import platforms, store
from synctool.errors import (
    ConfigError,
    InvalidInput,
    PayloadTooLarge,
    StoreUnavailable,
    http_status,
)
from synctool.ops.inbox import Inbound, WebhookSecrets, accept, store_inbound
from synctool.ops.sign_in import PAGE_PATH
from synctool.platforms import Platform
from synctool.runtime import Runtime
from synctool.web.bounds import QueryGuard, read_body

logger = logging.getLogger("synctool.receiver")


def error(status: int, message: str, detail: str = "") -> JSONResponse:
    return JSONResponse({"error": message, "detail": detail}, status_code=status)


class _Named(logging.LoggerAdapter):
    def process(self, msg: object, kwargs: Any) -> tuple[object, Any]:
        return f"organisation {(self.extra or {})['org']}: {msg}", kwargs


class Receiver:
    """The receiver's endpoints over its one connection. The connection is used by a pool of one thread: commits
    are one at a time anyway (SQLite has one writer), and a durable commit takes about 0.5 ms, far above a giving
    day's peak. One thread, rather than many taking turns at a lock, keeps the hand-offs cheap
    (bench/receiver.py)."""

    def __init__(self, rt: Runtime, secrets: WebhookSecrets | None = None):
        self.rt = rt
        self.secrets = secrets or platforms.webhook_secrets(rt)
        self.conn: store.Connection | None = None
        self._claims: dict[str, tuple] = {}
        self.committer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="synctool-commit")
        # which receiver answered: `doctor` compares the one on this host with the one behind the public URL
        self.instance = uuid.uuid4().hex
        # on a host, each line names the organisation whose delivery it is (and only that one)
        self.log: logging.Logger | logging.LoggerAdapter = logger if rt.org is None else _Named(logger, {"org": rt.org})

    # -- storing a delivery (in the committing thread) --------------------------------------------------------

    def save(self, inbound: Inbound) -> str | None:
        """Commit the delivery and its job. The connection is opened on first use, so a database that
        cannot be opened yet is a 503 the platform retries, not a dead receiver; and a connection that
        failed to write is closed, so the next delivery opens a fresh one (a connection opened on a
        read-only file stays read-only, and one whose COMMIT failed may hold a dead transaction)."""
        path = self.rt.database
        if isinstance(path, Path) and not os.access(path, os.W_OK) and path.exists():
            # an open connection would still write through file handles opened earlier: honour the change
            self.drop_connection()
            raise StoreUnavailable(f"the database {path} is not writable")
        if self.conn is None:
            self.conn = self.rt.open_database(busy_timeout_ms=self.rt.config.receiver.busy_timeout_s * 1000)
        try:
            return store_inbound(self.conn, inbound, self.rt.config.queue.max_attempts)
        except StoreUnavailable:
            self.drop_connection()
            raise

    def claims(self, role: str) -> tuple:
        """The platforms in use that take a share of ``role``'s deliveries (``Platform.claims``), read once."""
        if role not in self._claims:
            self._claims[role] = platforms.claimants(self.rt.config, role)
        return self._claims[role]

    def drop_connection(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()

    # -- the endpoints ------------------------------------------------------------------------------------------

    async def health(self, request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "receiver": self.instance})

    async def url_check(self, request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def webhook(self, role: str, answers_url_check: bool, request: Request) -> JSONResponse:
        """One delivery: read within its bound, verified and parsed, then stored (or refused, saying why)."""
        try:
            body = await read_body(request, self.rt.config.receiver.max_body_bytes)
            if answers_url_check and not body.strip():
                return JSONResponse({"status": "ok"})  # a platform's URL check may POST an empty body
            inbound = accept(role, body, request.headers, request.query_params, self.secrets, claims=self.claims(role))
        except InvalidInput as exc:  # a bad signature, a bad payload, a body too large
            self.log.warning("rejected %s delivery: %s", role, exc)
            response = error(http_status(exc, webhook=True), str(exc), exc.detail)
            if isinstance(exc, PayloadTooLarge):
                response.headers["connection"] = "close"  # the sender is told; the next request gets a fresh connection
            return response
        except ConfigError as exc:
            self.log.error("cannot verify %s delivery: %s", role, exc)
            return error(http_status(exc), "receiver not configured for this source", str(exc))
        except ClientDisconnect:
            return error(400, "client disconnected before the body was received")
        return await self.stored(role, inbound)

    async def stored(self, role: str, inbound: Inbound) -> JSONResponse:
        """The delivery committed with its job (accepted), or already there (duplicate)."""
        try:
            job_id = await asyncio.get_running_loop().run_in_executor(self.committer, self.save, inbound)
        except StoreUnavailable as exc:
            self.log.error("could not store %s delivery %s: %s", role, inbound.event_id, exc)
            return error(http_status(exc), "could not store the delivery; retry later", "")  # the log has why
        if job_id is None:
            return JSONResponse({"status": "duplicate"})
        return JSONResponse({"status": "accepted", "job_id": job_id})

    async def idle(self, platform: Platform, request: Request) -> JSONResponse:
        """A platform not in use: absent, and said so (a platform still posting gets a clear 404)."""
        return error(404, f"{platform.role} is not in use", f"this synctool does not take {platform.name} deliveries")

    async def http_error(self, request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)  # Starlette calls this for HTTPException only
        messages = {404: "not found", 405: "method not allowed"}
        response = error(
            exc.status_code, messages.get(exc.status_code, exc.detail or "error"), f"{request.method} {request.url.path}"
        )
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    async def unexpected(self, request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error on %s", request.url.path)
        return error(503, "internal error; the delivery was not stored, retry later")

    async def bad_query(self, request: Request) -> JSONResponse:
        return error(400, "the query string holds a control character", f"{request.method} {request.url.path}")

    # -- the app ----------------------------------------------------------------------------------------------------

    def routes(self) -> list[BaseRoute]:
        """``/health``, then one route per registered platform's webhook (``synctool.platforms``)."""
        routes: list[BaseRoute] = [Route("/health", self.health, methods=["GET"])]
        used = platforms.in_use(self.rt.config)
        for platform in platforms.registered():
            hook = platform.webhook
            if hook is None:
                continue
            path = f"/webhooks/{hook.role}"
            if platform not in used:
                routes.append(Route(path, partial(self.idle, platform), methods=["GET", "HEAD", "POST"]))
                continue
            routes.append(Route(path, partial(self.webhook, hook.role, hook.url_check), methods=["POST"]))
            if hook.url_check:
                routes.append(Route(path, self.url_check, methods=["GET", "HEAD"]))
        return routes

    def close(self) -> None:
        """Its committing thread finished (what it holds is committed first), then its connection dropped."""
        self.committer.shutdown(wait=True)
        self.drop_connection()

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        self.close()

    def app(self, routes: list[BaseRoute] | None = None) -> Starlette:
        """The receiver's routes and ``routes`` beside them; a query string with a control character is refused
        (the staff page, under its own path, answers that with a page)."""
        return Starlette(
            routes=self.routes() + (routes or []),
            middleware=[Middleware(QueryGuard, refuse=self.bad_query, leave=PAGE_PATH)],
            exception_handlers={HTTPException: self.http_error, Exception: self.unexpected},
            lifespan=self.lifespan,
        )


def create_app(rt: Runtime, secrets: WebhookSecrets | None = None, *, routes: list | None = None) -> Starlette:
    """The receiver app. ``routes`` lets ``serve --admin-api`` mount more routes beside the webhooks."""
    return Receiver(rt, secrets).app(routes)


def build(rt: Runtime, *, admin_api: bool | None = None, admin_ui: bool | None = None) -> Starlette:
    """The app `serve` runs: the database created and migrated first, the admin API mounted when asked
    (refused without its signing secret), and the staff page when asked."""
    return build_receiver(rt, admin_api=admin_api, admin_ui=admin_ui)[1]


def build_receiver(rt: Runtime, *, admin_api: bool | None = None, admin_ui: bool | None = None) -> tuple[Receiver, Starlette]:
    """``build``'s app with its ``Receiver``, for a caller that runs the app without its lifespan and closes the
    receiver itself (``web/host.py``, which serves many)."""
    rt.open_database().close()
    extra: list = []
    if rt.config.receiver.admin_api if admin_api is None else admin_api:
        from synctool.ops.users import signing_secret
        from synctool.web.admin_api import routes

        signing_secret(rt)
        extra += routes(rt)
    if rt.config.receiver.admin_ui if admin_ui is None else admin_ui:
        from synctool.web.staff_page import routes as page_routes

        extra += page_routes(rt)
    receiver = Receiver(rt)
    return receiver, receiver.app(extra)


def serve(
    rt: Runtime,
    *,
    host: str | None = None,
    port: int | None = None,
    admin_api: bool | None = None,
    admin_ui: bool | None = None,
) -> None:
    """Run the receiver (and the admin API, and the staff page) with uvicorn until stopped."""
    run(build(rt, admin_api=admin_api, admin_ui=admin_ui), host or rt.config.receiver.host, port or rt.config.receiver.port)


def run(app: ASGIApp, host: str, port: int) -> None:
    """``app`` with uvicorn on ``host:port`` until stopped."""
    import uvicorn

    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=20,  # on SIGTERM, in-flight deliveries finish (the unit's TimeoutStopSec is 30)
    )


def app_from_env() -> Starlette:
    """A zero-argument factory (``uvicorn --factory synctool.web.receiver:app_from_env``)."""
    platforms.registered()  # their config sections, before the config is read
    return build(Runtime.from_environ())
