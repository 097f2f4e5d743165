"""Secrets: the OS keyring (service ``synctool``) first, then the environment captured at start-up.

An organisation's (``synctool --org NAME``, ``orgs.py``) come from its own keyring service (``synctool:NAME``) and
its own ``secrets.env`` only: never from the process environment, so that a variable set for one organisation (or
for the single install) is never another's secret by accident.

A secret is named like its environment variable (``CRM_API_KEY``). Values never go to the database,
logs or error messages; only whether a secret is set, and where it came from, is ever shown. The
platforms' own secrets are listed by their packages (``platforms.secret_names()``); the core's are here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from synctool.errors import ConfigError

SERVICE = "synctool"
logger = logging.getLogger("synctool")

#: the secrets of synctool's core (the CRM, the admin API, alerts); each platform adds its own
CORE_SECRETS = {
    "CRM_API_KEY": "the CRM's API key (production)",
    "CRM_SANDBOX_API_KEY": "the CRM's API key (sandbox)",
    "ADMIN_JWT_SECRET": "signs the admin API's tokens",
    "SMTP_PASSWORD": "the SMTP login for alert e-mails",
}

#: said once where it matters (doctor, init, crm config), never by every command or in --json output
KEYRING_NOTICE = "no keyring backend on this machine: secrets are read from the environment (set them for cron too)"


@lru_cache(maxsize=1)
def _backend() -> Any:
    """The machine's usable keyring backend, or None when it has none."""
    try:
        import keyring
        from keyring.backends import fail, null

        backend = keyring.get_keyring()
        if isinstance(backend, (fail.Keyring, null.Keyring)):
            raise RuntimeError("no keyring backend")
        return backend
    except Exception:  # any keyring failure means: use the environment
        logger.debug("no keyring backend", exc_info=True)
        return None


class Secrets:
    """Keyring first, then ``environ`` (a snapshot taken once, when the Runtime was built). For an organisation
    ``service`` is its keyring service, ``environ`` its ``secrets.env``'s lines and ``file`` that file's path."""

    def __init__(
        self, environ: Mapping[str, str], *, use_keyring: bool = True, service: str = SERVICE, file: str | None = None
    ) -> None:
        self.environ = dict(environ)
        self.use_keyring = use_keyring
        self.service = service
        #: where the values that are not in the keyring come from: None means the process environment
        self.file = file

    @property
    def backend(self) -> Any:
        return _backend() if self.use_keyring else None

    def keyring_available(self) -> bool:
        return self.backend is not None

    def keyring_notice(self) -> str | None:
        """The one-line notice for a machine without a keyring backend, else None."""
        if self.keyring_available():
            return None
        return KEYRING_NOTICE if self.file is None else f"no keyring backend on this machine: secrets are read from {self.file}"

    def keyring_name(self) -> str:
        backend = self.backend
        return type(backend).__module__ + "." + type(backend).__name__ if backend else "none"

    def _from_keyring(self, name: str) -> str | None:
        backend = self.backend
        if backend is None:
            return None
        try:
            return backend.get_password(self.service, name) or None
        except Exception:
            return None

    def get(self, name: str) -> str | None:
        """The secret's value from keyring, else the environment, else None."""
        return self._from_keyring(name) or self.environ.get(name) or None

    def require(self, name: str, what: str) -> str:
        """The secret, or ConfigError saying what needs it."""
        value = self.get(name)
        if not value:
            where = "keyring/environment" if self.file is None else f"keyring {self.service}/{self.file}"
            raise ConfigError(name, where, f"not set; synctool needs it to call {what}")
        return value

    def source(self, name: str) -> str | None:
        """Where a secret would be read from (``keyring`` / ``environment`` / ``secrets.env``), or None when unset."""
        if self._from_keyring(name):
            return "keyring"
        if not self.environ.get(name):
            return None
        return "environment" if self.file is None else "secrets.env"

    def elsewhere(self, name: str) -> str:
        """What to do with ``name`` when the keyring cannot hold it: set it in the environment, or (an organisation,
        which never reads the environment) add it to its ``secrets.env``."""
        if self.file is None:
            return f"set the environment variable {name} for synctool instead (for cron, in the crontab or an env file)"
        return f"add a line {name}=... to {self.file} instead (chmod 600)"

    def set(self, name: str, value: str) -> None:
        """Store a secret in keyring; refuse with advice where there is no backend."""
        backend = self.backend
        if backend is None:
            raise ConfigError(
                name,
                "keyring",
                f"no keyring backend on this machine, so the secret was not saved; {self.elsewhere(name)}",
            )
        backend.set_password(self.service, name, value)

    def erase(self, names: list[str]) -> list[str]:
        """Delete ``names`` from this keyring service; the names that were there."""
        backend = self.backend
        removed: list[str] = []
        if backend is None:
            return removed
        for name in names:
            try:
                if backend.get_password(self.service, name) is None:
                    continue
                backend.delete_password(self.service, name)
                removed.append(name)
            except Exception:  # a backend that cannot delete: doctor and the caller say what is left
                logger.debug("keyring delete failed for %s", name, exc_info=True)
        return removed
