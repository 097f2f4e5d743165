"""``hook_problems(PLATFORM)``: each hook a platform names by reference resolved, and the function it names checked
against the types the contract gives the hook, before anything calls it (``check_platform`` runs it first).

mypy checks the core's calls against the contract's field types, and a hook written as a plain function against
them too; it cannot see through a reference (``Hook("package.module:function")`` is a string until it is loaded).
This closes that gap: the function a reference names has each parameter and its return annotated, and each
annotation, evaluated (``typing.get_type_hints``), fits the contract's:

- a parameter's type is the contract's, a class above it (what the core passes is one), or a class below it (the
  platform's own: its client where the contract says ``PlatformClient``, its setting's body model where it says
  ``Body``); ``Any`` fits anything, as it does for mypy;
- the return type is the contract's or a class below it (``dict`` where the contract says ``Mapping``), with each
  type argument fitting the same way;
- keyword-only parameters (``poll``'s ``fresh`` and ``lookback``) by name.

So ``poll(conn, rt, *, fresh=False, lookback: int | None = None)`` or an ``expected`` that returns a list without the
requests it spent are both named here, without being called."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import types
import typing
from collections.abc import Callable, Iterator
from typing import Any

from synctool.lazy import load
from synctool.platforms import Client, Fake, Platform, Setting, Webhook, contract
from synctool.platforms.hooks import Hook, Loaded, Served
from synctool.platforms.reconcile import Expected, Payout
from synctool.platforms.registration import Check, RegisterResult
from synctool.platforms.webhook import Adapter, Missed
from synctool.runtime import Runtime

#: the ways a platform names a hook's function by reference (``synctool.platforms.hooks``)
REFERENCES = (Hook, Loaded, Served)
Reference = Hook | Loaded | Served
#: a part of the contract whose fields may hold references: the platform, a setting, its webhook, client or fake
Part = Platform | Setting | Webhook | Client | Fake
#: a parameter as the contract gives it: its name (None: positional, unnamed), whether keyword-only, its type
Wanted = tuple[str | None, bool, object]


def hook_problems(platform: Platform) -> list[str]:
    """Each hook ``platform`` names by reference (``synctool.platforms.hooks``) resolved, and the function it names
    typed as the contract's field says (``synctool.platforms.contract``, which ``docs/platforms.md`` gives field by
    field): a reference that names nothing, or a function with other parameters, other parameter types or another
    return type, is found before anything calls it; a hook written as a plain function is left to mypy and to the
    calls of ``check_platform``."""
    problems = []
    for where, hook, hint in _references(platform):
        try:
            wrong = _kept(hook, hint)
        except (ImportError, AttributeError) as exc:
            wrong = f"{hook} does not resolve ({type(exc).__name__}: {exc})"
        if wrong:
            problems.append(f"{where}: {wrong}")
    return problems


def _references(platform: Platform) -> Iterator[tuple[str, Reference, object]]:
    """``(where, reference, its field's type)`` for each hook of ``platform`` and of its parts named by reference."""
    parts: list[tuple[str, Part]] = [("", platform), *((f"settings.{s.name}.", s) for s in platform.settings)]
    parts += [
        (f"{name}.", part) for name in ("webhook", "client", "fake", "mappings") if (part := getattr(platform, name)) is not None
    ]
    for prefix, part in parts:
        hints = _contract_hints(type(part))
        for f in dataclasses.fields(part):
            value, hint = getattr(part, f.name), _unwrap(hints[f.name])
            if f.name in ("commands", "handlers"):
                for name, group in value.items():
                    if isinstance(group, REFERENCES):
                        yield f"{f.name}.{name}", group, typing.get_args(hint)[1]
            elif isinstance(value, REFERENCES):
                yield prefix + f.name, value, hint


def _kept(hook: Reference, hint: object) -> str | None:
    """What keeps ``hook`` from being the hook ``hint`` types, or None."""
    if isinstance(hook, Served):
        state, app = load(hook.ref), load(hook.ref.partition(":")[0] + ":create_app")
        return _function_problem(state, [(None, False, str)], object) or _function_problem(app, [(None, False, Any)], Any)
    target = load(hook.ref)
    if isinstance(hook, Loaded):  # a module (or a value) whose members a protocol may name
        answer: object = typing.get_args(hint)[1] if typing.get_origin(hint) is Callable else None
        if isinstance(answer, type) and getattr(answer, "_is_protocol", False):
            return _module_problem(hook.ref, target, answer)
        if typing.get_origin(answer) is type:
            model = typing.get_args(answer)[0]
            ok = isinstance(target, type) and issubclass(target, model)
            return None if ok else f"{hook.ref} is not a subclass of {_name(model)}"
        return None
    if isinstance(hint, type) and getattr(hint, "_is_protocol", False):
        return _function_problem(target, *_protocol_method(hint, "__call__"))
    if typing.get_origin(hint) is Callable:
        params, returns = typing.get_args(hint)
        return _function_problem(target, [(None, False, p) for p in params], returns)
    return None


def _module_problem(ref: str, module: object, protocol: type) -> str | None:
    """What keeps ``module`` from having each function ``protocol`` names, with its types."""
    for name, member in vars(protocol).items():
        if name.startswith("_") or not inspect.isfunction(member):
            continue
        if not hasattr(module, name):
            return f"{ref} has no {name} ({protocol.__name__} names it)"
        wrong = _function_problem(getattr(module, name), *_protocol_method(protocol, name))
        if wrong:
            return wrong
    return None


def _protocol_method(protocol: type, name: str) -> tuple[list[Wanted], object]:
    """The parameters (after ``self``) and return type of ``protocol.name``, evaluated."""
    method = getattr(protocol, name)
    hints = typing.get_type_hints(method, globalns={**_names_for(method), **_contract_names()})
    params = list(inspect.signature(method).parameters.values())[1:]
    wanted = [(p.name if p.kind is p.KEYWORD_ONLY else None, p.kind is p.KEYWORD_ONLY, hints[p.name]) for p in params]
    return wanted, hints["return"]


def _function_problem(function: Callable[..., object], wanted: list[Wanted], returns: object) -> str | None:
    """Why ``function`` is not a function of these parameters and this return type; None when it is one."""
    shown = f"{getattr(function, '__module__', '?')}:{getattr(function, '__qualname__', function)}"
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        return f"{shown} has no signature ({exc})"
    positional = [w for w in wanted if not w[1]]
    keywords = [w for w in wanted if w[1]]
    try:
        signature.bind(*range(len(positional)))
        signature.bind(*range(len(positional)), **{str(k[0]): None for k in keywords})
    except TypeError as exc:
        counted = ", ".join([f"{len(positional)} argument(s)", *(f"{k[0]}=" for k in keywords)])
        return f"{shown}{signature} is not callable with {counted} ({exc})"
    if isinstance(function, type):  # a class: called for an instance of itself
        return None if _fits(function, returns) else f"{shown} makes a {_name(function)}, the hook answers {_name(returns)}"
    try:
        hints = typing.get_type_hints(function, globalns=_names_for(function))
    except Exception as exc:  # noqa: BLE001 (an annotation that does not evaluate, whatever it raises)
        return f"{shown}: its annotations do not evaluate ({type(exc).__name__}: {exc})"
    params = list(signature.parameters.values())
    given = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    wrong = []
    for i, (_, _, kind) in enumerate(positional):
        param = given[i] if i < len(given) else None
        if param is None:  # taken by *args
            continue
        wrong += _param_problem(param.name, hints, kind)
    for name, _, kind in keywords:
        if name in signature.parameters:
            wrong += _param_problem(str(name), hints, kind)
    if "return" not in hints:
        wrong.append(f"its return is not annotated (the hook answers {_name(returns)})")
    elif not _fits(hints["return"], returns):
        wrong.append(f"it returns {_name(hints['return'])}, the hook answers {_name(returns)}")
    return f"{shown}{signature}: " + "; ".join(wrong) if wrong else None


def _param_problem(name: str, hints: dict[str, object], wanted: object) -> list[str]:
    if name not in hints:
        return [f"{name} is not annotated (the core passes {_name(wanted)})"]
    found = hints[name]
    if _fits(wanted, found) or _fits(found, wanted):
        return []
    return [f"{name} is {_name(found)}, the core passes {_name(wanted)}"]


def _fits(found: object, wanted: object) -> bool:
    """Whether a value of type ``found`` is one of type ``wanted`` (``Any`` fits both ways; type arguments fit the
    same way, not invariantly: the test names the wrong type, it does not replace mypy)."""
    if found is Any or wanted is Any or wanted is object or isinstance(found, typing.TypeVar):
        return True
    if isinstance(wanted, typing.TypeVar):
        return True
    if _is_union(found):
        return all(_fits(f, wanted) for f in typing.get_args(found))
    if _is_union(wanted):
        return any(_fits(found, w) for w in typing.get_args(wanted))
    if found is None or found is type(None) or wanted is None or wanted is type(None):
        return found in (None, type(None)) and wanted in (None, type(None))
    if typing.get_origin(found) is typing.Literal or typing.get_origin(wanted) is typing.Literal:
        if typing.get_origin(wanted) is typing.Literal:
            return typing.get_origin(found) is typing.Literal and set(typing.get_args(found)) <= set(typing.get_args(wanted))
        return all(_fits(type(v), wanted) for v in typing.get_args(found))
    found_class, wanted_class = typing.get_origin(found) or found, typing.get_origin(wanted) or wanted
    supertype = getattr(found_class, "__supertype__", None)
    if supertype is not None:  # a NewType
        return _fits(supertype, wanted)
    if not (isinstance(found_class, type) and isinstance(wanted_class, type)):
        return bool(found == wanted)
    if not _subclass(found_class, wanted_class):
        return False
    found_args, wanted_args = typing.get_args(found), typing.get_args(wanted)
    if not found_args or not wanted_args:
        return True
    if wanted_class is Callable or found_class is Callable:  # (parameters, return): the return is what tells
        return _fits(found_args[-1], wanted_args[-1])
    if ... in found_args or ... in wanted_args:  # tuple[X, ...]
        return all(_fits(f, w) for f in found_args if f is not ... for w in wanted_args if w is not ...)
    if found_class is not wanted_class and len(found_args) != len(wanted_args):
        return True  # a subclass with type arguments of its own
    return len(found_args) == len(wanted_args) and all(map(_fits, found_args, wanted_args))


def _subclass(found: type, wanted: type) -> bool:
    try:
        return issubclass(found, wanted)
    except TypeError:  # a protocol that is not runtime-checkable: its methods, by name
        names = [n for n, m in vars(wanted).items() if not n.startswith("_") and callable(m)]
        return all(hasattr(found, n) for n in names)


def _is_union(hint: object) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _name(hint: object) -> str:
    return hint.__name__ if isinstance(hint, type) and not typing.get_args(hint) else str(hint).replace("typing.", "")


def _unwrap(hint: object) -> object:
    """``X | None`` as ``X``."""
    if _is_union(hint):
        kept = [a for a in typing.get_args(hint) if a is not type(None)]
        return kept[0] if len(kept) == 1 else hint
    return hint


def _contract_names() -> dict[str, object]:
    """The names the contract's annotations use, some imported for type checkers only."""
    from sqlite_utils import Database

    from synctool import store
    from synctool.config import Config
    from synctool.platforms.webhook import Event
    from synctool.queue.handlers import RunningJob as Job
    from synctool.queue.jobs import Outcome

    names = {"Database": Database, "Expected": Expected, "Payout": Payout, "Check": Check, "RegisterResult": RegisterResult,
             "Adapter": Adapter, "Missed": Missed, "Runtime": Runtime, "Config": Config, "Event": Event, "Job": Job,
             "Outcome": Outcome, "store": store}  # fmt: skip
    return {**vars(contract), **names}


def _names_for(function: Callable[..., object]) -> dict[str, object]:
    """What a function's annotations may name: its module's globals and what the module imports for type checkers
    only (``if TYPE_CHECKING:``, imported here), over every name ``synctool.platform`` gives."""
    import synctool.platform

    given = {name: getattr(synctool.platform, name) for name in synctool.platform.__all__}
    module = sys.modules.get(getattr(function, "__module__", ""))
    return {**given, **_checked_only(module), **getattr(function, "__globals__", {})}


def _checked_only(module: types.ModuleType | None) -> dict[str, object]:
    """The names ``module`` imports under ``if TYPE_CHECKING:``, imported as the module would (a relative import
    from its own package); an import that only type checkers can make (a stub-only package) is left out, and an
    annotation naming it is then said not to evaluate."""
    try:
        tree = ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError):
        return {}
    names: dict[str, object] = {"__name__": getattr(module, "__name__", ""), "__package__": getattr(module, "__package__", "")}
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for statement in (n for n in node.body if isinstance(n, ast.Import | ast.ImportFrom)):
                code = compile(ast.Module(body=[statement], type_ignores=[]), str(getattr(module, "__file__", "?")), "exec")
                try:
                    exec(code, names)  # noqa: S102
                except ImportError:
                    continue
    for kept in ("__builtins__", "__name__", "__package__"):
        names.pop(kept, None)
    return names


def _contract_hints(kind: type) -> dict[str, object]:
    """The field types of a part of the contract, resolved (it names some types for type checkers only)."""
    return typing.get_type_hints(kind, globalns=_contract_names())
