"""Mailchimp, the mailing platform: unsubscribes and bounces reach the CRM; donors join mapped lists."""

from __future__ import annotations

from typing import Any

from synctool.platforms import Client, Fake, Platform, Target, Webhook

PLATFORM = Platform(
    name="mailchimp",
    role="mailing",
    # donors pushed to the mailing list, after the CRM's jobs
    targets=(Target("mailing"),),
    webhook=Webhook("mailing", "synctool.platforms.mailchimp.webhook", secret="MAILING_WEBHOOK_SECRET", url_check=True),
    client=Client(
        "mailing", "synctool.platforms.mailchimp.client:from_runtime", probe="synctool.platforms.mailchimp.client:probe"
    ),
    secrets={
        "MAILING_API_KEY": "Mailchimp's API key (its -usNN suffix names the data centre)",
        "MAILING_WEBHOOK_SECRET": "the ?secret= in the webhook URL registered with Mailchimp",
    },
    fake=Fake(
        "mailchimp",
        "synctool.platforms.mailchimp.fake",
        "FakeMailchimp",
        "MAILING_API_KEY",
        "demo-mailchimp-key-us14",
        "MAILING_API_BASE_URL",
        "/3.0",
        contract="mailchimp.json",
    ),
    registration="synctool.platforms.mailchimp.registration",
    handlers=("synctool.platforms.mailchimp.rules", "synctool.platforms.mailchimp.audience"),
    commands={"mailing": "synctool.platforms.mailchimp.commands:app"},
    routes="synctool.platforms.mailchimp:routes",
)


def routes(call: Any, roles: dict[str, str]) -> list[tuple[str, str, str, Any]]:
    from synctool.platforms.mailchimp import ops

    admin = roles["admin"]
    return [
        ("GET", "/api/mailing/account", admin, lambda c: ops.account(c.rt)),
        ("GET", "/api/mailing/lists", admin, lambda c: ops.lists(c.rt)),
        ("GET", "/api/mailing/mappings", admin, lambda c: ops.list_mappings(c.conn)),
        ("POST", "/api/mailing/mappings", admin, lambda c: ops.set_mapping(c.conn, c.body_as(ops.ListMappingBody))),
        ("POST", "/api/mailing/test", admin, lambda c: ops.test(c.rt)),
        ("GET", "/api/mailing/tag-rules", admin, lambda c: ops.tag_rules(c.conn)),
        ("POST", "/api/mailing/tag-rules", admin, lambda c: ops.set_tag_rule(c.conn, c.body_as(ops.TagRuleBody))),
    ]
