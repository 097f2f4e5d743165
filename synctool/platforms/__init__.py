"""The outside systems synctool syncs with, one package each: the contract each keeps and the registry that loads them.

Each package (``givebutter``, ``square``, ...) holds everything about its system: payload models and webhook
verification (``webhook.py``), the API client (``client.py``), the sync rules (``rules.py``), operations
(``ops.py``), CLI commands (``commands.py``, imported by the CLI only) and its fake (``fake.py``). Its
``__init__.py`` exports one typed ``PLATFORM``. Three modules here say what that means:

- ``contract.py``: ``Platform`` and its parts, each hook a typed field (``docs/platforms.md``);
- ``hooks.py``: how a platform names the function behind a hook (``Hook("package.module:function")``), imported
  when first called, so a cron run that needs none of a platform's hooks pays for none of them;
- ``registry.py``: which platforms are registered (the built-ins of ``DEFAULT_PLATFORMS``, then the entry point
  group ``synctool.platforms``, as llm loads its plugins), in what order, and which this organisation uses.

This module re-exports the names the core uses: ``from synctool.platforms import Platform, Hook`` and
``platforms.registered()``. A platform package imports from ``synctool.platform`` instead (every name it needs).
"""

from synctool.platforms.contract import ApiRoute, Client, Fake, Mappings, Platform, Setting, Webhook
from synctool.platforms.hooks import Hook, Loaded, Served
from synctool.platforms.registry import (
    DEFAULT_PLATFORMS,
    adapter,
    chosen,
    claim_of,
    claimants,
    clients,
    crm_bound,
    drained_targets,
    fakes,
    in_use,
    listing,
    open_client,
    register,
    register_handlers,
    registered,
    running,
    runs_jobs_of,
    secret_names,
    settings,
    sources,
    targets,
    turn_on,
    unregister,
    using,
    webhook_secrets,
    webhooks,
)

__all__ = [
    "DEFAULT_PLATFORMS",
    "ApiRoute",
    "Client",
    "Fake",
    "Hook",
    "Loaded",
    "Mappings",
    "Platform",
    "Served",
    "Setting",
    "Webhook",
    "adapter",
    "chosen",
    "claim_of",
    "claimants",
    "clients",
    "crm_bound",
    "drained_targets",
    "fakes",
    "in_use",
    "listing",
    "open_client",
    "register",
    "register_handlers",
    "registered",
    "running",
    "runs_jobs_of",
    "secret_names",
    "settings",
    "sources",
    "targets",
    "turn_on",
    "unregister",
    "using",
    "webhook_secrets",
    "webhooks",
]
