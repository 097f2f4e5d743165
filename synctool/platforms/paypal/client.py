"""PayPal's REST API through synctool's HTTP core (retries and errors in synctool's words), authenticated with
OAuth 2.0 client credentials: ``POST /v1/oauth2/token`` with the app's client id and secret (HTTP Basic) answers an
access token and ``expires_in`` (https://developer.paypal.com/api/rest/authentication/); the token is kept in this
process until a minute before it expires, and fetched again after a 401.

What synctool reads: an order's payer (``GET /v2/checkout/orders/{id}``), a capture (``GET
/v2/payments/captures/{id}``), a subscription (``GET /v1/billing/subscriptions/{id}``), the Transaction Search API
(``GET /v1/reporting/transactions``: at most 31 days a request, paged, and about three hours behind: a payment
is listed up to 3 h after it was made, https://developer.paypal.com/docs/api/transaction-search/v1/), the webhook
events PayPal sent (``GET /v1/notifications/webhooks-events``) and synctool's webhook registration
(``GET|POST /v1/notifications/webhooks``, ``PATCH /v1/notifications/webhooks/{id}``)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import Any

from synctool.platform import ApiClient, RemoteError, Runtime
from synctool.platforms.paypal.models import PLATFORM_NAME, ROLE

CLIENT_ID = "PAYPAL_CLIENT_ID"
CLIENT_SECRET = "PAYPAL_CLIENT_SECRET"
#: Transaction Search: at most 31 days between start_date and end_date, at most 500 rows a page
WINDOW = timedelta(days=31)
PAGE_SIZE = 500
#: what a listing reads at most (pages), so a hostile or broken answer cannot keep a poll going
MAX_PAGES = 200

_TOKENS: dict[tuple[str, str], tuple[str, float]] = {}
_LOCK = threading.Lock()


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class PayPalClient:
    def __init__(self, rt: Runtime) -> None:
        self.client_id = rt.secrets.require(CLIENT_ID, PLATFORM_NAME)
        self._secret = rt.secrets.require(CLIENT_SECRET, PLATFORM_NAME)
        self.base_url = rt.config.section(ROLE).base_url.rstrip("/")
        self.api = ApiClient(self.base_url, name=PLATFORM_NAME, **rt.api_options(ROLE))

    # -- the token ------------------------------------------------------------------------------------------------

    def _token(self, fresh: bool = False) -> str:
        key = (self.base_url, self.client_id)
        with _LOCK:
            held = _TOKENS.get(key)
        if held and not fresh and held[1] > time.monotonic():
            return held[0]
        answer = self.api.request("POST", "/v1/oauth2/token", data={"grant_type": "client_credentials"},
                                  auth=(self.client_id, self._secret),
                                  headers={"Content-Type": "application/x-www-form-urlencoded"})  # fmt: skip
        token = str(answer.get("access_token") or "")
        if not token:
            raise RemoteError(200, f"{PLATFORM_NAME} answered no access token")
        lasts = float(answer.get("expires_in") or 0)
        with _LOCK:
            _TOKENS[key] = (token, time.monotonic() + max(lasts - 60, 0))
        return token

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """One API request with the cached token; a 401 (a token PayPal let lapse) fetches a new one, once."""
        try:
            return self.api.request(method, path, headers={"Authorization": f"Bearer {self._token()}"}, **kwargs)
        except RemoteError as exc:
            if exc.status != 401:
                raise
        return self.api.request(method, path, headers={"Authorization": f"Bearer {self._token(fresh=True)}"}, **kwargs)

    # -- what synctool reads ---------------------------------------------------------------------------------------

    def order(self, order_id: str) -> dict[str, Any]:
        return self.call("GET", f"/v2/checkout/orders/{order_id}")

    def capture(self, capture_id: str) -> dict[str, Any]:
        return self.call("GET", f"/v2/payments/captures/{capture_id}")

    def subscription(self, subscription_id: str) -> dict[str, Any]:
        return self.call("GET", f"/v1/billing/subscriptions/{subscription_id}")

    def transactions(self, start: datetime, end: datetime, transaction_id: str | None = None) -> list[dict[str, Any]]:
        """Every transaction PayPal lists between ``start`` and ``end`` (aware datetimes), in windows of 31 days
        and pages of 500, with all its fields (``fields=all``: payer, cart, transaction info)."""
        found: list[dict[str, Any]] = []
        since = start
        while since < end:
            until = min(since + WINDOW, end)
            page = 1
            while page <= MAX_PAGES:
                params = {"start_date": _iso(since), "end_date": _iso(until), "fields": "all", "page_size": PAGE_SIZE,
                          "page": page}  # fmt: skip
                if transaction_id:
                    params["transaction_id"] = transaction_id
                answer = self.call("GET", "/v1/reporting/transactions", params=params)
                found += [t for t in answer.get("transaction_details") or [] if isinstance(t, dict)]
                if page >= int(answer.get("total_pages") or 1):
                    break
                page += 1
            since = until
        return found

    def webhook_events(self, start: datetime, end: datetime) -> list[dict[str, Any]]:
        """The webhook events PayPal sent in the period (``GET /v1/notifications/webhooks-events``: newest first,
        up to 300 a page; its ``next`` link pages on)."""
        params: dict[str, Any] = {"start_time": _iso(start), "end_time": _iso(end), "page_size": 300}
        answer = self.call("GET", "/v1/notifications/webhooks-events", params=params)
        return [e for e in answer.get("events") or [] if isinstance(e, dict)]

    def webhooks(self) -> list[dict[str, Any]]:
        return [w for w in self.call("GET", "/v1/notifications/webhooks").get("webhooks") or [] if isinstance(w, dict)]

    def create_webhook(self, url: str, events: list[str]) -> dict[str, Any]:
        return self.call("POST", "/v1/notifications/webhooks", json={"url": url, "event_types": [{"name": e} for e in events]})

    def update_webhook(self, webhook_id: str, url: str, events: list[str]) -> dict[str, Any]:
        patch = [{"op": "replace", "path": "/url", "value": url},
                 {"op": "replace", "path": "/event_types", "value": [{"name": e} for e in events]}]  # fmt: skip
        return self.call("PATCH", f"/v1/notifications/webhooks/{webhook_id}", json=patch)

    def verify_signature(self, body: dict[str, Any]) -> str:
        """``POST /v1/notifications/verify-webhook-signature``: ``SUCCESS`` or ``FAILURE``."""
        return str(self.call("POST", "/v1/notifications/verify-webhook-signature", json=body).get("verification_status"))

    def close(self) -> None:
        self.api.close()


def from_runtime(rt: Runtime) -> PayPalClient:
    return PayPalClient(rt)


def probe(client: PayPalClient) -> str:
    """``synctool test-connections``: a token, then one read of synctool's webhooks."""
    return f"{len(client.webhooks())} webhook(s) registered"
