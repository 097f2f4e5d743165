"""One adapter module per outside system, and the registry from a webhook role to its adapter.

``inbox`` (verify and parse a delivery), ``ops`` (inject) and the drain's ``JobContext.delivery()`` (decode a
stored body) all find a role's adapter here. Adapters are imported when first asked for, so a command that
only talks to the CRM does not load the webhook models.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from synctool.errors import one_of

if TYPE_CHECKING:
    from synctool.platforms.webhooks import Adapter

#: webhook role -> adapter module under ``synctool.platforms``
ADAPTERS = {"donations": "givebutter", "pos": "square", "mailing": "mailchimp", "payments": "stripe",
            "portal": "portal"}
SOURCES = tuple(ADAPTERS)


def adapter(source: str) -> "Adapter":
    """The adapter for a webhook role; InvalidInput for an unknown one."""
    one_of(source, SOURCES, "source")
    return importlib.import_module(f"synctool.platforms.{ADAPTERS[source]}")  # type: ignore[return-value]
