"""Stripe's REST API client (``PaymentsClient``): the webhook endpoints synctool registers. Stripe takes
form-encoded bodies (``enabled_events[]=...``) and answers ``{"error": {type, message, param}}``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from typing_extensions import Unpack

from synctool.platform import ApiClient, ApiOptions, JsonObject, Runtime
from synctool.platforms import stripe


def _error_text(body: Any) -> str:
    error = body.get("error") or {}
    return f"{error.get('type')}: {error.get('message')}" if isinstance(error, dict) else str(body)


class PaymentsClient:
    def __init__(self, base_url: str, api_key: str, **kwargs: Unpack[ApiOptions]):
        self.api = ApiClient(
            base_url, name="Stripe", error_text=_error_text, headers={"Authorization": f"Bearer {api_key}"}, **kwargs
        )

    def close(self) -> None:
        self.api.close()

    def webhook_endpoints(self) -> list[JsonObject]:
        found: list[JsonObject] = []
        after = None
        while True:
            body = self.api.request(
                "GET", "/v1/webhook_endpoints", params={"limit": 100, **({"starting_after": after} if after else {})}
            )
            found += body.get("data") or []
            if not body.get("has_more") or not found:
                return found
            after = found[-1]["id"]

    def undelivered_events(self, created_since: int, types: list[str]) -> Iterator[JsonObject]:
        """Events of ``types`` (``types[]``, at most 20) of the last 30 days still pending or that failed every
        delivery attempt (``delivery_success=false``), created at or after a Unix time, newest first, 100 a
        page. ``delivery_success`` is the account's, over every endpoint: the types keep other systems' events
        out."""
        after = None
        while True:
            params = {"delivery_success": "false", "types[]": types, "created[gte]": created_since, "limit": 100}
            body = self.api.request("GET", "/v1/events", params={**params, **({"starting_after": after} if after else {})})
            page = body.get("data") or []
            yield from page
            if not body.get("has_more") or not page:
                return
            after = page[-1]["id"]

    def create_webhook_endpoint(self, url: str, events: list[str]) -> JsonObject:
        """The new endpoint, with its signing ``secret`` (Stripe shows it only now)."""
        return self.api.request("POST", "/v1/webhook_endpoints", data={"url": url, "enabled_events[]": events})

    def update_webhook_endpoint(self, endpoint_id: str, url: str, events: list[str]) -> JsonObject:
        return self.api.request(
            "POST", f"/v1/webhook_endpoints/{endpoint_id}", data={"url": url, "enabled_events[]": events, "disabled": "false"}
        )

    def delete_webhook_endpoint(self, endpoint_id: str) -> JsonObject:
        return self.api.request("DELETE", f"/v1/webhook_endpoints/{endpoint_id}")


def from_runtime(rt: Runtime) -> PaymentsClient:
    return PaymentsClient(
        stripe.PaymentsConfig.of(rt.config).base_url,
        rt.secrets.require("PAYMENTS_API_KEY", "Stripe"),
        **rt.api_options("payments"),
    )


def probe(client: PaymentsClient) -> str:
    return f"{len(client.webhook_endpoints())} webhook endpoint(s)"
