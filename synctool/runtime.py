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

from synctool import orgs
from synctool.config import Config, load_config
from synctool.errors import ConfigError
from synctool.secrets import Secrets

if TYPE_CHECKING:
    from email.message import EmailMessage

    import httpx

    from synctool import store

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
    #: the organisation it runs for (``--org``); None for an install without organisations
    org: str | None = None
    #: the schema its data is in, in a PostgreSQL host's database (``org_NAME``, ``host``); None: the database's own
    schema: str | None = None

    @classmethod
    def from_environ(
        cls,
        config_path: str | os.PathLike | None = None,
        environ: Mapping[str, str] | None = None,
        *,
        org: str | None = None,
        **kwargs: Any,
    ) -> Runtime:
        """Read the config and the secrets' environment once (``os.environ`` unless given).

        With ``org`` (``--org``), else ``$SYNCTOOL_ORG``, the organisation's world instead: its folder's config and
        database (a ``--config`` or ``$SYNCTOOL_DB`` naming another file refused), its keyring service and its
        ``secrets.env``, never the process environment's secrets. This is the one place an organisation is chosen."""
        env = dict(os.environ if environ is None else environ)
        name = org if org is not None else (env.get("SYNCTOOL_ORG") or None)
        if name is None:
            config = load_config(config_path, env)
            return cls(config=config, secrets=Secrets(env, use_keyring=orgs.keyring_wanted(env)), environ=env, **kwargs)
        place = orgs.find(name, env)
        orgs.refuse_disagreeing(place, config_path, env)
        env = orgs.config_environ(place, env)
        config = load_config(place.config, env)
        where, schema = orgs.store_of(place)
        # its folder's file, or its host's PostgreSQL database (its file's name kept from before the host moved there)
        if (
            config.database
            and config.database != where
            and Path(config.database).expanduser().resolve() != place.database.resolve()
        ):
            raise ConfigError(
                "database", config.source, f"an organisation's database is its folder's ({orgs.shown(place)}): remove the key"
            )
        env["SYNCTOOL_ORG"] = name  # the processes it starts run for the same organisation
        return cls(config=config, secrets=orgs.secrets(place, env), environ=env, org=name, schema=schema, **kwargs)

    @property
    def path_prefix(self) -> str:
        """Where its pages and webhooks are under the host's public URL: ``""``, or ``/o/NAME`` for an organisation
        (``synctool serve`` answers each organisation there: ``web/host.py``)."""
        return f"/o/{self.org}" if self.org else ""

    @property
    def db_path(self) -> Path:
        """SQLite's file (``Config.db_path``: a PostgreSQL URL refused, for the commands that work on the file itself)."""
        return self.config.db_path

    @property
    def database(self) -> str | Path:
        """Where the store is, whatever the engine: PostgreSQL's URL, else SQLite's file (``store.connect`` opens
        either)."""
        return self.config.database_url or self.config.db_path

    def open_database(self, *, migrate: bool = True, busy_timeout_ms: float | None = None) -> store.Connection:
        """A connection to the store (``database``), PostgreSQL's password from the secrets (``DATABASE_PASSWORD``)."""
        from synctool import store

        options: dict[str, Any] = {} if busy_timeout_ms is None else {"busy_timeout_ms": busy_timeout_ms}
        if self.config.database_url:
            options["password"] = self.secrets.get("DATABASE_PASSWORD")
            options["schema"] = self.schema
        return store.connect(self.database, migrate=migrate, **options)

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
