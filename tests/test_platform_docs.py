"""docs/platforms.md is the contract a stranger writes a platform package from, with nothing else to read: every
field of ``Platform`` is documented there with its signature (as datasette's tests hold its plugin hooks to its
documentation), and every name the page imports, or names by its dotted path, exists where the page says."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from types import NoneType, UnionType
from typing import Any

import pytest

from synctool.platforms import Platform, contract

DOC = Path(__file__).resolve().parents[1] / "docs" / "platforms.md"
TEXT = DOC.read_text(encoding="utf-8")
#: ``### `poll`: `(conn, rt, *, fresh=False, lookback=None) -> dict` ``: one heading per field
HEADING = re.compile(r"^### `(\w+)`: `(.+)`$", re.M)
DOCUMENTED = dict(HEADING.findall(TEXT))
FIELDS = [f.name for f in dataclasses.fields(Platform)]
#: dotted names the page writes that are not import paths
NOT_IMPORTED = {"synctool.payload": "a logger's name"}


def hints() -> dict[str, Any]:
    """The fields' types, resolved (the contract names some types for type checkers only)."""
    from sqlite_utils import Database

    from synctool import store
    from synctool.config import Config
    from synctool.platforms.reconcile import Expected, Payout
    from synctool.platforms.registration import Check, RegisterResult
    from synctool.platforms.webhook import Adapter, Event, Missed
    from synctool.queue.handlers import RunningJob as Job
    from synctool.queue.jobs import Outcome
    from synctool.runtime import Runtime

    found = {"Database": Database, "Config": Config, "Expected": Expected, "Payout": Payout,
             "Check": Check, "RegisterResult": RegisterResult, "Adapter": Adapter, "Missed": Missed, "Runtime": Runtime, "Event": Event, "Job": Job,
             "Outcome": Outcome, "store": store}  # fmt: skip
    return typing.get_type_hints(Platform, globalns={**vars(contract), **found})


def parameters(signature: str) -> list[str]:
    """The parameters of ``(a, b, *, c=1) -> x`` or ``Name(a, b=1)``: the text between the first ``(`` and its
    match, split at the commas of that level."""
    start = signature.index("(") + 1
    depth, part, found = 0, "", []
    for char in signature[start:]:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                break
            depth -= 1
        if char == "," and depth == 0:
            found.append(part.strip())
            part = ""
            continue
        part += char
    if part.strip():
        found.append(part.strip())
    return found


def unwrap(hint: Any) -> Any:
    """``X | None`` as ``X``."""
    if typing.get_origin(hint) in (typing.Union, UnionType):
        kept = [a for a in typing.get_args(hint) if a is not NoneType]
        assert len(kept) == 1, hint
        return kept[0]
    return hint


def constructor(kind: type, signature: str) -> list[str]:
    """What is wrong with ``Kind(a, b=...)`` as the signature of the dataclass ``kind``: each field in order, a
    default shown exactly where the field has one."""
    wrong = []
    if not signature.lstrip("(").startswith(f"{kind.__name__}("):
        wrong.append(f"not written as {kind.__name__}(...)")
        return wrong
    written = [p for p in parameters(signature[signature.index(f"{kind.__name__}(") :]) if p != "*"]  # (keywords only)
    fields = [f for f in dataclasses.fields(kind) if f.init]  # (what a part takes from its platform is not written)
    names = [p.split("=")[0] for p in written]
    if names != [f.name for f in fields]:
        wrong.append(f"its parameters are {names}, {kind.__name__}'s fields {[f.name for f in fields]}")
    for p, f in zip(written, fields, strict=False):
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if ("=" in p) != has_default:
            wrong.append(f"{f.name}: a default written {'without' if has_default else 'with'} one in the dataclass")
    return wrong


def problems(name: str, hint: Any, signature: str) -> list[str]:
    """What is wrong with ``signature`` as the documented signature of a field of type ``hint``."""
    hint = unwrap(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and getattr(hint, "_is_protocol", False) and "__call__" in vars(hint):
        wanted = list(inspect.signature(hint.__call__).parameters.values())[1:]
        written = parameters(signature)
        expected = []
        for p in wanted:
            if p.kind is inspect.Parameter.KEYWORD_ONLY and "*" not in expected:
                expected.append("*")
            expected.append(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}")
        return (
            []
            if written == expected and "->" in signature
            else [f"written ({', '.join(written)}), the hook is ({', '.join(expected)})"]
        )
    if origin is Callable:
        count = len(args[0]) if isinstance(args[0], list) else None
        written = parameters(signature) if signature.startswith("(") else None
        if written is None or "->" not in signature:
            return ["not written as (parameters) -> result"]
        if count is not None and len(written) != count:
            return [f"{len(written)} parameter(s) written, the hook takes {count}"]
        return []
    if dataclasses.is_dataclass(hint):
        return constructor(hint, signature)
    if origin is tuple:
        item = args[0]
        if not (signature.startswith("(") and signature.endswith(")")):
            return ["a tuple, not written as (...)"]
        if dataclasses.is_dataclass(item):
            return constructor(item, signature)
        return [] if '"' in signature else ["a tuple of names, written without an example"]
    if origin in (Mapping, dict):
        if not (signature.startswith("{") and signature.endswith("}")):
            return ["a mapping, not written as {...}"]
        value = args[1]
        if typing.get_origin(value) is Callable and not re.search(r"\(.*\) ->", signature):
            return ["a mapping to functions, its values not written as (...) -> ..."]
        return []
    if origin is type:
        return [] if signature.startswith("type[") else ["a class, not written as type[...]"]
    if hint in (str, bool, int):
        return [] if signature == hint.__name__ else [f"a {hint.__name__}, written {signature!r}"]
    return [f"no rule for a field of type {hint!r}: add one to this test"]


def test_every_field_of_platform_is_documented_and_nothing_else_is():
    assert sorted(set(FIELDS) - set(DOCUMENTED)) == [], "undocumented fields of Platform"
    assert sorted(set(DOCUMENTED) - set(FIELDS)) == [], "documented fields Platform does not have"


@pytest.mark.parametrize("name", FIELDS)
def test_each_field_is_documented_with_its_signature(name):
    signature = DOCUMENTED.get(name)
    assert signature is not None, f"docs/platforms.md has no heading ### `{name}`: `signature`"
    assert problems(name, hints()[name], signature) == []
    body = TEXT.split(f"### `{name}`: `{signature}`", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    assert len(body.strip()) > 20, f"{name}: its heading says nothing under it"


def imports() -> list[tuple[str, str]]:
    """``(module, name)`` for each name the page's code imports from synctool."""
    found = []
    for block in re.findall(r"```python\n(.*?)```", TEXT, re.S):
        for line in block.splitlines():
            matched = re.match(r"from (synctool[\w.]*) import ([\w, ]+?)\s*(#.*)?$", line)
            if matched:
                found += [(matched[1], n.split(" as ")[0].strip()) for n in matched[2].split(",")]
    return found


def test_the_page_names_where_each_name_it_uses_comes_from():
    found = imports()
    named = {name for _, name in found}
    wanted = {"Event", "JobSpec", "WebhookSecrets", "Outcome", "Person", "Job", "Expected", "Runtime", "Skip",
              "PermanentError", "refunds", "gift_date", "watermark", "mappings", "check_platform", "deliver"}  # fmt: skip
    assert wanted - named == set()
    missing = []
    for module, name in found:
        imported = importlib.import_module(module)
        if not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"from {module} import {name}")
    assert missing == []


def test_each_dotted_name_on_the_page_exists():
    missing = []
    for dotted in sorted(set(re.findall(r"`(synctool(?:\.[A-Za-z_]\w*)+)", TEXT)) - set(NOT_IMPORTED)):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                found: Any = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for attribute in parts[cut:]:
                    found = getattr(found, attribute)
            except AttributeError:
                missing.append(dotted)
            break
        else:
            missing.append(dotted)
    assert missing == []
