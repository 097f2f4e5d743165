"""``hook_problems(PLATFORM)``: each hook a platform names by reference resolved, and checked against the signature
the contract gives it, before anything calls it (``check_platform`` runs it first)."""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

from synctool.platforms import Client, Fake, Platform, Setting, Webhook, contract
from synctool.platforms.hooks import Hook, Imports, Loaded, Served, load
from synctool.platforms.reconcile import Expected, Payout
from synctool.platforms.registration import Check, RegisterResult
from synctool.platforms.webhook import Adapter, Missed
from synctool.runtime import Runtime

#: the ways a platform names a hook's function by reference (``synctool.platforms.hooks``)
REFERENCES = (Hook, Loaded, Imports, Served)
Reference = Hook | Loaded | Imports | Served
#: a part of the contract whose fields may hold references: the platform, a setting, its webhook, client or fake
Part = Platform | Setting | Webhook | Client | Fake


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


def _references(platform: Platform) -> Iterator[tuple[str, Reference, Any]]:
    """``(where, reference, its field's type)`` for each hook of ``platform`` and of its parts named by reference."""
    parts: list[tuple[str, Part]] = [("", platform), *((f"settings.{s.name}.", s) for s in platform.settings)]
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


def _kept(hook: Reference, hint: Any) -> str | None:
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


def _passed(contract: Callable[..., object], bound: bool) -> tuple[int, tuple[str, ...]]:
    """What the core passes a function written as ``contract``: how many positional arguments, which keywords."""
    params = list(inspect.signature(contract).parameters.values())[1 if bound else 0 :]
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    return positional, tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY)


def _uncallable(function: Callable[..., object], positional: int, keywords: tuple[str, ...] = ()) -> str | None:
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

    names = {"Database": Database, "Expected": Expected, "Payout": Payout, "Check": Check, "RegisterResult": RegisterResult,
             "Adapter": Adapter, "Missed": Missed, "Runtime": Runtime}  # fmt: skip
    return typing.get_type_hints(kind, globalns={**vars(contract), **names})
