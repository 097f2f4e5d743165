"""Secrets: the OS keyring (service ``synctool``) first, then the environment captured at start-up.

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
    """Keyring first, then ``environ`` (a snapshot taken once, when the Runtime was built)."""

    def __init__(self, environ: Mapping[str, str], *, use_keyring: bool = True) -> None:
        self.environ = dict(environ)
        self.use_keyring = use_keyring

    @property
    def backend(self) -> Any:
        return _backend() if self.use_keyring else None

    def keyring_available(self) -> bool:
        return self.backend is not None

    def keyring_notice(self) -> str | None:
        """The one-line notice for a machine without a keyring backend, else None."""
        return None if self.keyring_available() else KEYRING_NOTICE

    def keyring_name(self) -> str:
        backend = self.backend
        return type(backend).__module__ + "." + type(backend).__name__ if backend else "none"

    def _from_keyring(self, name: str) -> str | None:
        backend = self.backend
        if backend is None:
            return None
        try:
            return backend.get_password(SERVICE, name) or None
        except Exception:
            return None

    def get(self, name: str) -> str | None:
        """The secret's value from keyring, else the environment, else None."""
        return self._from_keyring(name) or self.environ.get(name) or None

    def require(self, name: str, what: str) -> str:
        """The secret, or ConfigError saying what needs it."""
        value = self.get(name)
        if not value:
            raise ConfigError(name, "keyring/environment", f"not set; synctool needs it to call {what}")
        return value

    def source(self, name: str) -> str | None:
        """Where a secret would be read from (``keyring`` / ``environment``), or None when unset."""
        if self._from_keyring(name):
            return "keyring"
        return "environment" if self.environ.get(name) else None

    def set(self, name: str, value: str) -> None:
        """Store a secret in keyring; refuse with advice where there is no backend."""
        backend = self.backend
        if backend is None:
            raise ConfigError(
                name,
                "keyring",
                "no keyring backend on this machine, so the secret was not saved; "
                f"set the environment variable {name} for synctool instead (for cron, in the crontab or an env file)",
            )
        backend.set_password(SERVICE, name, value)
