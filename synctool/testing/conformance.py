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
import sqlite3
import tempfile
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from synctool import platforms, store
from synctool.errors import ConfigError, InvalidInput, SynctoolError
from synctool.platforms import Platform
from synctool.platforms.hooks import Hook, Imports, Loaded, Served, load
from synctool.runtime import Runtime

#: the ways a platform names a hook's function by reference (``synctool.platforms.hooks``)
REFERENCES = (Hook, Loaded, Imports, Served)


class Problems(AssertionError):
    """What in a platform does not keep the contract, one line each."""


@contextmanager
def platform_site(platform: Platform, environ: Mapping[str, str] | None = None) -> Iterator[tuple[sqlite3.Connection, Runtime]]:
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
        transports: dict[str, Any] = {}
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


def _pair(found: Any, first: type | tuple[type, ...], what: str) -> None:
    assert isinstance(found, tuple) and len(found) == 2, f"returns {type(found).__name__}, not ({what}, requests)"
    items, spent = found
    assert isinstance(items, list) and all(isinstance(i, first) for i in items), f"its list holds other than {what}"
    assert isinstance(spent, int), "its request count is not an int"


def check_platform(platform: Platform, environ: Mapping[str, str] | None = None) -> list[str]:
    """Call every hook ``platform`` declares as the core does; raise ``Problems`` naming each that does not keep
    the contract. Returns the hooks exercised (``"poll"``, ``"expected"``, ``"settings.<name>"``, ...).

    First each hook named by reference resolved (``hook_problems``); then, in ``platform_site``: ``config()``; the webhook's ``adapter()`` (``KEPT_HEADERS``, ``parse_webhook`` of three
    bad bodies, ``verify_webhook`` of an unsigned one); ``client.factory(rt)`` and ``probe``; ``poll(conn, rt,
    fresh=False, lookback=None)``; ``expected`` and ``payouts`` over the last 30 days; ``missed`` since a day ago;
    ``refetch(conn, rt, [])``; ``checks``; ``registration().status(...)``; ``routes()``; each setting's ``read(conn)``
    and ``body()``; ``checkins(conn, rt, "conformance-campaign")``; ``handlers()``; each command group; ``fake.make``;
    and the tables its migrations make (the table in ``docs/platforms.md``, "Testing", says what each must answer)."""
    from synctool.platforms.reconcile import Expected, Payout
    from synctool.platforms.registration import Check
    from synctool.platforms.webhook import Event, Missed, WebhookSecrets
    from synctool.queue.handlers import ANY_SOURCE, HANDLERS

    problems: list[str] = hook_problems(platform)
    exercised: list[str] = []

    def attempt(name: str, call: Callable[[], Any], check: Callable[[Any], None] = lambda _: None) -> None:
        exercised.append(name)
        try:
            found = call()
        except SynctoolError:
            return  # a named refusal (no fake to reach, no credentials) is within the contract
        except AssertionError as exc:
            problems.append(f"{name}: {exc}")
            return
        except TypeError as exc:
            problems.append(f"{name}: not callable as the core calls it ({exc})")
            return
        except Exception as exc:  # noqa: BLE001 -- any other exception is what this check exists to report
            problems.append(f"{name}: raised {type(exc).__name__}: {exc}")
            return
        try:
            check(found)
        except AssertionError as exc:
            problems.append(f"{name}: {exc}")

    if not platform.name or not platform.role or platform.role == "crm":
        problems.append("name and role: both are needed, and the role 'crm' is the core's")
    section = platform.config
    if section is not None:
        attempt("config", lambda: section())  # a section that validates with no key set
    with platform_site(platform, environ) as (conn, rt):
        today = date.today()
        if platform.webhook is not None:
            hook = platform.webhook
            if hook.role != platform.role:
                problems.append("webhook: its role is not the platform's")

            def adapter_keeps_the_contract(adapter: Any) -> None:
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

            attempt("webhook.adapter", hook.adapter, adapter_keeps_the_contract)
        client = platform.client
        if client is not None:

            def connect() -> str:
                made = client.factory(rt)
                try:
                    return client.probe(made) if client.probe else ""
                finally:
                    made.close()

            attempt("client", connect, lambda said: _is(said, str, "probe's answer"))
        if platform.poll is not None:
            poll = platform.poll

            def polled(found: Any) -> None:
                assert isinstance(found, dict), "returns no dict"
                missing = {"since", "seen", "queued", "requests"} - set(found)
                assert not missing, f"its result lacks {sorted(missing)}"

            attempt("poll", lambda: poll(conn, rt, fresh=False, lookback=None), polled)
        if platform.expected is not None:
            listing = platform.expected
            attempt(
                "expected", lambda: listing(conn, rt, today - timedelta(days=30), today), lambda f: _pair(f, Expected, "Expected")
            )
        if platform.payouts is not None:
            deposits = platform.payouts
            attempt(
                "payouts", lambda: deposits(conn, rt, today - timedelta(days=30), today), lambda f: _pair(f, Payout, "Payout")
            )
        if platform.backfill and platform.expected is None:
            problems.append("backfill: it pages the money `expected` lists, which the platform does not declare")
        if platform.missed is not None:
            missed = platform.missed
            since = store.iso(store.utcnow() - timedelta(days=1))
            attempt("missed", lambda: missed(conn, rt, since), lambda f: _pair(f, Missed, "Missed"))
        if platform.refetch is not None:
            refetch = platform.refetch
            attempt("refetch", lambda: refetch(conn, rt, []), lambda f: _is(f, tuple, "its answer"))
        if platform.checks is not None:
            checks = platform.checks

            def rows(found: Any) -> None:
                assert isinstance(found, list) and all(isinstance(r, tuple) and len(r) == 4 for r in found), (
                    "not (check, status, detail, fix) rows"
                )

            attempt("checks", lambda: checks(conn, rt), rows)
        if platform.registration is not None:
            registration = platform.registration

            def registered() -> list[Any]:
                module = registration()
                made = client.factory(rt) if client is not None else None
                try:
                    return module.status(conn, rt, "https://sync.example.org", made)
                finally:
                    if made is not None:
                        made.close()

            attempt("registration", registered, lambda f: _all(f, Check, "Check"))
        if platform.routes is not None:
            routes = platform.routes

            def table(found: Any) -> None:
                from synctool.platforms import ApiRoute

                _all(found, ApiRoute, "ApiRoute")
                for route in found:
                    assert route.method in ("GET", "POST", "PUT", "PATCH", "DELETE"), f"route {route.path}: {route.method}"
                    assert route.path.startswith("/api/"), f"route {route.path}: not under /api/"
                    assert route.role in ("viewer", "admin", "super_admin"), f"route {route.path}: role {route.role!r}"
                    assert callable(route.handler), f"route {route.path}: its handler is not callable"

            attempt("routes", routes, table)
        for setting in platform.settings:
            attempt(f"settings.{setting.name}", functools.partial(setting.read, conn), functools.partial(_setting_kept, setting))
        if platform.checkins is not None:
            checkins = platform.checkins
            attempt("checkins", lambda: checkins(conn, rt, "conformance-campaign"), lambda f: _is(f, dict, "its answer"))
        for role in platform.handles:
            if not isinstance(role, str) or role in ("crm", platform.role):
                problems.append(f"handles: {role!r} is not another platform's source")
        if platform.migrations is not None:
            made = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            unmade = [t for t in platform.tables if t not in made]
            if unmade:
                problems.append(f"tables: its migrations make no {', '.join(unmade)}")
        if platform.handlers is not None:
            handlers = platform.handlers

            def handles(_: Any) -> None:
                assert any(source in (platform.role, ANY_SOURCE, *platform.handles) for source, _ in HANDLERS), (
                    "registers no job handler"
                )

            attempt("handlers", handlers, handles)
        for name, group in platform.commands.items():

            def typer_app(app: Any) -> None:
                import typer

                assert isinstance(app, typer.Typer), "returns no Typer app"
                assert app.registered_commands or app.registered_groups, "the app has no command"

            attempt(f"commands.{name}", group, typer_app)
        if platform.fake is not None:
            fake = platform.fake
            attempt("fake", lambda: fake.make(fake.key), lambda f: _all(f[1:], Callable, "an ASGI app"))
        names = [t.name for t in platform.targets]
        if "crm" in names or len(set(names)) != len(names):
            problems.append("targets: each is its own, and 'crm' is the core's")
    if problems:
        raise Problems(f"{platform.name} does not keep the platform contract:\n- " + "\n- ".join(problems))
    return exercised


def _setting_kept(setting: Any, found: Any) -> None:
    from pydantic import BaseModel

    assert isinstance(setting.name, str) and setting.name and setting.help, "a name and a help line"
    model = setting.body()
    assert isinstance(model, type) and issubclass(model, BaseModel), "body() returns no pydantic model"
    assert isinstance(found, Mapping), f"read(conn) returns {type(found).__name__}, not a mapping"


def _is(found: Any, kind: Any, what: str) -> None:
    assert isinstance(found, kind), f"{what} is {type(found).__name__}"


def _all(found: Any, kind: Any, what: str) -> None:
    assert isinstance(found, (list, tuple)), f"returns {type(found).__name__}, not a list"
    assert all(isinstance(item, kind) for item in found), f"holds other than {what}"


def hook_problems(platform: Platform) -> list[str]:
    """Each hook ``platform`` names by reference (``synctool.platforms.hooks``) resolved, and the function it names
    callable with what the core passes it: the contract's types (``synctool.platforms.contract``), which
    ``docs/platforms.md`` gives field by field. A reference that names nothing, or a function written with other
    parameters, is found before anything calls it; a hook written as a plain function is left to the calls of
    ``check_platform``."""
    problems = []
    for where, hook, hint in _references(platform):
        try:
            wrong = _kept(hook, hint)
        except (ImportError, AttributeError) as exc:
            wrong = f"{hook} does not resolve ({type(exc).__name__}: {exc})"
        if wrong:
            problems.append(f"{where}: {wrong}")
    return problems


def _references(platform: Platform) -> Iterator[tuple[str, Any, Any]]:
    """``(where, reference, its field's type)`` for each hook of ``platform`` and of its parts named by reference."""
    parts: list[tuple[str, Any]] = [("", platform), *((f"settings.{s.name}.", s) for s in platform.settings)]
    parts += [(f"{name}.", part) for name in ("webhook", "client", "fake") if (part := getattr(platform, name)) is not None]
    for prefix, part in parts:
        hints = _contract_hints(type(part))
        for f in dataclasses.fields(part):
            value, hint = getattr(part, f.name), _unwrap(hints[f.name])
            if f.name == "commands":
                for name, group in value.items():
                    if isinstance(group, REFERENCES):
                        yield f"commands.{name}", group, typing.get_args(hint)[1]
            elif isinstance(value, REFERENCES):
                yield prefix + f.name, value, hint


def _kept(hook: Any, hint: Any) -> str | None:
    """What keeps ``hook`` from being the hook ``hint`` types, or None."""
    if isinstance(hook, Imports):
        for ref in hook.refs:
            load(ref)
        return None
    if isinstance(hook, Served):
        state, app = load(hook.ref), load(hook.ref.partition(":")[0] + ":create_app")
        return _uncallable(state, 1) or _uncallable(app, 1)
    target = load(hook.ref)
    if isinstance(hook, Loaded):  # a module (or a value) whose members a protocol may name
        answer: Any = typing.get_args(hint)[1] if typing.get_origin(hint) is Callable else None
        if not getattr(answer, "_is_protocol", False):
            return None
        for name, member in vars(answer).items():
            if name.startswith("_"):
                continue
            if not hasattr(target, name):
                return f"{hook.ref} has no {name} ({answer.__name__} names it)"
            if inspect.isfunction(member):
                wrong = _uncallable(getattr(target, name), *_passed(member, bound=True))
                if wrong:
                    return wrong
        return None
    if getattr(hint, "_is_protocol", False):
        return _uncallable(target, *_passed(hint.__call__, bound=True))
    args = typing.get_args(hint)[0] if typing.get_origin(hint) is Callable else ...
    return None if args is ... else _uncallable(target, len(args))


def _passed(contract: Any, bound: bool) -> tuple[int, tuple[str, ...]]:
    """What the core passes a function written as ``contract``: how many positional arguments, which keywords."""
    params = list(inspect.signature(contract).parameters.values())[1 if bound else 0 :]
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    return positional, tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY)


def _uncallable(function: Any, positional: int, keywords: tuple[str, ...] = ()) -> str | None:
    """Why ``function`` cannot take ``positional`` arguments and, each optional, ``keywords``; None when it can."""
    signature = inspect.signature(function)
    try:
        signature.bind(*range(positional))
        signature.bind(*range(positional), **dict.fromkeys(keywords))
    except TypeError as exc:
        wanted = ", ".join([f"{positional} argument(s)", *(f"{k}=" for k in keywords)])
        return f"{getattr(function, '__qualname__', function)}{signature} is not callable with {wanted} ({exc})"
    return None


def _unwrap(hint: Any) -> Any:
    """``X | None`` as ``X``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        kept = [a for a in typing.get_args(hint) if a is not type(None)]
        return kept[0] if len(kept) == 1 else hint
    return hint


def _contract_hints(kind: type) -> dict[str, Any]:
    """The field types of a part of the contract, resolved (it names some types for type checkers only)."""
    from sqlite_utils import Database

    from synctool.platforms import contract
    from synctool.platforms.reconcile import Expected, Payout
    from synctool.platforms.registration import Check, Outcome
    from synctool.platforms.webhook import Adapter, Missed

    names = {"Database": Database, "Expected": Expected, "Payout": Payout, "Check": Check, "Outcome": Outcome,
             "Adapter": Adapter, "Missed": Missed, "Runtime": Runtime}  # fmt: skip
    return typing.get_type_hints(kind, globalns={**vars(contract), **names})
