"""KindDesk's API, through synctool's HTTP core (retries, pacing and errors in synctool's words)."""

from __future__ import annotations

from typing import Any

from synctool.platform import ApiClient, Runtime

ROLE = "kind"


class KindClient:
    def __init__(self, rt: Runtime) -> None:
        key = rt.secrets.require("KIND_API_KEY", "KindDesk")  # a ConfigError naming the secret when it is not set
        self.api = ApiClient(rt.config.section(ROLE).base_url, name="KindDesk", headers={"Authorization": f"Bearer {key}"},
                             **rt.api_options(ROLE))  # fmt: skip

    def gifts(self, since: str | None = None, until: str | None = None) -> list[dict[str, Any]]:
        params = {k: v for k, v in (("since", since), ("until", until)) if v}
        return self.api.request("GET", "/gifts", params=params or None)["gifts"]

    def gift(self, gift_id: str) -> dict[str, Any]:
        return self.api.request("GET", f"/gifts/{gift_id}")

    def payouts(self, since: str, until: str) -> list[dict[str, Any]]:
        return self.api.request("GET", "/payouts", params={"since": since, "until": until})["payouts"]

    def failed_deliveries(self, since: str) -> list[dict[str, Any]]:
        return self.api.request("GET", "/deliveries", params={"status": "failed", "since": since})["deliveries"]

    def webhooks(self) -> list[dict[str, Any]]:
        return self.api.request("GET", "/webhooks")["webhooks"]

    def create_webhook(self, url: str, events: list[str]) -> dict[str, Any]:
        return self.api.request("POST", "/webhooks", json={"url": url, "events": events})

    def update_webhook(self, webhook_id: str, url: str, events: list[str]) -> dict[str, Any]:
        return self.api.request("PUT", f"/webhooks/{webhook_id}", json={"url": url, "events": events, "enabled": True})

    def close(self) -> None:
        self.api.close()


def probe(client: KindClient) -> str:
    """`synctool test-connections`: one read, in words."""
    return f"{len(client.gifts())} gift(s) listed"
