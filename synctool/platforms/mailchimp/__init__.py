"""Mailchimp, the mailing platform: unsubscribes and bounces reach the CRM; donors join mapped lists."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool.config import Section
from synctool.platforms import ApiRoute, Client, Fake, Platform, Registration, Target, Webhook, setting_in

if TYPE_CHECKING:
    from synctool.config import Config
    from synctool.platforms.webhook import Adapter
    from synctool.runtime import Runtime


class MailingConfig(Section):
    """``mailing:`` in config.yaml."""

    #: when unset, derived from the API key's data-centre suffix (``...-us14``)
    base_url: str | None = None


def section(config: Config) -> MailingConfig:
    """This platform's config section, typed."""
    return config.section("mailing")


def _adapter() -> Adapter:
    from synctool.platforms.mailchimp import webhook

    return webhook


def _client(rt: Runtime) -> Any:
    from synctool.platforms.mailchimp.client import from_runtime

    return from_runtime(rt)


def _probe(made: Any) -> str:
    from synctool.platforms.mailchimp.client import probe

    return probe(made)


def _fake(key: str) -> tuple[Any, Any]:
    from synctool.platforms.mailchimp.fake import FakeMailchimp, create_app

    made = FakeMailchimp(key)
    return made, create_app(made)


def _registration() -> Registration:
    from synctool.platforms.mailchimp import registration

    return registration


def _handlers() -> None:
    from synctool.platforms.mailchimp import audience, rules  # noqa: F401


def _commands() -> Any:
    from synctool.platforms.mailchimp.commands import app

    return app


def _routes() -> list[ApiRoute]:
    from synctool.platforms.mailchimp.routes import routes

    return routes()


SYNC_ENABLED = setting_in(
    "synctool.platforms.mailchimp.settings",
    "mailing-sync-enabled",
    "Show or switch whether mailing events (unsubscribes, bounces) change CRM tags.",
    "EnabledBody",
    example="off",
)


PLATFORM = Platform(
    name="mailchimp",
    role="mailing",
    # donors pushed to the mailing list, after the CRM's jobs
    targets=(Target("mailing"),),
    webhook=Webhook("mailing", _adapter, secret="MAILING_WEBHOOK_SECRET", url_check=True),
    client=Client("mailing", _client, probe=_probe),
    secrets={
        "MAILING_API_KEY": "Mailchimp's API key (its -usNN suffix names the data centre)",
        "MAILING_WEBHOOK_SECRET": "the ?secret= in the webhook URL registered with Mailchimp",
    },
    fake=Fake(
        "mailchimp",
        _fake,
        "MAILING_API_KEY",
        "demo-mailchimp-key-us14",
        "MAILING_API_BASE_URL",
        "/3.0",
        contract="mailchimp.json",
    ),  # fmt: skip
    registration=_registration,
    handlers=_handlers,
    commands={"mailing": _commands},
    settings=(SYNC_ENABLED,),
    routes=_routes,
    config=MailingConfig,
    config_env={"MAILING_API_BASE_URL": "base_url"},
)
