"""One receiver for every organisation of a host: ``synctool serve`` without ``--org`` on a host with organisations.

``/o/NAME/...`` is organisation NAME's own receiver (``receiver.build`` for its Runtime: its webhooks, its staff page
at ``/o/NAME/admin``, its admin API at ``/o/NAME/api``), built on its first request and kept. The organisation's app
sees the request as Starlette's ``Mount`` hands it on: the same ``path``, a ``root_path`` of ``/o/NAME``, so its
routes match as at a single install's root and its pages' links, forms, redirects and session cookie carry the
prefix (``render.page_prefix``). Nothing an organisation's app holds (its connection, its secrets, its users'
sessions and tokens) is another's: each is its own Runtime's, pointed at its own folder.

Every request looks at the organisation's files first (two ``stat`` calls): a name that is not an organisation's
name (``orgs.NAME``), one with no config, or one removed while the host runs answers 404 (a removed one's app is
closed and dropped), and nothing is made on disk. An organisation whose config or secrets changed is built afresh.
One that cannot be built (a broken config, the admin API on without its signing secret) answers 503 for itself
alone, logged once with its name, and is tried again when its files change.

The root holds ``/health`` (the host's: it names no organisation), the host's own page at ``/host`` (its routes
handed in: ``host_routes``) and, when the host has a single-install config too, that install's routes exactly as
``serve`` answers them without organisations.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from synctool import orgs
from synctool.runtime import Runtime
from synctool.web.receiver import Receiver, build_receiver, error

logger = logging.getLogger("synctool.host")

ORGS = "/o/"
#: what the host's environment says for a single install, never for an organisation (its files are its folder's)
SINGLE_ONLY = ("SYNCTOOL_CONFIG", "SYNCTOOL_DB", "SYNCTOOL_ORG")

Signature = tuple[tuple[int, int, int, int] | None, ...]


def _stat(path: Path) -> tuple[int, int, int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_dev, found.st_ino, found.st_mtime_ns, found.st_size)


def signature(org: orgs.Org) -> Signature:
    """What says an organisation is the one its app was built for: its config's and secrets file's identity and
    age (``(None, ...)``: it has no config, so it is not there)."""
    return (_stat(org.config), _stat(org.secrets_file))


@dataclass
class Built:
    """An organisation's app (or why it could not be built), for the files it was built from."""

    signature: Signature
    app: ASGIApp | None = None
    receiver: Receiver | None = None

    def close(self) -> None:
        if self.receiver is not None:
            self.receiver.close()


def organisation_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The host's environment as an organisation's Runtime reads it: without the single install's files."""
    return {k: v for k, v in environ.items() if k not in SINGLE_ONLY}


class Host:
    """The host's ASGI app. ``build`` turns an organisation's name into its app and receiver (its Runtime's
    ``receiver.build_receiver``; tests hand in their own); ``single`` is the single install's app and receiver at
    the root, if the host has one; ``host_routes`` the host's own page (``web/host_page.py``: its mount at ``/host``)."""

    def __init__(
        self,
        environ: Mapping[str, str],
        *,
        build: Callable[[str], tuple[Receiver, ASGIApp]] | None = None,
        single: tuple[Receiver, ASGIApp] | None = None,
        host_routes: Sequence[BaseRoute] = (),
    ):
        self.environ = dict(environ)
        self.build = build or self._build
        self.built: dict[str, Built] = {}
        self.building: dict[str, asyncio.Lock] = {}
        self.instance = uuid.uuid4().hex
        self.single = single
        routes: list[BaseRoute] = [Route("/health", self.health, methods=["GET"])]
        routes += host_routes  # its own mount (``host_page.routes``)
        if single is not None:
            routes.append(Mount("", app=single[1]))  # the single install's routes, as it answers them alone
        self.root = Starlette(routes=routes, exception_handlers={HTTPException: self.http_error})

    def _build(self, name: str) -> tuple[Receiver, ASGIApp]:
        return build_receiver(Runtime.from_environ(environ=organisation_environ(self.environ), org=name))

    # -- the root ------------------------------------------------------------------------------------------------

    async def health(self, request: Request) -> JSONResponse:
        """The host is up; it names this process (``doctor`` compares) and no organisation."""
        return JSONResponse({"status": "ok", "receiver": self.instance})

    async def http_error(self, request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        messages = {404: "not found", 405: "method not allowed"}
        return error(
            exc.status_code, messages.get(exc.status_code, exc.detail or "error"), f"{request.method} {request.url.path}"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
            return
        path = scope.get("path", "")
        if path.startswith(ORGS) or path == ORGS.rstrip("/"):
            await self.organisation(scope, receive, send)
            return
        await self.root(scope, receive, send)

    # -- an organisation -----------------------------------------------------------------------------------------

    async def organisation(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``/o/NAME/rest``: NAME's app with ``rest`` as its route path, or 404 (JSON) when NAME is none of this
        host's organisations, or 503 when its app cannot be built."""
        name = self.named(scope)
        org = orgs.Org(name, orgs.home(self.environ) / "orgs" / name) if name else None
        found = signature(org) if org is not None else (None,)
        if org is None or found[0] is None:
            if name and name in self.built:
                await self.drop(name)  # removed while the host runs
            await self.not_found(scope, receive, send)
            return
        if scope.get("path") == f"{ORGS}{name}/health":  # the host's alone, at the root
            await self.not_found(scope, receive, send)
            return
        built = await self.app_for(org.name, found)
        if built.app is None:
            response = error(503, f"organisation {org.name} is not available", "the host's log says why; retry later")
            await response(scope, receive, send)
            return
        root_path = scope.get("root_path", "")
        child = {**scope, "app_root_path": scope.get("app_root_path", root_path), "root_path": f"{root_path}{ORGS}{name}"}
        await built.app(child, receive, send)

    def named(self, scope: Scope) -> str | None:
        """The organisation's name in the path, when it is one: the segment after ``/o/``, as sent (a ``%2F`` or
        ``%2e`` in it makes it no name) and as decoded, both matching ``orgs.NAME``."""
        name = scope.get("path", "")[len(ORGS) :].split("/", 1)[0]
        raw = scope.get("raw_path")
        if raw is not None and raw.decode("latin-1").split("?", 1)[0][len(ORGS) :].split("/", 1)[0] != name:
            return None
        return name if orgs.NAME.fullmatch(name) else None

    async def app_for(self, name: str, found: Signature) -> Built:
        """NAME's app for its files as they are now: the one kept, else built (in a worker thread: it opens and
        migrates its database), the one it replaces closed."""
        built = self.built.get(name)
        if built is not None and built.signature == found:
            return built
        lock = self.building.setdefault(name, asyncio.Lock())
        async with lock:
            built = self.built.get(name)
            if built is not None and built.signature == found:
                return built
            if built is not None:
                await self.drop(name)
            self.built[name] = built = await run_in_threadpool(self._attempt, name, found)
            return built

    def _attempt(self, name: str, found: Signature) -> Built:
        try:
            receiver, app = self.build(name)
        except Exception as exc:  # noqa: BLE001  one organisation's failure is its own: the others answer
            logger.error("organisation %s cannot be served: %s", name, exc, exc_info=not _expected(exc))
            return Built(found)
        return Built(found, app, receiver)

    async def drop(self, name: str) -> None:
        built = self.built.pop(name, None)
        if built is not None:
            await run_in_threadpool(built.close)

    async def not_found(self, scope: Scope, receive: Receive, send: Send) -> None:
        """As an organisation's own app answers a path it does not have: nothing says whether NAME is one."""
        await error(404, "not found", f"{scope.get('method', 'GET')} {scope.get('path', '')}")(scope, receive, send)

    # -- starting and stopping ---------------------------------------------------------------------------------

    async def lifespan(self, receive: Receive, send: Send) -> None:
        """Nothing to start (each organisation is built on its first request); on shutdown every receiver is closed:
        its committing thread finished, its connection dropped."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def close(self) -> None:
        for name in list(self.built):
            await self.drop(name)
        if self.single is not None:
            await run_in_threadpool(self.single[0].close)


def _expected(exc: Exception) -> bool:
    """An error synctool words for an operator (no traceback in the log)."""
    from synctool.errors import SynctoolError

    return isinstance(exc, SynctoolError)


def single_install(config_path: str | os.PathLike | None, environ: Mapping[str, str]) -> bool:
    """Whether the host has a single install's config too: one named (``--config``, ``$SYNCTOOL_CONFIG``), or the
    default file."""
    from synctool.config import config_path as where

    path, named = where(config_path, environ)
    return named or path.exists()


def build(
    environ: Mapping[str, str],
    single: Runtime | None = None,
    *,
    admin_api: bool | None = None,
    admin_ui: bool | None = None,
    host_routes: Sequence[BaseRoute] = (),
) -> Host:
    """The app `serve` runs on a host with organisations: each at ``/o/NAME/``, and the single install (``single``,
    when there is one) at the root as `serve` runs it alone (``admin_api``, ``admin_ui``: its options, none of an
    organisation's, whose config says). ``host_routes``: the host's own page at ``/host``."""
    alone = None if single is None else build_receiver(single, admin_api=admin_api, admin_ui=admin_ui)
    return Host(environ, single=alone, host_routes=host_routes)
