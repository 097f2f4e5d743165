"""Mailchimp's Marketing API client (``MailingClient``)."""

from __future__ import annotations

from typing import Any

from typing_extensions import Unpack

from synctool.platform import ApiClient, ApiOptions, JsonObject, Runtime
from synctool.platforms import mailchimp


def subscriber_hash(email: str) -> str:
    """Mailchimp's member id: the MD5 hex digest of the lowercased address."""
    import hashlib

    return hashlib.md5(email.strip().lower().encode()).hexdigest()


def base_url_for(api_key: str) -> str:
    """``https://<dc>.api.mailchimp.com/3.0``, the data centre being the key's suffix after the last '-'."""
    _, sep, dc = api_key.rpartition("-")
    if not sep or not dc:
        from synctool.platform import ConfigError

        raise ConfigError("MAILING_API_KEY", "keyring/environment", "expected a key ending in -<data centre>, e.g. ...-us14")
    return f"https://{dc}.api.mailchimp.com/3.0"


def _error_text(body: Any) -> str:
    """Mailchimp errors are problem+json: ``{type, title, status, detail, instance}``."""
    return f"{body.get('title')}: {body.get('detail')}"


class MailingClient:
    """Mailchimp's Marketing API v3: account (root), ping, lists."""

    def __init__(self, base_url: str, api_key: str, **kwargs: Unpack[ApiOptions]):
        self.api = ApiClient(base_url, name="Mailchimp", error_text=_error_text, auth=("synctool", api_key), **kwargs)

    def close(self) -> None:
        self.api.close()

    def ping(self) -> JsonObject:
        return self.api.request("GET", "/ping")

    def account(self) -> JsonObject:
        return self.api.request("GET", "/", params={"exclude_fields": "_links"})

    def upsert_member(self, list_id: str, email: str, merge_fields: dict[str, str]) -> JsonObject:
        """Add the address to the audience, or update it (``PUT`` is Mailchimp's upsert). A new member is
        ``subscribed``; an existing one keeps their status, so an unsubscribe is never undone."""
        return self.api.request(
            "PUT",
            f"/lists/{list_id}/members/{subscriber_hash(email)}",
            json={"email_address": email.strip(), "status_if_new": "subscribed", "merge_fields": merge_fields},
        )

    def tag_member(self, list_id: str, email: str, tags: list[str]) -> None:
        self.api.request(
            "POST",
            f"/lists/{list_id}/members/{subscriber_hash(email)}/tags",
            json={"tags": [{"name": t, "status": "active"} for t in tags]},
        )

    def webhooks(self, list_id: str) -> list[JsonObject]:
        return self.api.request("GET", f"/lists/{list_id}/webhooks").get("webhooks") or []

    def create_webhook(self, list_id: str, url: str, events: dict[str, bool], sources: dict[str, bool]) -> JsonObject:
        return self.api.request("POST", f"/lists/{list_id}/webhooks", json={"url": url, "events": events, "sources": sources})

    def update_webhook(
        self, list_id: str, webhook_id: str, url: str, events: dict[str, bool], sources: dict[str, bool]
    ) -> JsonObject:
        body = {"url": url, "events": events, "sources": sources}
        return self.api.request("PATCH", f"/lists/{list_id}/webhooks/{webhook_id}", json=body)

    def lists(self) -> list[JsonObject]:
        lists: list[JsonObject] = []
        offset = 0
        while True:
            body = self.api.request("GET", "/lists", params={"count": 1000, "offset": offset})
            lists.extend(body.get("lists") or [])
            offset += 1000
            if offset >= int(body.get("total_items") or 0):
                return lists


def from_runtime(rt: Runtime) -> MailingClient:
    key = rt.secrets.require("MAILING_API_KEY", "the mailing platform")
    return MailingClient(mailchimp.MailingConfig.of(rt.config).base_url or base_url_for(key), key, **rt.api_options("mailing"))


def probe(client: MailingClient) -> str:
    return str(client.ping().get("health_status", "ok"))
