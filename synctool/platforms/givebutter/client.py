"""Givebutter's REST API client (``DonationsClient``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from synctool.platform import ApiClient, JsonObject, Runtime
from synctool.platforms import givebutter


def _error_text(body: Any) -> str:
    """Givebutter errors are ``{"message": ...}`` (422s add ``errors``)."""
    return str(body.get("message") or body)


class DonationsClient:
    """Givebutter's REST API: transactions (for the backup poll), campaigns, tickets, recurring plans."""

    def __init__(self, base_url: str, api_key: str, **kwargs: Any):
        self.api = ApiClient(
            base_url, name="Givebutter", error_text=_error_text, headers={"Authorization": f"Bearer {api_key}"}, **kwargs
        )

    def close(self) -> None:
        self.api.close()

    def pages(self, path: str, params: JsonObject) -> Iterator[JsonObject]:
        """Follow Laravel-style paging (``meta.current_page`` / ``meta.last_page``)."""
        page = 1
        while True:
            body = self.api.request("GET", path, params={**params, "page": page})
            yield from body.get("data") or []
            meta = body.get("meta") or {}
            links = body.get("links") or {}
            if not links.get("next") or page >= int(meta.get("last_page") or page):
                return
            page += 1

    def resource(self, method: str, path: str, **kwargs: Any) -> JsonObject:
        """One resource, out of the ``data`` Givebutter wraps it in (the body itself when there is none)."""
        body = self.api.request(method, path, **kwargs)
        return body.get("data", body)

    def transactions_since(self, created_after: str, per_page: int = 100) -> Iterator[JsonObject]:
        return self.pages("/transactions", {"createdAfter": created_after, "per_page": per_page})

    def transactions_updated_since(self, updated_after: str, per_page: int = 100) -> Iterator[JsonObject]:
        """Transactions changed since a moment (``updatedAfter``): a refund moves ``updated_at``."""
        return self.pages("/transactions", {"updatedAfter": updated_after, "per_page": per_page})

    def transactions_between(self, after: str, before: str, per_page: int = 100) -> Iterator[JsonObject]:
        """Transactions made in a period (``transactedAfter`` / ``transactedBefore``, ISO 8601)."""
        return self.pages("/transactions", {"transactedAfter": after, "transactedBefore": before, "per_page": per_page})

    def webhooks(self) -> list[JsonObject]:
        return list(self.pages("/webhooks", {"per_page": 100}))

    def activities(self, webhook_id: str) -> Iterator[JsonObject]:
        """A webhook's delivery history (``WebhookActivityResource``: status, event, the payload sent)."""
        return self.pages(f"/webhooks/{webhook_id}/activities", {"per_page": 100})

    def create_webhook(self, url: str, events: list[str]) -> JsonObject:
        """The new webhook, with its signing secret as ``signature``."""
        return self.resource("POST", "/webhooks", json={"url": url, "events": events, "name": "synctool", "enabled": True})

    def update_webhook(self, webhook_id: str, url: str, events: list[str]) -> JsonObject:
        return self.resource("PUT", f"/webhooks/{webhook_id}", json={"url": url, "events": events, "enabled": True})

    def payouts(self) -> list[JsonObject]:
        return list(self.pages("/payouts", {"per_page": 100}))

    def transaction(self, transaction_id: str) -> JsonObject:
        return self.resource("GET", f"/transactions/{transaction_id}")

    def campaign(self, campaign_id: str) -> JsonObject:
        return self.resource("GET", f"/campaigns/{campaign_id}")

    def member(self, campaign_id: str, member_id: str) -> JsonObject:
        """A campaign's peer-to-peer fundraiser (``CampaignMemberResource``: name, e-mail, phone, ...)."""
        return self.resource("GET", f"/campaigns/{campaign_id}/members/{member_id}")

    def campaigns(self) -> list[JsonObject]:
        return list(self.pages("/campaigns", {"per_page": 100}))

    def ticket(self, ticket_id: str) -> JsonObject:
        """One ticket (``GET /v1/tickets/{id}``, GB-OAS ``tickets.show``); a 404 when a refund revoked it."""
        return self.resource("GET", f"/tickets/{ticket_id}")

    def tickets(self, per_page: int = 100) -> Iterator[JsonObject]:
        """Every ticket of the account (``GET /v1/tickets`` takes no filter, only paging): holder, type (``title``),
        ``transaction_id``, ``checked_in_at``."""
        return self.pages("/tickets", {"per_page": per_page})

    def plans(self, per_page: int = 100) -> Iterator[JsonObject]:
        """Every recurring plan of the account (``GET /v1/plans``, GB-API ``plans.index``): its only documented
        filter is ``contacts``, so a reader wanting the changed ones reads every page."""
        return self.pages("/plans", {"per_page": per_page})

    def plan(self, plan_id: str) -> JsonObject:
        """One recurring plan (``GET /v1/plans/{plan uid}``, GB-API ``plans.show``, in the spec subset): the bare resource
        (no ``data`` wrapper is described). Read by a plan job queued with no plan, and once by the charge of a plan
        synctool has not recorded (``plan_job.known_from_charge``)."""
        body = self.api.request("GET", f"/plans/{plan_id}")
        return body.get("data", body) if isinstance(body.get("data"), dict) else body


def from_runtime(rt: Runtime) -> DonationsClient:
    return DonationsClient(
        givebutter.DonationsConfig.of(rt.config).base_url,
        rt.secrets.require("DONATIONS_API_KEY", "the donation platform"),
        **rt.api_options("donations"),
    )


def probe(client: DonationsClient) -> str:
    """One cheap read for `test-connections`."""
    return f"{len(client.api.request('GET', '/campaigns', params={'per_page': 1}).get('data') or [])} campaign(s) read"
