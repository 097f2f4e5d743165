"""``check_platform(PLATFORM)``: every hook of a platform called as the core calls it.

In a temporary folder, with its secrets set and its fake (when it ships one) serving its API in process, each
hook the platform declares is called with the arguments the core passes and its answer checked against the
contract (``docs/platforms.md``). A hook may refuse with one of synctool's named errors (a platform without a
fake cannot be reached, and says so); a ``TypeError`` (a hook written with other parameters), any other
exception, or an answer of the wrong shape is a problem. All the problems are raised together.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import tempfile
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import TypeVar

import httpx

from synctool import platforms, store
from synctool.errors import ConfigError, InvalidInput, SynctoolError
from synctool.platforms import Platform, Setting
from synctool.platforms.contract import ApiRoute
from synctool.platforms.reconcile import Expected, Payout
from synctool.platforms.registration import Check
from synctool.platforms.webhook import Adapter, Event, Missed, WebhookSecrets
from synctool.runtime import Runtime
from synctool.testing.references import hook_problems

T = TypeVar("T")
#: the ABC every callable is an instance of (an ASGI app is one)
CALLABLE = typing.cast(type, Callable)


class Problems(AssertionError):
    """What in a platform does not keep the contract, one line each."""


@contextmanager
def platform_site(platform: Platform, environ: Mapping[str, str] | None = None) -> Iterator[tuple[store.Connection, Runtime]]:
    """A temporary synctool for one platform: its config and database in a folder of their own, its secrets
    set, its fake (if any) answering its client in process; registered for the duration if it was not."""
    from synctool.fakes.transport import AppTransport

    added = platform.name not in {p.name for p in platforms.registered()}
    if added:
        platforms.register(platform)
    with tempfile.TemporaryDirectory(prefix="synctool-conformance-") as tmp:
        folder = Path(tmp)
        (folder / "config.yaml").write_text("{}\n")
        env = {
            "SYNCTOOL_KEYRING": "off",
            "SYNCTOOL_CONFIG": str(folder / "config.yaml"),
            "SYNCTOOL_DB": str(folder / "synctool.db"),
            **{name: f"conformance-{name.lower()}" for name in platform.secrets},
        }
        transports: dict[str, httpx.BaseTransport] = {}
        if platform.fake is not None:
            _, app = platform.fake.make(platform.fake.key)
            transports[platform.role] = AppTransport(app)
            env[platform.fake.base_url_env] = f"http://{platform.role}.fake.invalid{platform.fake.path}"
            env[platform.fake.key_secret] = platform.fake.key
        env.update(environ or {})
        rt = Runtime.from_environ(folder / "config.yaml", env, transports=transports)
        conn = store.connect(rt.db_path)
        try:
            yield conn, rt
        finally:
            conn.close()
            if added:
                platforms.unregister(platform.name)


def _pair(found: object, first: type | tuple[type, ...], what: str) -> None:
    assert isinstance(found, tuple) and len(found) == 2, f"returns {type(found).__name__}, not ({what}, requests)"
    items, spent = found
    assert isinstance(items, list) and all(isinstance(i, first) for i in items), f"its list holds other than {what}"
    assert isinstance(spent, int), "its request count is not an int"


@dataclasses.dataclass
class _Calls:
    """What one run of ``check_platform`` called and found: the hooks exercised, and the problems, one line each."""

    problems: list[str]
    exercised: list[str] = dataclasses.field(default_factory=list)

    def attempt(self, name: str, call: Callable[[], T], check: Callable[[T], None] = lambda _: None) -> None:
        """Call one hook as the core does and check its answer; a named refusal is within the contract."""
        self.exercised.append(name)
        try:
            found = call()
        except SynctoolError:
            return  # a named refusal (no fake to reach, no credentials) is within the contract
        except AssertionError as exc:
            self.problems.append(f"{name}: {exc}")
            return
        except TypeError as exc:
            self.problems.append(f"{name}: not callable as the core calls it ({exc})")
            return
        except Exception as exc:  # noqa: BLE001 -- any other exception is what this check exists to report
            self.problems.append(f"{name}: raised {type(exc).__name__}: {exc}")
            return
        try:
            check(found)
        except AssertionError as exc:
            self.problems.append(f"{name}: {exc}")


#: a step of ``check_platform``: the hooks of one kind called in the platform's temporary site
Step = Callable[[_Calls, Platform, store.Connection, Runtime], None]


def check_platform(platform: Platform, environ: Mapping[str, str] | None = None) -> list[str]:
    """Call every hook ``platform`` declares as the core does; raise ``Problems`` naming each that does not keep
    the contract. Returns the hooks exercised (``"poll"``, ``"expected"``, ``"settings.<name>"``, ...).

    First each hook named by reference resolved (``hook_problems``); then, in ``platform_site``: ``config()``; the webhook's ``adapter()`` (``KEPT_HEADERS``, ``parse_webhook`` of three
    bad bodies, ``verify_webhook`` of an unsigned one); ``client.factory(rt)`` and ``probe``; ``poll(conn, rt,
    fresh=False, lookback=None)``; ``expected`` and ``payouts`` over the last 30 days; ``missed`` since a day ago;
    ``refetch(conn, rt, [])``; ``checks``; ``registration().status(...)``; ``routes()``; each setting's ``read(conn)``
    and ``body()``; ``checkins(conn, rt, "conformance-campaign")``; each of ``handlers`` registered; each command group; ``fake.make``;
    and the tables its migrations make (the table in ``docs/platforms.md``, "Testing", says what each must answer)."""
    calls = _Calls(hook_problems(platform))
    if not platform.name or not platform.role or platform.role == "crm":
        calls.problems.append("name and role: both are needed, and the role 'crm' is the core's")
    section = platform.config
    if section is not None:
        calls.attempt("config", lambda: section())  # a section that validates with no key set
    with platform_site(platform, environ) as (conn, rt):
        for step in STEPS:
            step(calls, platform, conn, rt)
    if calls.problems:
        raise Problems(f"{platform.name} does not keep the platform contract:\n- " + "\n- ".join(calls.problems))
    return calls.exercised


def _webhook(calls: _Calls, platform: Platform, conn: store.Connection, rt: Runtime) -> None:
    """The adapter: its role, ``KEPT_HEADERS``, three bad bodies parsed, an unsigned one refused."""
    if platform.webhook is None:
        return
    hook = platform.webhook
    if hook.role != platform.role:
        calls.problems.append("webhook: its role is not the platform's")

    def adapter_keeps_the_contract(adapter: Adapter) -> None:
        assert isinstance(adapter.KEPT_HEADERS, tuple), "KEPT_HEADERS is not a tuple"
        assert list(inspect.signature(adapter.verify_webhook).parameters)[:4] == ["body", "headers", "query", "secrets"]
        for body in (b"", b"not json", b"[]"):
            try:
                event = adapter.parse_webhook(body)
            except InvalidInput:
                continue
            assert isinstance(event, Event), f"parse_webhook({body!r}) returned {type(event).__name__}"
        try:
            adapter.verify_webhook(b"{}", {}, {}, WebhookSecrets(), now=None)
        except (InvalidInput, ConfigError):
            pass
        else:
            raise AssertionError("verify_webhook accepted an unsigned body with no secret")

    calls.attempt("webhook.adapter", hook.adapter, adapter_keeps_the_contract)


def _client(calls: _Calls, platform: Platform, conn: store.Connection, rt: Runtime) -> None:
    """The client built from the runtime, its probe's words, the client closed."""
    client = platform.client
    if client is None:
        return

    def connect() -> str:
        made = client.factory(rt)
        try:
            return client.probe(made) if client.probe else ""
        finally:
            made.close()

    calls.attempt("client", connect, lambda said: _is(said, str, "probe's answer"))


def _reads(calls: _Calls, platform: Platform, conn: store.Connection, rt: Runtime) -> None:
    """The poll, the money of the last 30 days, its deposits, the missed deliveries of a day and ``refetch``."""
    today = date.today()
    if platform.poll is not None:
        poll = platform.poll

        def polled(found: object) -> None:
            assert isinstance(found, dict), "returns no dict"
            missing = {"since", "seen", "queued", "requests"} - set(found)
            assert not missing, f"its result lacks {sorted(missing)}"

        calls.attempt("poll", lambda: poll(conn, rt, fresh=False, lookback=None), polled)
    if platform.expected is not None:
        listing = platform.expected
        calls.attempt(
            "expected", lambda: listing(conn, rt, today - timedelta(days=30), today), lambda f: _pair(f, Expected, "Expected")
        )
    if platform.payouts is not None:
        deposits = platform.payouts
        calls.attempt(
            "payouts", lambda: deposits(conn, rt, today - timedelta(days=30), today), lambda f: _pair(f, Payout, "Payout")
        )
    if platform.backfill and platform.expected is None:
        calls.problems.append("backfill: it pages the money `expected` lists, which the platform does not declare")
    if platform.missed is not None:
        missed = platform.missed
        since = store.iso(store.utcnow() - timedelta(days=1))
        calls.attempt("missed", lambda: missed(conn, rt, since), lambda f: _pair(f, Missed, "Missed"))
    if platform.refetch is not None:
        refetch = platform.refetch
        calls.attempt("refetch", lambda: refetch(conn, rt, []), lambda f: _is(f, tuple, "its answer"))


def _operations(calls: _Calls, platform: Platform, conn: store.Connection, rt: Runtime) -> None:
    """Its ``doctor`` rows, its webhook registration's status and its admin API routes."""
    if platform.checks is not None:
        checks = platform.checks

        def rows(found: object) -> None:
            assert isinstance(found, list) and all(isinstance(r, tuple) and len(r) == 4 for r in found), (
                "not (check, status, detail, fix) rows"
            )

        calls.attempt("checks", lambda: checks(conn, rt), rows)
    if platform.registration is not None:
        registration, client = platform.registration, platform.client

        def registered() -> list[Check]:
            module = registration()
            assert client is not None, "a webhook registration without a Client: the core passes it the platform's client"
            made = client.factory(rt)
            try:
                return module.status(conn, rt, "https://sync.example.org", made)
            finally:
                made.close()

        calls.attempt("registration", registered, lambda f: _all(f, Check, "Check"))
    if platform.routes is not None:
        calls.attempt("routes", platform.routes, _routes_kept)


def _routes_kept(found: Sequence[ApiRoute]) -> None:
    _all(found, ApiRoute, "ApiRoute")
    for route in found:
        assert route.method in ("GET", "POST", "PUT", "PATCH", "DELETE"), f"route {route.path}: {route.method}"
        assert route.path.startswith("/api/"), f"route {route.path}: not under /api/"
        assert route.role in ("viewer", "admin", "super_admin"), f"route {route.path}: role {route.role!r}"
        assert callable(route.handler), f"route {route.path}: its handler is not callable"


def _records(calls: _Calls, platform: Platform, conn: store.Connection, rt: Runtime) -> None:
    """Its settings read, an event's check-ins, the roles it handles, the tables its migrations make."""
    for setting in platform.settings:
        calls.attempt(
            f"settings.{setting.name}", functools.partial(setting.read, conn), functools.partial(_setting_kept, setting)
        )
    if platform.checkins is not None:
        checkins = platform.checkins
        calls.attempt("checkins", lambda: checkins(conn, rt, "conformance-campaign"), lambda f: _is(f, dict, "its answer"))
    if platform.plans is not None:
        read_plans = platform.plans
        calls.attempt("plans", lambda: read_plans(conn, rt), lambda f: _is(f, dict, "its answer"))
    if platform.plan_charges is not None:
        plan_charges = platform.plan_charges
        calls.attempt("plan_charges", lambda: plan_charges(conn, "conformance-plan"), lambda f: _all(f, Mapping, "mappings"))
    if platform.mappings.campaigns is not None:
        named = platform.mappings.campaigns
        calls.attempt("mappings.campaigns", lambda: named(conn, rt), _names)
    for role in platform.handles:
        if role == "crm":
            calls.problems.append(f"handlers: {role!r} is not another platform's source")
    if platform.migrations is not None:
        made = set(store.dialect.table_names(conn))
        unmade = [t for t in platform.tables if t not in made]
        if unmade:
            calls.problems.append(f"tables: its migrations make no {', '.join(unmade)}")


def _loaded(calls: _Calls, platform: Platform, conn: store.Connection, rt: Runtime) -> None:
    """Its job handlers registered, each command group a Typer app, its fake made, its targets its own."""
    if platform.handlers:
        calls.attempt("handlers", lambda: platforms.registry.register_platform_handlers(platform))
    for name, group in platform.commands.items():
        calls.attempt(f"commands.{name}", group, _typer_app)
    if platform.fake is not None:
        fake = platform.fake
        calls.attempt("fake", lambda: fake.make(fake.key), lambda f: _all(f[1:], CALLABLE, "an ASGI app"))
    names = [t.name for t in platform.targets]
    if "crm" in names or len(set(names)) != len(names):
        calls.problems.append("targets: each is its own, and 'crm' is the core's")


def _typer_app(app: object) -> None:
    import typer

    assert isinstance(app, typer.Typer), "returns no Typer app"
    assert app.registered_commands or app.registered_groups, "the app has no command"


#: ``check_platform``'s steps, in the order it calls the hooks
STEPS: tuple[Step, ...] = (_webhook, _client, _reads, _operations, _records, _loaded)


def _setting_kept(setting: Setting, found: object) -> None:
    from pydantic import BaseModel

    assert isinstance(setting.name, str) and setting.name and setting.help, "a name and a help line"
    model = setting.body()
    assert isinstance(model, type) and issubclass(model, BaseModel), "body() returns no pydantic model"
    assert isinstance(found, Mapping), f"read(conn) returns {type(found).__name__}, not a mapping"


def _is(found: object, kind: type | tuple[type, ...], what: str) -> None:
    assert isinstance(found, kind), f"{what} is {type(found).__name__}"


def _names(found: object) -> None:
    assert isinstance(found, Mapping), f"returns {type(found).__name__}, not a mapping"
    assert all(isinstance(name, str) for name in found.values()), "holds other than names (str)"


def _all(found: object, kind: type | tuple[type, ...], what: str) -> None:
    assert isinstance(found, (list, tuple)), f"returns {type(found).__name__}, not a list"
    assert all(isinstance(item, kind) for item in found), f"holds other than {what}"
