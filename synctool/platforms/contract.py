"""The platform contract: ``Platform`` and its parts, every field a typed hook (``docs/platforms.md``).

Each hook is a typed callable. A platform names the function behind it with a ``Hook`` (``synctool.platforms.hooks``),
imported when first called, so a cron run that needs none of a platform's hooks pays for none of them; mypy checks
every call the core makes against the types below, and ``synctool.testing.hook_problems`` checks each reference
against them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeVar, runtime_checkable

from pydantic import BaseModel

from synctool.config_sections import Section
from synctool.platforms.hooks import Hook, Loaded, Served
from synctool.validation import Body

if TYPE_CHECKING:
    from sqlite_utils import Database

    from synctool import store
    from synctool.config import Config
    from synctool.platforms.reconcile import Expected, Payout
    from synctool.platforms.registration import Check, RegisterResult
    from synctool.platforms.webhook import Adapter, Event, Missed
    from synctool.queue.handlers import RunningJob as Job
    from synctool.queue.jobs import Outcome
    from synctool.runtime import Runtime


class PollHook(Protocol):
    """``synctool poll``: queue what the platform changed since its last run and synctool has not seen.
    Returns at least ``since``, ``seen``, ``queued`` and ``requests``."""

    def __call__(
        self, conn: store.Connection, rt: Runtime, *, fresh: bool = False, lookback: str | None = None
    ) -> Mapping[str, object]: ...


@runtime_checkable
class PlatformClient(Protocol):
    """What the core does with any platform's API client (``Client.factory``): close it when done."""

    def close(self) -> None: ...


class Registration(Protocol):
    """``synctool webhooks status|register``: a module that checks and registers the platform's webhook."""

    def status(self, conn: store.Connection, rt: Runtime, base: str, client: PlatformClient) -> list[Check]: ...

    def register(self, conn: store.Connection, rt: Runtime, base: str, client: PlatformClient) -> list[RegisterResult]: ...


#: an ASGI app (a fake's API: a web type the core does not import): (scope, receive, send)
AsgiApp = Callable[
    [
        MutableMapping[str, object],
        Callable[[], Awaitable[MutableMapping[str, object]]],
        Callable[[MutableMapping[str, object]], Awaitable[None]],
    ],
    Awaitable[None],
]
#: a period's money as gifts (``reconcile``, ``backfill``), and the platform requests it cost
ExpectedHook = Callable[["store.Connection", "Runtime", date, date], "tuple[list[Expected], int]"]
#: a period's bank deposits (``reconcile payouts``), and the platform requests it cost
PayoutsHook = Callable[["store.Connection", "Runtime", date, date], "tuple[list[Payout], int]"]
#: the deliveries the platform reports it failed to make since an ISO time, and the requests spent
MissedHook = Callable[["store.Connection", "Runtime", str], "tuple[list[Missed], int]"]
#: fetch afresh the items of these failed jobs before ``retry-all --fresh``: (how many, errors)
RefetchHook = Callable[["store.Connection", "Runtime", list["store.Row"]], tuple[int, list[str]]]
#: a job handler: the event its job was queued for, the running job (``synctool.platform.Job``, which has what the
#: queue reads of it and more) -> how the job ended (or it raises ``Skip``, ...)
JobHandler = Callable[["Event", "Job"], "Outcome"]
#: its own ``doctor`` rows: ``(check, status, detail, fix)``
ChecksHook = Callable[["store.Connection", "Runtime"], list[tuple[str, str, str, str]]]
#: its campaigns (forms, payment links, products: what its gifts are coded by) by name: id -> name, from its cache or
#: its API (the Mappings page's choices, the overview's campaigns without a mapping)
CampaignsHook = Callable[["store.Connection", "Runtime"], Mapping[str, str]]


@dataclass(frozen=True)
class ApiRoute:
    """One admin API route a platform adds (``Platform.routes``): ``handler(call)`` gets the request, a
    ``StaffRequest`` (``synctool.web.request``: ``conn``, ``rt``, ``user``, ``path`` (the path's parameters), ``query``,
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
    body: Callable[[], type[Body]]
    read: Callable[[store.Connection], Mapping[str, object]]
    write: Callable[[store.Connection, Body], Mapping[str, object]]
    #: the command line that sets it, for the help's example (``synctool settings NAME`` and this)
    example: str = ""
    #: its heading on a Settings page, in words ("Mailing events in the CRM"), never its command's name
    title: str = ""
    #: what it decides, in a sentence or two for a person on a Settings page (what each value does, the default)
    description: str = ""


def setting_in(module: str, name: str, help: str, body: str, *, title: str, description: str, example: str = "") -> Setting:
    """A ``Setting`` whose body model (``body``, its name), ``read(conn)`` and ``write(conn, body)`` are in
    ``module``, imported when the setting is first used (as every hook is); ``title`` and ``description`` are
    what a Settings page shows of it."""
    loaded = Loaded(f"{module}:{body}")
    return Setting(name, help, loaded, Hook(f"{module}:read"), Hook(f"{module}:write"), example, title, description)


class PlatformSection(Section):
    """A platform's config section (``Platform.config``), read under the role of the platform that declares it:
    ``PosConfig.of(rt.config).base_url``, typed as the section's own model."""

    @classmethod
    def of(cls, config: Config) -> Self:
        found: Self = config.section(_role_of(cls))
        return found


def _role_of(model: type) -> str:
    """The role whose config section ``model`` is (``Platform.config``, added as the registry loads)."""
    from synctool.config import SECTIONS

    role = next((role for role, (kind, _) in SECTIONS.items() if kind is model), None)
    if role is None:
        raise LookupError(f"no registered platform declares config={model.__name__}")
    return role


def handlers_in(package: str, **modules: Sequence[str]) -> dict[str, JobHandler]:
    """``Platform.handlers`` where each handler is the function named for its job type, in a module of ``package``:
    ``handlers_in(__name__, rules=("order",), refunds=("order_refund",))`` is ``{"order":
    Hook(f"{__name__}.rules:order"), "order_refund": Hook(f"{__name__}.refunds:order_refund")}`` (a key
    ``"source:type"`` names the function ``type``)."""
    return {key: Hook(f"{package}.{module}:{key.rpartition(':')[2]}") for module, keys in modules.items() for key in keys}


@dataclass(frozen=True)
class Webhook:
    """A platform's inbound webhook: ``POST /webhooks/<role>`` (its platform's role), checked and parsed by
    ``adapter()``'s module.

    The secret policy is one for every platform: a delivery is verified with ``secret`` (a secret's name), and
    while that secret is not set the receiver refuses the platform's deliveries (503, "not configured"), never
    accepting them unverified; the platform retries them once it is set."""

    adapter: Callable[[], Adapter]
    #: the secret its deliveries are verified with (None: the adapter needs none), and what it is, in words
    secret: str | None = None
    secret_help: str = ""
    #: Mailchimp checks a URL with a GET (and may POST an empty body) before it sends events
    url_check: bool = False
    #: what else its signatures are checked with, read once when the receiver starts (Square signs the exact
    #: notification URL): name -> value, handed to ``verify_webhook`` in ``WebhookSecrets.settings``
    settings: Callable[[Runtime], Mapping[str, str | None]] | None = None
    #: its platform's role, filled in by the ``Platform`` that declares it
    role: str = field(default="", init=False)

    @classmethod
    def of(
        cls,
        package: str,
        secret: str | None = None,
        secret_help: str = "",
        *,
        url_check: bool = False,
        settings: Callable[[Runtime], Mapping[str, str | None]] | None = None,
    ) -> Webhook:
        """The webhook whose adapter is ``package``'s ``webhook`` module (a package's shape, docs/platforms.md)."""
        return cls(Loaded(f"{package}.webhook"), secret, secret_help, url_check=url_check, settings=settings)


@dataclass(frozen=True)
class Client:
    """A platform's API client: ``factory`` builds it from a Runtime (its secrets and transport), with the secret
    ``key`` (its name, and what it is in words)."""

    factory: Callable[[Runtime], PlatformClient]
    #: how `test-connections` proves the client works: one read, described in words
    probe: Callable[[PlatformClient], str] | None = None
    key: str | None = None
    key_help: str = ""
    #: the other secrets ``factory`` reads beside its key (an OAuth client secret, a second token): name -> what it is
    other_secrets: Mapping[str, str] = field(default_factory=dict)
    #: its platform's role, filled in by the ``Platform`` that declares it
    role: str = field(default="", init=False)

    @classmethod
    def of(cls, package: str, key: str | None = None, key_help: str = "", *, factory: str = "from_runtime") -> Client:
        """The client that ``package``'s ``client`` module builds (``factory(rt)``) and probes (``probe(client)``)."""
        return cls(Hook(f"{package}.client:{factory}"), probe=Hook(f"{package}.client:probe"), key=key, key_help=key_help)


@dataclass(frozen=True, kw_only=True)
class Fake:
    """A platform's fake API: ``make(key)`` returns the fake (its state) and the ASGI app that serves it, for
    a client that sends ``key`` as its ``Client.key``; the client's base URL is the fake's address plus
    ``path`` and goes in ``base_url_env``."""

    make: Callable[[str], tuple[object, AsgiApp]]
    key: str
    path: str = ""
    #: the platform's official API description the fake is held to (a file in shared/reference/specs)
    contract: str | None = None
    #: its platform's name, and the secret its key goes in (the platform's ``Client.key``): filled in by the
    #: ``Platform`` that declares it
    name: str = field(default="", init=False)
    key_secret: str = field(default="", init=False)
    #: the variable its client's base URL is read from: the platform's ``config_env`` that sets ``base_url``
    base_url_env: str = field(default="", init=False)

    @classmethod
    def of(cls, package: str, state: str, *, key: str, path: str = "", contract: str | None = None) -> Fake:
        """The fake that ``package``'s ``fake`` module serves: its ``state`` class, and its ``create_app``."""
        return cls(make=Served(f"{package}.fake:{state}"), key=key, path=path, contract=contract)


@dataclass(frozen=True)
class Mappings:
    """The mapping keys a platform's gifts are coded by (``synctool mappings types|payments set``)."""

    #: type-default keys its rules look up as ``<role>:<key>`` (``donations:event``)
    types: tuple[str, ...] = ()
    #: how a payment method is written in its payment-type key (``donations:card``, ``pos:CARD``); None: none
    payment_case: Literal["lower", "upper"] | None = None
    #: the payment methods to name in the usage message
    payment_examples: str = ""
    #: its campaigns by name (``CampaignsHook``); None: those its cache ``<role>:campaigns`` holds (their ``title``)
    campaigns: CampaignsHook | None = None


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
    #: its job handlers, each declared here only: ``"entity_type"`` for its own role's jobs, ``"source:entity_type"``
    #: for another platform's (``Platform.handles``), ``"*:entity_type"`` for any source's; drain registers them
    #: when it claims its first job
    handlers: Mapping[str, JobHandler] = field(default_factory=dict)
    #: its top-level commands: name -> a function returning the Typer app (called only when the command is
    #: named, or `synctool --help` lists them, in its Platforms section)
    commands: Mapping[str, Callable[[], object]] = field(default_factory=dict)
    #: its run-time settings (`synctool settings NAME`; a Settings page lists them)
    settings: tuple[Setting, ...] = ()
    routes: RoutesHook | None = None
    #: its backup poll (``synctool poll``); its watermark is the ``poll_state`` row of its role
    poll: PollHook | None = None
    #: the deliveries it reports it failed to make (``webhooks status|heal``); None for a platform that keeps
    #: no such record
    missed: MissedHook | None = None
    refetch: RefetchHook | None = None
    #: reads one event campaign's ticket check-ins now (``synctool events checkins``): (conn, rt, campaign id)
    #: -> what it read; its orders' invitations are queued (``tickets``, ``crm.invitations``)
    checkins: Callable[[store.Connection, Runtime, str], Mapping[str, object]] | None = None
    #: reads every recurring plan it holds (``synctool backfill``; the poll reads them too): (conn, rt) -> what it
    #: read and queued; a plan job (entity type ``plan``) for each that synctool's record lacks or that changed
    plans: Callable[[store.Connection, Runtime], Mapping[str, object]] | None = None
    #: a plan's charges, oldest first, each with the CRM gift it became (``synctool plans show``): (conn, plan id)
    plan_charges: Callable[[store.Connection, str], Sequence[Mapping[str, object]]] | None = None
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
    config: type[BaseModel] | None = None
    config_env: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Its parts take its role (and its fake its name and its client's key) from it: each is said once."""
        if self.webhook is not None:
            object.__setattr__(self, "webhook", _filled(self.webhook, role=self.role))
        if self.client is not None:
            object.__setattr__(self, "client", _filled(self.client, role=self.role))
        if self.fake is not None:
            key = self.client.key if self.client is not None else None
            base_url_env = next((env for env, key in self.config_env.items() if key == "base_url"), "")
            object.__setattr__(self, "fake", _filled(self.fake, name=self.name, key_secret=key or "", base_url_env=base_url_env))

    @property
    def handles(self) -> tuple[str, ...]:
        """The other platforms' sources whose jobs its handlers run (the portal runs Stripe's ``payments`` jobs), as
        its ``handlers``' keys name them: such a source's platform works only beside this one."""
        sources = (key.rpartition(":")[0] for key in self.handlers)
        return tuple(dict.fromkeys(s for s in sources if s and s not in ("*", self.role)))  # "*": any source's

    @property
    def secrets(self) -> dict[str, str]:
        """Every secret it reads, declared where each is used (its client's key and other secrets, its webhook's
        secret): name -> what it is for."""
        found = {}
        if self.client is not None and self.client.key:
            found[self.client.key] = self.client.key_help
        if self.client is not None:
            found.update(self.client.other_secrets)
        if self.webhook is not None and self.webhook.secret:
            found[self.webhook.secret] = self.webhook.secret_help
        return found


P = TypeVar("P", Webhook, Client, Fake)


def _filled(part: P, **names: str) -> P:
    """A copy of ``part`` with the fields it takes from its platform set (it may be shared by two platforms)."""
    copy = dataclasses.replace(part)
    for name, value in names.items():
        object.__setattr__(copy, name, value)
    return copy
