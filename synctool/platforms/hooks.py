"""A hook named by where its function lives, imported the first time it is called.

A platform declares each hook as a reference to its implementation (``Hook("synctool_kinddesk.poll:poll")``), as
llm's plugins name theirs: a command that needs none of a platform's hooks imports none of its modules, and no
platform writes an "import, then call" function per hook. ``load`` (``synctool.lazy``) is the one place a
reference becomes what it names; the contract's field types (``synctool.platforms.contract``) type every call, and
``synctool.testing.hook_problems`` resolves each reference of a platform against them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic

from typing_extensions import ParamSpec, TypeVar

from synctool.lazy import load

P = ParamSpec("P", default=...)
R = TypeVar("R", default=Any)


@dataclass(frozen=True)
class Hook(Generic[P, R]):
    """A function (``"package.module:function"``), imported when the hook is first called, then called with what
    the hook is given: ``poll=Hook("synctool_kinddesk.poll:poll")``."""

    ref: str

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return load(self.ref)(*args, **kwargs)


@dataclass(frozen=True)
class Loaded(Generic[R]):
    """What a hook with no parameters answers, imported when it is first asked for: a module (``"package.module"``:
    ``Webhook.adapter``, ``registration``) or a name in one (``"package.commands:app"``, ``"package.tables:MIGRATIONS"``)."""

    ref: str

    def __call__(self) -> R:
        return load(self.ref)


@dataclass(frozen=True)
class Served:
    """``Fake.make``: ``"package.fake:State"``, built with the key, and the app its module's ``create_app(state)``
    serves it with."""

    ref: str

    def __call__(self, key: str) -> tuple[Any, Any]:
        state = load(self.ref)(key)
        return state, load(self.ref.partition(":")[0] + ":create_app")(state)
