"""The outside systems synctool syncs with, one package each, and the registry that loads them.

Each package (``givebutter``, ``square``, ...) holds everything about its system: payload models and
webhook verification (``webhook.py``), the API client (``client.py``), the sync rules (``rules.py``),
operations (``ops.py``), CLI commands (``commands.py``, imported by the CLI only) and its fake
(``fake.py``). Its ``__init__.py`` exports one typed ``PLATFORM`` (a ``Platform``): everything else in
synctool (the receiver's routes, the secrets table, ``doctor``, the admin API, the job handlers, the CLI's
command groups, reconcile, mappings, backfill, the fake world) is built from the registry, in the style of
llm's ``DEFAULT_PLUGINS``. Built-ins are registered exactly as an outside package would be: a package
outside synctool names its ``Platform`` under the entry point group ``synctool.platforms`` (or a caller
passes one to ``register``). Adding a platform is a folder here and a line in ``DEFAULT_PLATFORMS``.

Hooks are typed callables (``docs/platforms.md``): each is a function of the platform's ``__init__.py`` that
imports its implementation inside its body, so a cron run that needs none of them pays for none of them,
while mypy checks every hook's signature against the contract below.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, Protocol

from synctool.errors import ConfigError, InvalidInput, one_of

if TYPE_CHECKING:
    from sqlite_utils import Database

    from synctool.config import Config
    from synctool.platforms.reconcile import Expected, Payout
    from synctool.platforms.registration import Check, Outcome
    from synctool.platforms.webhook import Adapter, Missed, WebhookSecrets
    from synctool.runtime import Runtime

#: the platforms synctool loads, in the order their routes, commands and checks are listed
DEFAULT_PLATFORMS = ("givebutter", "square", "mailchimp", "stripe", "portal")
#: the entry point group through which an outside package adds a platform (its value: a ``Platform``)
ENTRY_POINT_GROUP = "synctool.platforms"


class PollHook(Protocol):
    """``synctool poll``: queue what the platform changed since its last run and synctool has not seen.
    Returns at least ``since``, ``seen``, ``queued`` and ``requests``."""

    def __call__(
        self, conn: sqlite3.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None
    ) -> dict[str, Any]: ...


class Registration(Protocol):
    """``synctool webhooks status|register``: a module that checks and registers the platform's webhook."""

    def status(self, conn: sqlite3.Connection, rt: Runtime, base: str, client: Any) -> list[Check]: ...

    def register(self, conn: sqlite3.Connection, rt: Runtime, base: str, client: Any) -> list[Outcome]: ...


#: a period's money as gifts (``reconcile``, ``backfill``), and the platform requests it cost
ExpectedHook = Callable[[sqlite3.Connection, "Runtime", date, date], "tuple[list[Expected], int]"]
#: a period's bank deposits (``reconcile payouts``), and the platform requests it cost
PayoutsHook = Callable[[sqlite3.Connection, "Runtime", date, date], "tuple[list[Payout], int]"]
#: the deliveries the platform reports it failed to make since an ISO time, and the requests spent
MissedHook = Callable[[sqlite3.Connection, "Runtime", str], "tuple[list[Missed], int]"]
#: fetch afresh the items of these failed jobs before ``retry-all --fresh``: (how many, errors)
RefetchHook = Callable[[sqlite3.Connection, "Runtime", list[sqlite3.Row]], tuple[int, list[str]]]
#: its own ``doctor`` rows: ``(check, status, detail, fix)``
ChecksHook = Callable[[sqlite3.Connection, "Runtime"], list[tuple[str, str, str, str]]]


@dataclass(frozen=True)
class ApiRoute:
    """One admin API route a platform adds (``Platform.routes``): ``handler(call)`` gets the request's ``Call``
    (``synctool.web.api_handlers.Call``: ``conn``, ``rt``, ``user``, ``path`` (the path's parameters), ``query``,
    ``body``, ``body_as(Model)``, ``query_as(Model)``) and returns what the route answers as JSON; ``role`` is the
    minimum role: ``viewer``, ``admin`` or ``super_admin``."""

    method: str
    path: str
    role: str
    handler: Callable[[Any], Any]


#: the admin API routes a platform adds
RoutesHook = Callable[[], Sequence[ApiRoute]]


@dataclass(frozen=True)
class Setting:
    """One run-time setting a platform owns (``Platform.settings``), kept in synctool's database: what
    `synctool settings NAME` shows and changes, and what a Settings page lists for every platform in use.

    ``body()`` returns the pydantic model a change is checked with (its fields, with their descriptions, are
    the command's argument or options: one field is an argument, several are options); ``read(conn)`` returns
    the value as a mapping, ``write(conn, body)`` saves a checked body and returns the new value. The three
    import their implementation when called, as every hook does."""

    name: str
    #: what it decides, in one sentence (the command's summary), then whatever else a person should know
    help: str
    body: Callable[[], type[Any]]
    read: Callable[[sqlite3.Connection], Mapping[str, Any]]
    write: Callable[[sqlite3.Connection, Any], Mapping[str, Any]]
    #: the command line that sets it, for the help's example (``synctool settings NAME`` and this)
    example: str = ""


def setting_in(module: str, name: str, help: str, body: str, *, example: str = "") -> Setting:
    """A ``Setting`` whose body model (``body``, its name), ``read(conn)`` and ``write(conn, body)`` are in
    ``module``, imported when the setting is first used (as every hook is)."""

    def load() -> Any:
        return importlib.import_module(module)

    return Setting(
        name, help, lambda: getattr(load(), body), lambda conn: load().read(conn), lambda conn, b: load().write(conn, b),
        example=example,
    )  # fmt: skip


@dataclass(frozen=True)
class Webhook:
    """A platform's inbound webhook: ``POST /webhooks/<role>``, checked and parsed by ``adapter()``'s module.

    The secret policy is one for every platform: a delivery is verified with ``secret`` (a secret's name), and
    while that secret is not set the receiver refuses the platform's deliveries (503, "not configured"), never
    accepting them unverified; the platform retries them once it is set."""

    role: str
    adapter: Callable[[], Adapter]
    #: the secret its deliveries are verified with (None: the adapter needs none)
    secret: str | None = None
    #: Mailchimp checks a URL with a GET (and may POST an empty body) before it sends events
    url_check: bool = False
    #: what else its signatures are checked with, read once when the receiver starts (Square signs the exact
    #: notification URL): name -> value, handed to ``verify_webhook`` in ``WebhookSecrets.settings``
    settings: Callable[[Runtime], Mapping[str, str | None]] | None = None


@dataclass(frozen=True)
class Client:
    """A platform's API client: ``factory`` builds it from a Runtime (its secrets and transport)."""

    role: str
    factory: Callable[[Runtime], Any]
    #: how `test-connections` proves the client works: one read, described in words
    probe: Callable[[Any], str] | None = None


@dataclass(frozen=True)
class Fake:
    """A platform's fake API: ``make(key)`` returns the fake (its state) and the ASGI app that serves it, for
    a client that sends ``key`` as the ``key_secret``; the client's base URL is the fake's address plus
    ``path`` and goes in ``base_url_env``."""

    name: str
    make: Callable[[str], tuple[Any, Any]]
    key_secret: str
    key: str
    base_url_env: str
    path: str = ""
    #: the platform's official API description the fake is held to (a file in shared/reference/specs)
    contract: str | None = None


@dataclass(frozen=True)
class Mappings:
    """The mapping keys a platform's gifts are coded by (``synctool mappings types|payments set``)."""

    #: type-default keys its rules look up as ``<role>:<key>`` (``donations:event``)
    types: tuple[str, ...] = ()
    #: how a payment method is written in its payment-type key (``donations:card``, ``pos:CARD``); None: none
    payment_case: Literal["lower", "upper"] | None = None
    #: the payment methods to name in the usage message
    payment_examples: str = ""


@dataclass(frozen=True)
class Target:
    """A job target a platform adds beside the CRM (``jobs.target``): what its jobs act on."""

    name: str
    #: its jobs turn platform records into CRM jobs: drain runs them before the CRM's, and doctor counts
    #: them in the CRM backlog
    first: bool = False
    #: its jobs change local records, so they run one at a time, in arrival order
    serial: bool = False


@dataclass(frozen=True)
class Platform:
    """Everything the core knows of one outside system. Each is optional but ``name`` and ``role``; the
    hooks are described one by one in ``docs/platforms.md``."""

    name: str
    #: the role it plays and its source name in the sync log (``donations``, ``pos``, ...)
    role: str
    webhook: Webhook | None = None
    client: Client | None = None
    #: every secret it reads: name -> what it is for
    secrets: Mapping[str, str] = field(default_factory=dict)
    fake: Fake | None = None
    #: the prefixes of the CRM gift external ids its jobs write (``donations_``); a platform without one
    #: (the portal's payment ids) is known by synctool's gift ledger instead
    external_id_prefixes: tuple[str, ...] = ()
    mappings: Mappings = Mappings()
    #: its money in a period (``reconcile``), and its bank deposits (``reconcile payouts``)
    expected: ExpectedHook | None = None
    payouts: PayoutsHook | None = None
    #: whether ``synctool backfill`` may page its history (through ``expected``)
    backfill: bool = False
    #: the module that checks and registers its webhook with the platform's API (``synctool webhooks``)
    registration: Callable[[], Registration] | None = None
    #: imports its ``@handler`` modules, so drain finds its job handlers (called when drain first needs them)
    handlers: Callable[[], None] | None = None
    #: its top-level commands: name -> a function returning the Typer app (called only when the command is
    #: named, or `synctool --help` lists them, in its Platforms section)
    commands: Mapping[str, Callable[[], Any]] = field(default_factory=dict)
    #: its run-time settings (`synctool settings NAME`; a Settings page lists them)
    settings: tuple[Setting, ...] = ()
    #: the other platforms' sources whose jobs its handlers run (the portal runs Stripe's ``payments`` jobs):
    #: such a source's platform works only beside this one
    handles: tuple[str, ...] = ()
    routes: RoutesHook | None = None
    #: its backup poll (``synctool poll``); its watermark is the ``poll_state`` row of its role
    poll: PollHook | None = None
    #: the deliveries it reports it failed to make (``webhooks status|heal``); None for a platform that keeps
    #: no such record
    missed: MissedHook | None = None
    refetch: RefetchHook | None = None
    #: reads one event campaign's ticket check-ins now (``synctool events checkins``): (conn, rt, campaign id)
    #: -> what it read; its orders' invitations are queued (``tickets``, ``crm.invitations``)
    checkins: Callable[[sqlite3.Connection, Runtime, str], dict[str, Any]] | None = None
    checks: ChecksHook | None = None
    #: the job targets it adds beside ``crm`` (the portal's local records, the mailing list)
    targets: tuple[Target, ...] = ()
    #: the tables it keeps records in (``dev reset-test-data`` empties them)
    tables: tuple[str, ...] = ()
    #: the migrations that make its tables, in order (its own set, ``synctool.<name>``, applied after the
    #: core's by every connection that migrates)
    migrations: Callable[[], Sequence[Callable[[Database], None]]] | None = None
    #: its config section, ``<role>:`` in config.yaml (a pydantic model; ``Config.section(role)`` reads it),
    #: and the environment variables that override its keys (``{"KIND_API_BASE_URL": "base_url"}``)
    config: type[Any] | None = None
    config_env: Mapping[str, str] = field(default_factory=dict)


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
    """The built-ins, in ``DEFAULT_PLATFORMS`` order, then those of the entry point group and ``register``."""
    found = [importlib.import_module(f"synctool.platforms.{name}").PLATFORM for name in DEFAULT_PLATFORMS]
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


def chosen(config: Config, source: str | None, can: Callable[[Platform], Any], what: str = "source") -> tuple[Platform, ...]:
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
    )


def clients() -> dict[str, Client]:
    return {p.client.role: p.client for p in registered() if p.client}


def listing(platform: Platform, conn: sqlite3.Connection, rt: Runtime, start: date, end: date) -> tuple[list[Expected], int]:
    """A platform's money in a period (``Platform.expected``, which reconcile and backfill read)."""
    if platform.expected is None:
        raise InvalidInput(f"{platform.role} lists no money", "`synctool platforms` says which platforms reconcile")
    return platform.expected(conn, rt, start, end)


def source_of_gift(external_id: str) -> str | None:
    """The role whose gifts carry this external id's prefix; None when no platform's prefix fits."""
    return next((p.role for p in registered() for prefix in p.external_id_prefixes if external_id.startswith(prefix)), None)


def running(config: Config) -> tuple[Platform, ...]:
    """The platforms whose handlers drain runs: those in use, and the one that runs an in-use platform's jobs
    (``Platform.handles``: Stripe's jobs are the portal's to run), in registry order."""
    used = in_use(config)
    roles = {p.role for p in used}
    return tuple(p for p in registered() if p in used or roles & set(p.handles))


def register_handlers(config: Config | None = None) -> None:
    """Import the handler modules of the platforms that run jobs here (``running``; every registered one without
    a config), so their job handlers are registered (``queue.handlers``). A package installed but not in use
    adds none: installing one changes nothing that runs."""
    for p in registered() if config is None else running(config):
        if p.handlers:
            p.handlers()


def command_groups() -> dict[str, Callable[[], Any]]:
    groups: dict[str, Callable[[], Any]] = {}
    for p in registered():
        groups.update(p.commands)
    return groups


def settings(config: Config | None = None) -> dict[str, Setting]:
    """The platforms' settings by name: those of the platforms in use (``config``), or of every registered one."""
    return {setting.name: setting for p in (registered() if config is None else in_use(config)) for setting in p.settings}


def runs_jobs_of(role: str) -> Platform | None:
    """The registered platform whose handlers run ``role``'s jobs when it is not ``role``'s own
    (``Platform.handles``: the portal runs Stripe's), else None."""
    return next((p for p in registered() if role in p.handles), None)


def jobs_unrun(config: Config) -> list[tuple[Platform, Platform]]:
    """``(platform, runner)`` for each platform in use whose jobs are run by a platform that is not in use (Stripe
    without the portal): drain still runs them with the runner's handlers (``running``), but the runner's own
    webhook, records and reconcile are off, which is seldom what was meant (``doctor`` says so)."""
    used = in_use(config)
    found = []
    for p in used:
        by = runs_jobs_of(p.role)
        if by is not None and by not in used:
            found.append((p, by))
    return found


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


def job_targets() -> tuple[str, ...]:
    """Every job target: those drain runs, and those the spec leaves to processors of their own."""
    from synctool.queue.jobs import TARGETS

    return drained_targets() + tuple(t for t in TARGETS if t != "crm")


def crm_bound() -> tuple[str, ...]:
    """The targets whose jobs lead to the CRM: the backlog doctor watches."""
    return tuple(t.name for t in targets() if t.first) + ("crm",)


def describe(rt: Runtime) -> list[dict[str, Any]]:
    """One row per registered platform: its name and role, whether it is in use and, if so, whether its
    credentials are set (never their values), its webhook route, commands and settings, what it can do, the
    platform that runs its jobs when another does, and, when it is not in use, how to turn it on."""
    rows = []
    used = in_use(rt.config)
    for p in registered():
        unset = [name for name in p.secrets if not rt.secrets.source(name)]
        if p not in used:
            credentials = None
        else:
            credentials = "set" if not unset else "missing: " + ", ".join(unset)
        can = {
            "poll": p.poll is not None,
            "heal": p.missed is not None,
            "reconcile": p.expected is not None,
            "payouts": p.payouts is not None,
            "backfill": p.backfill,
            "webhook registration": p.registration is not None,
            "connection test": bool(p.client and p.client.probe),
        }
        rows.append(
            {
                "name": p.name,
                "role": p.role,
                "in_use": p in used,
                "credentials": credentials,
                "webhook": f"/webhooks/{p.webhook.role}" if p.webhook else None,
                "commands": ", ".join(p.commands) or None,
                "settings": ", ".join(setting.name for setting in p.settings) or None,
                "can": ", ".join(k for k, v in can.items() if v) or None,
                "targets": ", ".join(t.name for t in p.targets) or None,
                "jobs_run_by": by.name if (by := runs_jobs_of(p.role)) is not None else None,
                "secrets": ", ".join(p.secrets) or None,
                "turn_on": None if p in used else turn_on(rt.config, p),
            }
        )
    return rows
