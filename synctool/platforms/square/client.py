"""Square's REST API client (``PosClient``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from typing_extensions import Unpack

from synctool.platform import ApiClient, ApiOptions, JsonObject, Runtime
from synctool.platforms import square


def _error_text(body: Any) -> str:
    """Square errors are ``{"errors": [{category, code, detail?, field?}]}``."""
    return "; ".join(f"{e.get('code')}: {e.get('detail', '')}".strip() for e in body.get("errors") or [])


class PosClient:
    """Square's REST API: orders, payments, customers, locations."""

    def __init__(self, base_url: str, access_token: str, square_version: str = "2026-08-19", **kwargs: Unpack[ApiOptions]):
        self.api = ApiClient(
            base_url,
            name="Square",
            error_text=_error_text,
            headers={"Authorization": f"Bearer {access_token}", "Square-Version": square_version},
            **kwargs,
        )

    def close(self) -> None:
        self.api.close()

    def order(self, order_id: str) -> JsonObject:
        return self.api.request("GET", f"/v2/orders/{order_id}").get("order") or {}

    def payment(self, payment_id: str) -> JsonObject:
        return self.api.request("GET", f"/v2/payments/{payment_id}").get("payment") or {}

    def listed(self, path: str, key: str, **params: str | int) -> Iterator[JsonObject]:
        """Every item of a Square list endpoint (``{key: [...], cursor}``), following the cursor."""
        cursor = None
        while True:
            body = self.api.request("GET", path, params={**params, **({"cursor": cursor} if cursor else {})} or None)
            yield from body.get(key) or []
            cursor = body.get("cursor")
            if not cursor:
                return

    def payments(self, begin: str, end: str, location_id: str) -> Iterator[JsonObject]:
        """ListPayments of one location created in [begin, end) (RFC 3339), oldest first."""
        return self.listed(
            "/v2/payments", "payments", begin_time=begin, end_time=end, location_id=location_id, limit=100, sort_order="ASC"
        )

    def payouts(self, begin: str, end: str, location_id: str) -> Iterator[JsonObject]:
        """ListPayouts of one location created in [begin, end)."""
        return self.listed("/v2/payouts", "payouts", begin_time=begin, end_time=end, location_id=location_id)

    def payout_entries(self, payout_id: str) -> list[JsonObject]:
        return list(self.listed(f"/v2/payouts/{payout_id}/payout-entries", "payout_entries"))

    def subscriptions(self) -> list[JsonObject]:
        return list(self.listed("/v2/webhooks/subscriptions", "subscriptions"))

    def create_subscription(self, url: str, events: list[str], api_version: str) -> JsonObject:
        """The new subscription, with its ``signature_key`` (shown only now)."""
        body = {
            "idempotency_key": str(uuid.uuid4()),
            "subscription": {
                "name": "synctool",
                "enabled": True,
                "event_types": events,
                "notification_url": url,
                "api_version": api_version,
            },
        }
        return self.api.request("POST", "/v2/webhooks/subscriptions", json=body).get("subscription") or {}

    def update_subscription(self, subscription_id: str, url: str, events: list[str]) -> JsonObject:
        body = {"subscription": {"enabled": True, "event_types": events, "notification_url": url}}
        return self.api.request("PUT", f"/v2/webhooks/subscriptions/{subscription_id}", json=body).get("subscription") or {}

    def rotate_signature_key(self, subscription_id: str) -> str:
        body = {"idempotency_key": str(uuid.uuid4())}
        return self.api.request("POST", f"/v2/webhooks/subscriptions/{subscription_id}/signature-key", json=body)["signature_key"]

    def refund(self, refund_id: str) -> JsonObject:
        return self.api.request("GET", f"/v2/refunds/{refund_id}").get("refund") or {}

    def customer(self, customer_id: str) -> JsonObject:
        return self.api.request("GET", f"/v2/customers/{customer_id}").get("customer") or {}

    def locations(self) -> list[JsonObject]:
        return self.api.request("GET", "/v2/locations").get("locations") or []

    def orders_updated_since(self, location_ids: list[str], since: str) -> Iterator[JsonObject]:
        """SearchOrders of these locations (10 a request) updated at or after ``since``, COMPLETED or OPEN, oldest
        change first: the date filter and the sort name the same timestamp, as Square requires; the cursor is
        sent with the original query."""
        for start in range(0, len(location_ids), 10):
            query = {
                "filter": {
                    "state_filter": {"states": ["COMPLETED", "OPEN"]},
                    "date_time_filter": {"updated_at": {"start_at": since}},
                },
                "sort": {"sort_field": "UPDATED_AT", "sort_order": "ASC"},
            }
            cursor = None
            while True:
                body: JsonObject = {"location_ids": location_ids[start : start + 10], "limit": 500, "query": query}
                if cursor:
                    body["cursor"] = cursor
                found = self.api.request("POST", "/v2/orders/search", json=body)
                yield from found.get("orders") or []
                cursor = found.get("cursor")
                if not cursor:
                    break

    def refunds_updated_since(self, since: str) -> Iterator[JsonObject]:
        """ListPaymentRefunds COMPLETED and updated at or after ``since``, oldest change first."""
        return self.listed(
            "/v2/refunds", "refunds", updated_at_begin_time=since, status="COMPLETED", sort_field="UPDATED_AT", sort_order="ASC"
        )

    def search_orders(self, location_ids: list[str], *, cursor: str | None = None, limit: int = 50) -> JsonObject:
        body: JsonObject = {
            "location_ids": location_ids[:10],
            "limit": limit,
            "query": {"sort": {"sort_field": "CREATED_AT", "sort_order": "DESC"}},
        }
        if cursor:
            body["cursor"] = cursor
        return self.api.request("POST", "/v2/orders/search", json=body)


def from_runtime(rt: Runtime) -> PosClient:
    pos = square.PosConfig.of(rt.config)
    return PosClient(
        pos.base_url, rt.secrets.require("POS_ACCESS_TOKEN", "the POS platform"), pos.square_version, **rt.api_options("pos")
    )


def probe(client: PosClient) -> str:
    return f"{len(client.locations())} location(s)"
