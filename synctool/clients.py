"""Clients for the donation, POS and mailing platforms, from config and secrets (the CRM's: ``crm.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from synctool.config import Config
from synctool.errors import ConfigError
from synctool.secrets import get_secret


def _secret(name: str, what: str) -> str:
    value = get_secret(name)
    if not value:
        raise ConfigError(name, "keyring/environment", f"not set; synctool needs it to call {what}")
    return value


def donations(config: Config):
    from synctool.platforms.givebutter import DonationsClient

    return DonationsClient(config.donations.base_url, _secret("DONATIONS_API_KEY", "the donation platform"))


def pos(config: Config):
    from synctool.platforms.square import PosClient

    return PosClient(config.pos.base_url, _secret("POS_ACCESS_TOKEN", "the POS platform"), config.pos.square_version)


def mailing(config: Config):
    from synctool.platforms.mailchimp import MailingClient, base_url_for

    key = _secret("MAILING_API_KEY", "the mailing platform")
    return MailingClient(config.mailing.base_url or base_url_for(key), key)


@contextmanager
def using(make: Callable[[Config], Any], config: Config, client: Any = None) -> Iterator[Any]:
    """The client given (tests pass one), else a new one from ``make`` that is closed afterwards."""
    if client is not None:
        yield client
        return
    made = make(config)
    try:
        yield made
    finally:
        made.close()
