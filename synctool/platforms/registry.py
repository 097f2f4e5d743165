"""The registry: which platforms synctool knows, in what order, and which of them this organisation uses.

Built-ins are registered exactly as an outside package is (as llm's ``DEFAULT_PLUGINS`` and entry points are): the
packages named in ``DEFAULT_PLATFORMS``, then every value of the entry point group ``synctool.platforms``, then those
a caller passes to ``register``. Each gives one ``Platform`` (``synctool.platforms.contract``); everything else in
synctool (the receiver's routes, the secrets table, ``doctor``, the admin API, the job handlers, the CLI's command
groups, reconcile, mappings, backfill, the fake world) is built from what is registered here. Adding a platform is
a folder beside this module and a line in ``DEFAULT_PLATFORMS``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from synctool.errors import ConfigError, InvalidInput, one_of
from synctool.lazy import load
from synctool.platforms.contract import ClaimHook, Client, Fake, JobHandler, Platform, Setting, Target, Webhook
from synctool.platforms.hooks import Hook

if TYPE_CHECKING:
    from datetime import date

    from synctool import store
    from synctool.config import Config
    from synctool.platforms.reconcile import Expected
    from synctool.platforms.webhook import Adapter, WebhookSecrets
    from synctool.runtime import Runtime

#: the platforms synctool loads, in the order their routes, commands and checks are listed
DEFAULT_PLATFORMS = ("givebutter", "square", "mailchimp", "stripe", "portal")
#: built-in platforms beside those: registered (their packages ship with synctool), in use only once ``platforms:``
#: names them, as an installed package is
OPTIONAL_PLATFORMS = ("stripe_donations", "donorbox", "paypal")
#: the entry point group through which an outside package adds a platform (its value: a ``Platform``)
ENTRY_POINT_GROUP = "synctool.platforms"

_EXTRA: dict[str, Platform] = {}


def register(platform: Platform) -> None:
    """Add a platform beside the built-ins (what the entry point group does for an outside package)."""
    _EXTRA[platform.name] = platform
    registered.cache_clear()
    webhooks.cache_clear()
    _add_parts(platform)


def unregister(name: str) -> None:
    from synctool import config

    gone = _EXTRA.pop(name, None)
    if gone is not None:
        from synctool import store

        config.SECTIONS.pop(gone.role, None)
        store.PLATFORM_MIGRATIONS.pop(f"{store.MIGRATION_SET}.{gone.name}", None)
    registered.cache_clear()
    webhooks.cache_clear()


def _add_parts(platform: Platform) -> None:
    """What a platform brings to the floors below as it registers: its config section and its migrations."""
    if platform.config is not None:
        from synctool import config

        config.add_section(platform.role, platform.config, platform.config_env)
    if platform.migrations is not None:
        from synctool import store

        store.add_migrations(platform.name, platform.migrations)


def _may_declare_platforms() -> bool:
    """Whether an installed distribution may declare a platform: False only when no distribution's
    ``entry_points.txt`` on ``sys.path`` names the group. Every command loads the registry, and reading every
    distribution's entry points (``importlib.metadata``) costs 10 to 70 ms with the test extras installed; this
    reads the same files as text and parses none, so a machine with no platform package pays a few ms. Anything
    it cannot look into (a zip or an egg on the path) answers True, and the entry points are read."""
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as found:
                for item in found:
                    if item.name.endswith(".egg"):
                        return True
                    if not item.name.endswith((".dist-info", ".egg-info")):
                        continue
                    try:
                        with open(os.path.join(item.path, "entry_points.txt"), encoding="utf-8", errors="replace") as f:
                            if ENTRY_POINT_GROUP in f.read():
                                return True
                    except OSError:  # none, or an .egg-info file
                        continue
        except NotADirectoryError:  # a zip file on the path
            return True
        except OSError:  # a folder that is not there
            continue
    return False


@lru_cache(maxsize=1)
def registered() -> tuple[Platform, ...]:
    """The built-ins, in ``DEFAULT_PLATFORMS`` then ``OPTIONAL_PLATFORMS`` order, then those of the entry point group and ``register``."""
    found = [load(f"synctool.platforms.{name}:PLATFORM") for name in DEFAULT_PLATFORMS + OPTIONAL_PLATFORMS]
    if _may_declare_platforms():
        from importlib.metadata import entry_points

        for point in entry_points(group=ENTRY_POINT_GROUP):
            found.append(point.load())
    found += _EXTRA.values()
    for platform in found:
        _add_parts(platform)
    return tuple(found)


def in_use(config: Config) -> tuple[Platform, ...]:
    """The registered platforms this organisation uses: ``platforms:`` in config (absent: every built-in one; a
    platform package installed beside synctool only when ``platforms:`` names it, so installing one changes
    nothing until then), in registry order. A name no registered platform has is a ConfigError naming it."""
    found = registered()
    if config.platforms is None:
        return tuple(p for p in found if p.name in DEFAULT_PLATFORMS)
    names = [p.name for p in found]
    for name in config.platforms:
        if name not in names:
            raise ConfigError("platforms", config.source, f"no platform is named {name!r} (one of: {', '.join(names)})")
    return tuple(p for p in found if p.name in config.platforms)


def not_in_use(config: Config, role: str) -> Platform | None:
    """The registered platform of ``role`` when it is left out of ``platforms:``, else None."""
    used = {p.role for p in in_use(config)}
    return next((p for p in registered() if p.role == role and role not in used), None)


def chosen(config: Config, source: str | None, can: Callable[[Platform], object], what: str = "source") -> tuple[Platform, ...]:
    """The platforms in use that ``can`` do something (a capability: ``lambda p: p.poll``), or only ``source``'s
    (a role). A source that is registered but not in use is refused with how to turn it on; an unknown one, or
    one without the capability, with the choices."""
    able = tuple(p for p in in_use(config) if can(p))
    if source is None:
        return able
    idle = not_in_use(config, source)
    if idle is not None:
        raise InvalidInput(f"{what} {source!r} ({idle.name}) is not in use", turn_on(config, idle))
    one_of(source, tuple(p.role for p in able), what)
    return tuple(p for p in able if p.role == source)


def turn_on(config: Config, platform: Platform) -> str:
    """How to put a platform in use, in words."""
    where = config.source if config.source != "defaults" else "the config file"
    names = ",".join([p.name for p in in_use(config)] + [platform.name])
    return f"add {platform.name} to `platforms:` in {where}, or run `synctool init --platforms {names}`"


@lru_cache(maxsize=1)
def webhooks() -> dict[str, Webhook]:
    """Webhook role -> its registration, in registry order (read once: the receiver asks for every delivery)."""
    return {p.webhook.role: p.webhook for p in registered() if p.webhook}


def sources() -> tuple[str, ...]:
    return tuple(webhooks())


def adapter(source: str) -> Adapter:
    """The webhook adapter module for a role; InvalidInput for an unknown one."""
    found = webhooks()
    one_of(source, tuple(found), "source")
    return found[source].adapter()


def secret_names() -> dict[str, str]:
    """Every platform secret synctool reads: name -> what it is for."""
    names: dict[str, str] = {}
    for p in registered():
        names.update(p.secrets)
    return names


def webhook_secrets(rt: Runtime) -> WebhookSecrets:
    """The secrets and settings the receiver checks signatures with, read once at start-up: every platform's
    secret (``secret_names``) and what its ``Webhook.settings`` add (Square's notification URL)."""
    from synctool.platforms.webhook import WebhookSecrets

    found: dict[str, str | None] = {}
    for platform in registered():
        if platform.webhook is not None and platform.webhook.settings is not None:
            found.update(platform.webhook.settings(rt))
    return WebhookSecrets(
        values={name: rt.secrets.get(name) for name in secret_names()},
        settings=found,
        tolerance_s=rt.config.webhooks.tolerance_s,
        runtime=rt,
    )


def clients() -> dict[str, Client]:
    return {p.client.role: p.client for p in registered() if p.client}


def running(config: Config) -> tuple[Platform, ...]:
    """The platforms whose handlers drain runs: those in use, and the one that runs an in-use platform's jobs
    (``Platform.handles``: Stripe's jobs are the portal's to run), in registry order."""
    used = in_use(config)
    roles = {p.role for p in used}
    return tuple(p for p in registered() if p in used or roles & set(p.handles))


def claimants(config: Config, role: str) -> tuple[tuple[str, ClaimHook], ...]:
    """``(claimer's role, its claim)`` for each platform in use that takes a share of ``role``'s deliveries
    (``Platform.claims``), in registry order: the receiver asks each after ``role``'s adapter parsed a delivery."""
    return tuple((p.role, p.claims[role]) for p in in_use(config) if role in p.claims)


def claim_of(claimer: str, role: str) -> ClaimHook | None:
    """The claim the platform of role ``claimer`` makes on ``role``'s deliveries (drain re-reads a claimed delivery
    through it), or None."""
    return next((p.claims[role] for p in registered() if p.role == claimer and role in p.claims), None)


def register_handlers(config: Config | None = None) -> None:
    """Register the job handlers of the platforms that run jobs here (``running``; every registered one without
    a config) with the queue (``queue.handlers``; each module is imported when its handler first runs). A package
    installed but not in use adds none: installing one changes nothing that runs."""
    from synctool.queue.handlers import ANY_SOURCE, handler

    chosen = registered() if config is None else running(config)
    for p in chosen:
        register_platform_handlers(p)
    if any(p.payouts for p in chosen):  # `reconcile payouts --write-deposits` queues them, for any platform's payouts
        handler(ANY_SOURCE, "deposit")(Hook("synctool.platforms.deposits:deposit"))


def register_platform_handlers(platform: Platform) -> None:
    """Register each job handler ``platform`` declares with the queue (a second function for one pair is refused)."""
    from synctool.queue.handlers import handler

    for source, entity_type, run in handlers_of(platform):
        handler(source, entity_type)(run)


def handlers_of(platform: Platform) -> list[tuple[str, str, JobHandler]]:
    """``(source, entity type, handler)`` for each job handler ``platform`` declares (``Platform.handlers``: a key
    without a source is the platform's own role)."""
    found = []
    for key, run in platform.handlers.items():
        source, _, entity_type = key.rpartition(":")
        found.append((source or platform.role, entity_type, run))
    return found


def runs_jobs_of(role: str) -> Platform | None:
    """The registered platform whose handlers run ``role``'s jobs when it is not ``role``'s own
    (``Platform.handles``: the portal runs Stripe's), else None."""
    return next((p for p in registered() if role in p.handles), None)


def fakes() -> dict[str, Fake]:
    """Role -> the ``Fake`` of each platform that has one (and an API client to point at it)."""
    return {p.client.role: p.fake for p in registered() if p.fake and p.client}


def open_client(rt: Runtime, role: str) -> Any:
    """A new API client for a platform role, built from the Runtime (its secrets and transport)."""
    found = clients()
    one_of(role, tuple(found), "platform")
    return found[role].factory(rt)


@contextmanager
def using(rt: Runtime, role: str, client: Any = None) -> Iterator[Any]:
    """The client given (tests pass one), else a new one for ``role`` that is closed afterwards."""
    if client is not None:
        yield client
        return
    made = open_client(rt, role)
    try:
        yield made
    finally:
        made.close()


def targets() -> tuple[Target, ...]:
    return tuple(t for p in registered() for t in p.targets)


def drained_targets() -> tuple[str, ...]:
    """The targets drain runs, in order: the platforms' first ones, the CRM, the platforms' others."""
    added = targets()
    return tuple([t.name for t in added if t.first] + ["crm"] + [t.name for t in added if not t.first])


def crm_bound() -> tuple[str, ...]:
    """The targets whose jobs lead to the CRM: the backlog doctor watches."""
    return tuple(t.name for t in targets() if t.first) + ("crm",)


def settings(config: Config | None = None) -> dict[str, Setting]:
    """The platforms' settings by name: those of the platforms in use (``config``), or of every registered one."""
    return {setting.name: setting for p in (registered() if config is None else in_use(config)) for setting in p.settings}


def listing(platform: Platform, conn: store.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    """A platform's money in a period (``Platform.expected``, which reconcile and backfill read)."""
    if platform.expected is None:
        raise InvalidInput(f"{platform.role} lists no money", "`synctool platforms` says which platforms reconcile")
    return platform.expected(conn, rt, start, end)
