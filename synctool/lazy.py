"""A reference to a module or a name in one (``"package.module:name"``), and ``load``, the one place synctool
turns one into what it names: a platform's hooks (``synctool.platforms.hooks``), the registry's built-in platforms,
the CLI's commands and ``synctool.platform``'s names are all loaded here, when first needed."""

from __future__ import annotations

import importlib
from typing import Any


def load(ref: str) -> Any:
    """What ``ref`` names: ``"package.module"`` the module, ``"package.module:name"`` a name in it (or, in a
    package, its submodule ``name``)."""
    module, _, name = ref.partition(":")
    found = importlib.import_module(module)
    if not name:
        return found
    try:
        return getattr(found, name)
    except AttributeError:
        if not hasattr(found, "__path__"):
            raise
        return importlib.import_module(f"{module}.{name}")
