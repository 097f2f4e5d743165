"""Secrets: the OS keyring (service ``synctool``) first, then the environment.

A secret is named like its environment variable (``CRM_API_KEY``). Values never go to the database,
logs or error messages; only whether a secret is set, and where it came from, is ever shown.
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache

from synctool.errors import ConfigError

SERVICE = "synctool"
logger = logging.getLogger("synctool")

#: every secret synctool reads, for `doctor` and for the "never printed" tests
SECRET_NAMES = (
    "CRM_API_KEY",
    "DONATIONS_API_KEY",
    "DONATIONS_WEBHOOK_SECRET",
    "POS_ACCESS_TOKEN",
    "POS_WEBHOOK_SIGNATURE_KEY",
    "MAILING_API_KEY",
    "MAILING_WEBHOOK_SECRET",
    "PAYMENTS_WEBHOOK_SECRET",
    "PORTAL_WEBHOOK_SECRET",
    "ADMIN_JWT_SECRET",
    "SMTP_PASSWORD",
)


#: said once where it matters (doctor, init, crm config), never by every command or in --json output
KEYRING_NOTICE = "no keyring backend on this machine: secrets are read from the environment (set them for cron too)"


@lru_cache(maxsize=1)
def _backend():
    """The usable keyring backend, or None when the machine has none (``keyring_notice`` says so)."""
    if os.environ.get("SYNCTOOL_KEYRING", "").lower() in ("off", "0", "no"):
        return None
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


def keyring_available() -> bool:
    return _backend() is not None


def keyring_notice() -> str | None:
    """The one-line notice for a machine without a keyring backend, else None."""
    return None if keyring_available() else KEYRING_NOTICE


def keyring_name() -> str:
    backend = _backend()
    return type(backend).__module__ + "." + type(backend).__name__ if backend else "none"


def get_secret(name: str) -> str | None:
    """The secret's value from keyring, else the environment, else None."""
    backend = _backend()
    if backend is not None:
        try:
            value = backend.get_password(SERVICE, name)
        except Exception:
            value = None
        if value:
            return value
    value = os.environ.get(name)
    return value or None


def secret_source(name: str) -> str | None:
    """Where a secret would be read from (``keyring`` / ``environment``), or None when unset."""
    backend = _backend()
    if backend is not None:
        try:
            if backend.get_password(SERVICE, name):
                return "keyring"
        except Exception:
            pass
    return "environment" if os.environ.get(name) else None


def set_secret(name: str, value: str) -> None:
    """Store a secret in keyring; refuse with advice where there is no backend."""
    backend = _backend()
    if backend is None:
        raise ConfigError(
            name,
            "keyring",
            "no keyring backend on this machine, so the secret was not saved; "
            f"set the environment variable {name} for synctool instead (for cron, in the crontab or an env file)",
        )
    backend.set_password(SERVICE, name, value)
