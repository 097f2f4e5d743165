"""Which CRM to talk to, and the client for it: one key and base URL per environment.

The environment is the operator setting, else ``CRM_ENVIRONMENT``, else ``crm.environment`` in config.
The base URL is the setting for that environment, else ``CRM_API_BASE_URL`` / config. The key is keyring's
``CRM_API_KEY`` (production) or ``CRM_SANDBOX_API_KEY`` (sandbox), else the ``CRM_API_KEY`` variable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from synctool import settings
from synctool.crm.pacer import Limits, Pacer
from synctool.errors import ConfigError
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool import store


@dataclass
class CrmTarget:
    environment: str
    base_url: str | None
    base_url_source: str
    key_name: str
    key_source: str | None


def key_name(environment: str) -> str:
    return "CRM_API_KEY" if environment == "production" else "CRM_SANDBOX_API_KEY"


def environment(conn: store.Connection, rt: Runtime) -> str:
    return settings.get(conn, "crm_environment") or rt.config.crm.environment


def target(conn: store.Connection, rt: Runtime) -> CrmTarget:
    env = environment(conn, rt)
    url = settings.get(conn, f"crm_base_url_{env}")
    source = "setting (synctool crm config --base-url)"
    if not url:
        if env == "sandbox" and rt.config.crm.sandbox_base_url and not rt.environ.get("CRM_API_BASE_URL"):
            url, source = rt.config.crm.sandbox_base_url, f"config crm.sandbox_base_url ({rt.config.source})"
        else:
            url = rt.config.crm.base_url
            source = (
                "environment CRM_API_BASE_URL"
                if rt.environ.get("CRM_API_BASE_URL")
                else f"config crm.base_url ({rt.config.source})"
            )
    name = key_name(env)
    key_source = rt.secrets.source(name)
    if key_source is None:  # the single key, when it is not in the keyring
        fallback = rt.secrets.source("CRM_API_KEY")
        if fallback in ("environment", "secrets.env"):
            name, key_source = "CRM_API_KEY", fallback
    return CrmTarget(env, url, source, name, key_source)


def pacer(rt: Runtime) -> Pacer:
    """The pacer for synctool's share of the account's CRM budget (never more than the whole limit)."""
    share = min(rt.config.crm.share_requests, rt.config.crm.rate_limit_requests)
    return Pacer(
        rt.database,
        Limits(
            share,
            rt.config.crm.rate_limit_window_s,
            rt.config.crm.min_interval_ms / 1000,
            account_limit=rt.config.crm.rate_limit_requests,
            send_margin_s=rt.config.crm.send_margin_ms / 1000,
        ),
        connect=lambda: rt.open_database(migrate=False),
    )


def budget(rt: Runtime) -> dict:
    """The pacer's view of synctool's share of the account's requests (``Pacer.budget``)."""
    pacer_ = pacer(rt)
    try:
        return pacer_.budget()
    finally:
        pacer_.close()


def open_client(
    conn: store.Connection, rt: Runtime, *, on_request: Callable[[], None] | None = None, transport=None, preview: bool = False
):
    """A CrmClient for the active environment; ConfigError naming what is missing, before any request. A
    ``preview`` client reads for real and holds every write back (``crm/preview.py``)."""
    from synctool.crm.client import CrmClient, check_base_url
    from synctool.crm.preview import PreviewClient

    where = target(conn, rt)
    base_url = check_base_url(where.base_url, where.base_url_source)
    key = rt.secrets.get(where.key_name)
    if not key:
        raise ConfigError(
            key_name(where.environment),
            "keyring/environment",
            f"no CRM API key for the {where.environment} environment; run `synctool crm config --api-key` or set CRM_API_KEY",
        )
    return (PreviewClient if preview else CrmClient)(
        base_url,
        key,
        pacer=pacer(rt),
        max_retries=rt.config.crm.max_retries,
        retry_base_s=rt.config.crm.retry_base_ms / 1000,
        timeout_s=rt.config.crm.timeout_s,
        on_request=on_request,
        transport=transport or rt.transport("crm"),
    )
