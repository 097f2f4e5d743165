"""Stripe's API as the donations read it (the account's secret key, ``PAYMENTS_API_KEY``: the account is one): charges
with their balance transactions, the Checkout Session and line items that coded a payment, invoices and
subscriptions, payouts. Every list is paged with ``starting_after`` (100 a page)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from typing_extensions import Unpack

from synctool.platform import ApiClient, ApiOptions, JsonObject, Runtime
from synctool.platforms.stripe_donations.models import ROLE

#: the API version synctool reads Stripe at (the one ``tests/specs/stripe.json`` describes): a charge names its
#: ``invoice``, an invoice its ``subscription``, ``charge`` and ``payment_intent``, whatever the account's default
API_VERSION = "2020-08-27"


def _error_text(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    return f"{error.get('type')}: {error.get('message')}" if isinstance(error, dict) else str(body)[:200]


class DonationsClient:
    def __init__(self, base_url: str, api_key: str, **kwargs: Unpack[ApiOptions]):
        self.api = ApiClient(
            base_url,
            name="Stripe",
            error_text=_error_text,
            headers={"Authorization": f"Bearer {api_key}", "Stripe-Version": API_VERSION},
            **kwargs,
        )

    def close(self) -> None:
        self.api.close()

    def _pages(self, path: str, params: dict[str, Any]) -> Iterator[JsonObject]:
        after = None
        while True:
            body = self.api.request("GET", path, params={**params, "limit": 100, **({"starting_after": after} if after else {})})
            page = body.get("data") if isinstance(body, dict) else None
            page = [item for item in page or [] if isinstance(item, dict)]
            yield from page
            if not body.get("has_more") or not page:
                return
            after = page[-1].get("id")

    def charge(self, charge_id: str) -> JsonObject:
        """One charge, its balance transaction expanded (the fee and the net)."""
        found: JsonObject = self.api.request("GET", f"/v1/charges/{charge_id}", params={"expand[]": ["balance_transaction"]})
        return found

    def charges(self, *, gte: int | None = None, lt: int | None = None, payment_intent: str | None = None) -> list[JsonObject]:
        """The charges created in ``[gte, lt)`` (Unix times), or those of one payment intent, newest first."""
        params: dict[str, Any] = {"expand[]": ["data.balance_transaction"]}
        if gte is not None:
            params["created[gte]"] = gte
        if lt is not None:
            params["created[lt]"] = lt
        if payment_intent:
            params["payment_intent"] = payment_intent
        return list(self._pages("/v1/charges", params))

    def events(self, gte: int, types: list[str]) -> list[JsonObject]:
        """The account's events of ``types`` created at or after a Unix time (Stripe keeps 30 days), newest first."""
        return list(self._pages("/v1/events", {"types[]": types, "created[gte]": gte}))

    def session_of(self, payment_intent: str) -> JsonObject | None:
        """The Checkout Session that made a payment intent (a Payment Link's or a Checkout page's), or None."""
        body = self.api.request("GET", "/v1/checkout/sessions", params={"payment_intent": payment_intent, "limit": 1})
        found = (body.get("data") or [None])[0] if isinstance(body, dict) else None
        return found if isinstance(found, dict) else None

    def line_items(self, session_id: str) -> list[JsonObject]:
        return list(self._pages(f"/v1/checkout/sessions/{session_id}/line_items", {}))

    def invoice(self, invoice_id: str) -> JsonObject:
        found: JsonObject = self.api.request("GET", f"/v1/invoices/{invoice_id}")
        return found

    def subscription(self, subscription_id: str) -> JsonObject:
        found: JsonObject = self.api.request("GET", f"/v1/subscriptions/{subscription_id}")
        return found

    def customer(self, customer_id: str) -> JsonObject:
        """A customer: who a subscription's donor is (``email``, ``name``, ``phone``)."""
        found: JsonObject = self.api.request("GET", f"/v1/customers/{customer_id}")
        return found

    def subscriptions(self) -> list[JsonObject]:
        """Every subscription, whatever its status."""
        return list(self._pages("/v1/subscriptions", {"status": "all"}))

    def payouts(self, gte: int, lt: int) -> list[JsonObject]:
        """The payouts arriving in ``[gte, lt)`` (Unix times)."""
        return list(self._pages("/v1/payouts", {"arrival_date[gte]": gte, "arrival_date[lt]": lt}))

    def payout_lines(self, payout_id: str) -> list[JsonObject]:
        """The balance transactions a payout paid out."""
        return list(self._pages("/v1/balance_transactions", {"payout": payout_id, "expand[]": ["data.source"]}))


def from_runtime(rt: Runtime) -> DonationsClient:
    """The client on ``stripe-donations.base_url``, else ``payments.base_url`` (Stripe's), with the account's key."""
    base = (
        rt.config.section(ROLE).base_url or getattr(rt.config.section("payments"), "base_url", None) or "https://api.stripe.com"
    )
    return DonationsClient(base, rt.secrets.require("PAYMENTS_API_KEY", "Stripe"), **rt.api_options(ROLE))


def probe(client: DonationsClient) -> str:
    body = client.api.request("GET", "/v1/charges", params={"limit": 1})
    return f"charges readable ({len(body.get('data') or [])} on the first page of 1)"
