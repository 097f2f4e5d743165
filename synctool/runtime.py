"""The Runtime: everything a command or request runs with, built once and passed down.

It holds the validated config, the secrets (keyring, then a snapshot of the environment taken when the
Runtime was built), the clock, the mailer and the transports the API clients use. Nothing reads
``os.environ`` after ``Runtime.from_environ`` returns: the demo and the tests build a Runtime of their own
that points at the fakes (``transports=``) instead of changing the environment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synctool.config import Config, load_config
from synctool.secrets import Secrets

if TYPE_CHECKING:
    from email.message import EmailMessage

    import httpx

Mailer = Callable[["EmailMessage"], None]


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Runtime:
    config: Config
    secrets: Secrets
    #: role (``crm``, ``donations``, ...) -> the transport its client uses; none means the network
    transports: Mapping[str, httpx.BaseTransport] = field(default_factory=dict)
    clock: Callable[[], datetime] = utcnow
    #: sends one alert e-mail; None means SMTP as configured (``smtp`` in config)
    mailer: Mailer | None = None
    #: the environment it was built from, for the processes it starts (`drain --watch`'s children, tests)
    environ: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_environ(
        cls, config_path: str | os.PathLike | None = None, environ: Mapping[str, str] | None = None, **kwargs: Any
    ) -> Runtime:
        """Read the config and the secrets' environment once (``os.environ`` unless given)."""
        env = dict(os.environ if environ is None else environ)
        config = load_config(config_path, env)
        use_keyring = env.get("SYNCTOOL_KEYRING", "").lower() not in ("off", "0", "no")
        return cls(config=config, secrets=Secrets(env, use_keyring=use_keyring), environ=env, **kwargs)

    @property
    def db_path(self) -> Path:
        return self.config.db_path

    def transport(self, role: str) -> httpx.BaseTransport | None:
        return self.transports.get(role)

    def api_options(self, role: str) -> dict[str, Any]:
        """What a platform's API client (``synctool.http.ApiClient``) is built with: its role's transport and the
        ``platform_api`` timeout and retries."""
        api = self.config.platform_api
        return {
            "transport": self.transport(role),
            "timeout_s": api.timeout_s,
            "max_retries": api.max_retries,
            "retry_base_s": api.retry_base_ms / 1000,
        }
