"""The outside systems synctool syncs with, one package each, and the one list that loads them.

Each package (``givebutter``, ``square``, ...) holds everything about its system: payload models and
webhook verification (``webhook.py``), the API client (``client.py``), the sync rules (``rules.py``),
operations (``ops.py``), CLI commands (``commands.py``, imported by the CLI only) and its fake
(``fake.py``). Its ``__init__.py`` stays small and answers the hooks below; everything else in synctool
(the receiver's routes, the secrets table, ``doctor``, the admin API, the job handlers, the CLI's command
groups, the fake world) is built from them, in the style of llm's ``DEFAULT_PLUGINS``. Adding a platform
is a folder here and a line in ``DEFAULT_PLATFORMS``.

The hooks, each optional:

- ``WEBHOOK``: a ``Webhook`` (its route is ``/webhooks/<role>``).
- ``SECRETS``: ``{name: what it is for}`` for every secret the platform reads.
- ``CLIENT``: ``Client(role, "module:factory", api_key_secret)``; the factory takes a ``Runtime``.
- ``register_handlers()``: import the rules, whose ``@handler`` decorators register the job handlers.
- ``register_commands()``: ``{group name: "module:typer app"}`` and top-level ``{name: "module:function"}``.
- ``register_routes(Call, roles)``: the admin API's ``(method, path, minimum role, operation)`` rows.
- ``FAKE``: a ``Fake``: the platform's stand-in API for the demo and the tests (``fakes/world.py``).
- ``RECONCILE``: the module whose ``expected(conn, rt, start, end)`` lists the money the platform took in a
  period, and (where it pays out) ``payouts(...)`` its bank deposits (``platforms/reconcile.py``), which
  ``synctool reconcile`` compares with the CRM's gifts.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from synctool.errors import one_of

if TYPE_CHECKING:
    from synctool.platforms.webhook import Adapter
    from synctool.queue.handlers import Services

#: the platforms synctool loads, in the order their routes, commands and checks are listed
DEFAULT_PLATFORMS = ("givebutter", "square", "mailchimp", "stripe", "portal")


@dataclass(frozen=True)
class Webhook:
    """A platform's inbound webhook: ``POST /webhooks/<role>``, checked by ``adapter``'s functions."""

    role: str
    adapter: str
    #: Mailchimp checks a URL with a GET (and may POST an empty body) before it sends events
    url_check: bool = False


@dataclass(frozen=True)
class Client:
    """A platform's API client: ``factory`` (``module:function``) builds it from a Runtime."""

    role: str
    factory: str
    #: how `test-connections` proves the client works: ``module:function`` taking the client
    probe: str | None = None


@dataclass(frozen=True)
class Fake:
    """A platform's fake API: ``module`` has ``create_app(fake)`` and the ``cls`` it serves, built with
    ``key`` (the value of the ``key_secret`` the client sends); the client's base URL is the fake's
    address plus ``path`` and goes in ``base_url_env``."""

    name: str
    module: str
    cls: str
    key_secret: str
    key: str
    base_url_env: str
    path: str = ""
    #: the platform's official API description the fake is held to (a file in shared/reference/specs)
    contract: str | None = None


def load(name: str) -> Any:
    """``module:attribute`` -> the attribute (imported on first use)."""
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def packages() -> Iterator[ModuleType]:
    for name in DEFAULT_PLATFORMS:
        yield importlib.import_module(f"synctool.platforms.{name}")


@lru_cache(maxsize=1)
def webhooks() -> dict[str, Webhook]:
    """Webhook role -> its registration, in the order of ``DEFAULT_PLATFORMS`` (read once: the receiver
    asks for every delivery)."""
    return {p.WEBHOOK.role: p.WEBHOOK for p in packages() if getattr(p, "WEBHOOK", None)}


def sources() -> tuple[str, ...]:
    return tuple(webhooks())


def adapter(source: str) -> Adapter:
    """The webhook adapter module for a role; InvalidInput for an unknown one."""
    found = webhooks()
    one_of(source, tuple(found), "source")
    return importlib.import_module(found[source].adapter)  # type: ignore[return-value]


def secret_names() -> dict[str, str]:
    """Every platform secret synctool reads: name -> what it is for."""
    names: dict[str, str] = {}
    for p in packages():
        names.update(getattr(p, "SECRETS", {}))
    return names


def clients() -> dict[str, Client]:
    return {p.CLIENT.role: p.CLIENT for p in packages() if getattr(p, "CLIENT", None)}


def reconcilers() -> dict[str, str]:
    """Source (the webhook role) -> its ``RECONCILE`` module, for the platforms that take in money."""
    return {p.WEBHOOK.role: p.RECONCILE for p in packages() if getattr(p, "RECONCILE", None)}


def register_handlers() -> None:
    """Import every platform's rules, so their job handlers are registered (``queue.handlers``)."""
    for p in packages():
        hook = getattr(p, "register_handlers", None)
        if hook:
            hook()


def command_groups() -> dict[str, str]:
    groups: dict[str, str] = {}
    for p in packages():
        hook = getattr(p, "register_commands", None)
        if hook:
            groups.update(hook())
    return groups


def admin_routes(call_type: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
    rows: list[tuple[str, str, str, Any]] = []
    for p in packages():
        hook = getattr(p, "register_routes", None)
        if hook:
            rows.extend(hook(call_type, roles))
    return rows


def fakes() -> dict[str, Fake]:
    """Role -> the ``Fake`` of each platform that has one."""
    return {p.CLIENT.role: p.FAKE for p in packages() if getattr(p, "FAKE", None) and getattr(p, "CLIENT", None)}


def open_client(rt: Any, role: str) -> Any:
    """A new API client for a platform role, built from the Runtime (its secrets and transport)."""
    found = clients()
    one_of(role, tuple(found), "platform")
    return load(found[role].factory)(rt)


@contextmanager
def using(rt: Any, role: str, client: Any = None) -> Iterator[Any]:
    """The client given (tests pass one), else a new one for ``role`` that is closed afterwards."""
    if client is not None:
        yield client
        return
    made = open_client(rt, role)
    try:
        yield made
    finally:
        made.close()


def services(rt: Any) -> Services:
    """What drain's handlers run with: every platform's handlers (registered when the first job is claimed),
    their clients built from the Runtime on first use, stored deliveries decoded by their adapter."""
    from synctool.queue.handlers import Services

    return Services(
        rt,
        open_client=lambda role: open_client(rt, role),
        decode=lambda source, body: adapter(source).decode(body),
        register=register_handlers,
    )
