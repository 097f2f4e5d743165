"""Mailchimp, the mailing platform: unsubscribes and bounces reach the CRM; donors join mapped lists."""

from __future__ import annotations

from synctool.platform import Client, Fake, Hook, Loaded, Platform, PlatformSection, Target, Webhook, setting_in


class MailingConfig(PlatformSection):
    """``mailing:`` in config.yaml."""

    #: when unset, derived from the API key's data-centre suffix (``...-us14``)
    base_url: str | None = None


SYNC_ENABLED = setting_in(
    "synctool.platforms.mailchimp.settings",
    "mailing-sync-enabled",
    "Show or switch whether mailing events (unsubscribes, bounces) change CRM tags.",
    "EnabledBody",
    title="Mailing events in the CRM",
    description="On (the default), an unsubscribe or a bounce on the mailing platform changes the donor's tags in "
    "the CRM; off, mailing events change nothing in the CRM.",
    example="off",
)


PLATFORM = Platform(
    name="mailchimp",
    role="mailing",
    # donors pushed to the mailing list, after the CRM's jobs
    targets=(Target("mailing"),),
    webhook=Webhook.of(
        __name__, "MAILING_WEBHOOK_SECRET", "the ?secret= in the webhook URL registered with Mailchimp", url_check=True
    ),
    client=Client.of(__name__, "MAILING_API_KEY", "Mailchimp's API key (its -usNN suffix names the data centre)"),
    fake=Fake.of(__name__, "FakeMailchimp", key="demo-mailchimp-key-us14", path="/3.0", contract="mailchimp.json"),
    registration=Loaded("synctool.platforms.mailchimp.registration"),
    handlers={
        "unsubscribe": Hook(f"{__name__}.rules:apply_event"),
        "cleaned": Hook(f"{__name__}.rules:apply_event"),
        # a donor pushed to the mailing list, whichever platform the gift came from
        "*:audience_member": Hook(f"{__name__}.audience:push"),
    },
    commands={"mailing": Loaded("synctool.platforms.mailchimp.commands:app")},
    settings=(SYNC_ENABLED,),
    routes=Hook("synctool.platforms.mailchimp.routes:routes"),
    config=MailingConfig,
    config_env={"MAILING_API_BASE_URL": "base_url"},
)
