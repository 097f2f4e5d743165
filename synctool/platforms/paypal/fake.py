"""PayPal's REST API as a fake, for the tests, the demo and ``check_platform``: OAuth client credentials
(``POST /v1/oauth2/token``, the client secret is the fake's key, any client id), then a Bearer token on every
request. It keeps orders, captures, subscriptions and sales, the Transaction Search rows they make, its webhook
registrations and the webhook events it sent, and signs its webhooks as PayPal does: with its own throwaway RSA key,
whose certificate (issued by its own throwaway CA) it serves at ``/v1/notifications/certs/{name}``. That URL is
the fake's own (``url``), never a PayPal host: a test allows it with ``paypal.cert_url_prefixes``.

Every answer is shaped by PayPal's OpenAPI files (``tests/specs/paypal.json``, which the tests hold it to)."""

from __future__ import annotations

import base64
import json
import secrets as random
import threading
import zlib
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

CERT_NAME = "CERT-fake-360caa42"
_KEYS: dict[str, Any] = {}
_KEYS_LOCK = threading.Lock()


def _keys() -> dict[str, Any]:
    """One throwaway CA and signing key per process (made on first use: a fake that signs nothing makes none)."""
    with _KEYS_LOCK:
        if not _KEYS:
            from cryptography import x509
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import rsa
            from cryptography.x509.oid import NameOID

            now = datetime.now(UTC)
            ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "synctool fake PayPal CA")])
            leaf_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "messageverificationcerts.fake.invalid")])

            def cert(subject: x509.Name, public: Any, signer: Any, ca: bool) -> x509.Certificate:
                return (
                    x509.CertificateBuilder()
                    .subject_name(subject)
                    .issuer_name(ca_name)
                    .public_key(public)
                    .serial_number(x509.random_serial_number())
                    .not_valid_before(now - timedelta(days=1))
                    .not_valid_after(now + timedelta(days=3650))
                    .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
                    .sign(signer, hashes.SHA256())
                )

            ca = cert(ca_name, ca_key.public_key(), ca_key, True)
            leaf = cert(leaf_name, key.public_key(), ca_key, False)
            _KEYS["key"] = key
            _KEYS["pem"] = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in (leaf, ca))
        return _KEYS


def _iso(moment: datetime | None = None) -> str:
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _money(value: str | Decimal, currency: str = "USD") -> dict[str, str]:
    return {"currency_code": currency, "value": f"{Decimal(str(value)):.2f}"}


_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # PayPal's ids: ``^[2-9A-HJ-NP-Z]{13}$`` for a payer's


def _id(prefix: str = "", size: int = 17) -> str:
    return prefix + "".join(random.choice(_ALPHABET) for _ in range(size - len(prefix)))


class FakePayPal:
    """PayPal's state. ``url`` is where the fake answers (set it when it is served on a port)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.url = "http://paypal.fake.invalid"
        self.tokens: set[str] = set()
        self.orders: dict[str, dict[str, Any]] = {}
        self.captures: dict[str, dict[str, Any]] = {}
        self.subscriptions: dict[str, dict[str, Any]] = {}
        self.sales: dict[str, dict[str, Any]] = {}
        #: Transaction Search's rows (``transaction_detail``); ``listed=False`` keeps a payment out (PayPal's lag)
        self.transactions: list[dict[str, Any]] = []
        self.webhooks: list[dict[str, Any]] = []
        #: every webhook event sent (``GET /v1/notifications/webhooks-events``), newest last
        self.events: list[dict[str, Any]] = []

    # -- what a donor does ------------------------------------------------------------------------------------------

    def donate(self, amount: str, email: str, given: str = "Ida", surname: str = "Wells", *, at: datetime | None = None,
               custom_id: str | None = None, item: str = "Donation", currency: str = "USD", order: bool = True,
               listed: bool = True, code: str = "T0006", capture_id: str | None = None) -> dict[str, Any]:  # fmt: skip
        """A donation through PayPal Checkout: its order (with the payer) and its capture; returns the capture."""
        at = at or datetime.now(UTC)
        gross = Decimal(amount)
        fee = (gross * Decimal("0.0199") + Decimal("0.49")).quantize(Decimal("0.01"))
        capture_id, order_id = capture_id or _id("5C"), _id("9O")
        capture: dict[str, Any] = {
            "id": capture_id,
            "status": "COMPLETED",
            "amount": _money(gross, currency),
            "final_capture": True,
            "seller_receivable_breakdown": {
                "gross_amount": _money(gross, currency),
                "paypal_fee": _money(fee, currency),
                "net_amount": _money(gross - fee, currency),
            },  # fmt: skip
            "invoice_id": f"INV-{capture_id[-6:]}",
            "create_time": _iso(at),
            "update_time": _iso(at),
            "links": [{"href": f"{self.url}/v2/payments/captures/{capture_id}", "rel": "self", "method": "GET"}],
        }
        if custom_id:
            capture["custom_id"] = custom_id
        payer = {"email_address": email, "payer_id": _id(size=13), "name": {"given_name": given, "surname": surname},
                 "address": {"country_code": "US"}}  # fmt: skip
        if order:
            capture["supplementary_data"] = {"related_ids": {"order_id": order_id}}
            self.orders[order_id] = {
                "id": order_id,
                "status": "COMPLETED",
                "intent": "CAPTURE",
                "payment_source": {"paypal": {"email_address": email, "account_id": payer["payer_id"]}},
                "payer": payer,
                "purchase_units": [
                    {
                        "reference_id": "default",
                        "amount": _money(gross, currency),
                        "description": item,
                        "items": [{"name": item, "unit_amount": _money(gross, currency), "quantity": "1"}],
                        "payments": {"captures": [capture]},
                    }
                ],  # fmt: skip
                "create_time": _iso(at),
            }
        self.captures[capture_id] = capture
        row = self._row(capture_id, code, gross, currency, at, fee=fee, payer=payer, item=item, custom=custom_id)
        row["transaction_info"]["invoice_id"] = capture["invoice_id"]
        if listed:
            self.transactions.append(row)
        return capture

    def subscribe(self, amount: str, email: str, given: str = "Ada", surname: str = "Lovelace", *, plan_id: str = "P-MONTHLY",
                  at: datetime | None = None) -> dict[str, Any]:  # fmt: skip
        """A monthly subscription, active; returns it (its payments: ``charge``)."""
        at = at or datetime.now(UTC)
        subscription: dict[str, Any] = {
            "id": _id("I-"),
            "plan_id": plan_id,
            "status": "ACTIVE",
            "quantity": "1",
            "start_time": _iso(at),
            "create_time": _iso(at),
            "update_time": _iso(at),
            "subscriber": {"email_address": email, "payer_id": _id(size=13), "name": {"given_name": given, "surname": surname}},
            "billing_info": {
                "outstanding_balance": _money("0"),
                "cycle_executions": [],
                "failed_payments_count": 0,
                "last_payment": {"amount": _money(amount), "time": _iso(at)},
            },  # fmt: skip
            "links": [{"href": f"{self.url}/v1/billing/subscriptions/X", "rel": "self", "method": "GET"}],
        }
        subscription["amount"] = amount  # kept for charge(); left out of what the API answers
        self.subscriptions[subscription["id"]] = subscription
        return subscription

    def charge(self, subscription_id: str, *, at: datetime | None = None) -> dict[str, Any]:
        """One payment of a subscription (a v1 sale, ``PAYMENT.SALE.COMPLETED``'s resource); returns the sale."""
        at = at or datetime.now(UTC)
        subscription = self.subscriptions[subscription_id]
        gross = Decimal(subscription["amount"])
        fee = (gross * Decimal("0.0199") + Decimal("0.49")).quantize(Decimal("0.01"))
        sale: dict[str, Any] = {
            "id": _id("8S"),
            "state": "completed",
            "amount": {"total": f"{gross:.2f}", "currency": "USD"},
            "payment_mode": "INSTANT_TRANSFER",
            "transaction_fee": {"value": f"{fee:.2f}", "currency": "USD"},
            "billing_agreement_id": subscription_id,
            "create_time": _iso(at),
            "update_time": _iso(at),
            "links": [{"href": f"{self.url}/v1/payments/sale/X", "rel": "self", "method": "GET"}],
        }
        self.sales[sale["id"]] = sale
        payer = {"email_address": subscription["subscriber"]["email_address"], "name": subscription["subscriber"]["name"]}
        row = self._row(sale["id"], "T0002", gross, "USD", at, fee=fee, payer=payer, item=subscription["plan_id"])
        self.transactions.append(row)
        return sale

    def refund(self, capture_id: str, amount: str, *, at: datetime | None = None, reversal: bool = False) -> dict[str, Any]:
        """A refund (or, with ``reversal``, a reversal) of part of a capture; returns the refund resource."""
        at = at or datetime.now(UTC)
        capture = self.captures[capture_id]
        currency = capture["amount"]["currency_code"]
        refund: dict[str, Any] = {
            "id": _id("1R"),
            "status": "COMPLETED",
            "amount": _money(amount, currency),
            "create_time": _iso(at),
            "update_time": _iso(at),
            "links": [
                {"href": f"{self.url}/v2/payments/refunds/X", "rel": "self", "method": "GET"},
                {"href": f"{self.url}/v2/payments/captures/{capture_id}", "rel": "up", "method": "GET"},
            ],  # fmt: skip
        }
        refunded = sum(Decimal(r["amount"]["value"]) for r in capture.setdefault("refunds", []))
        capture["refunds"].append(refund)
        whole = refunded + Decimal(amount) >= Decimal(capture["amount"]["value"])
        capture["status"] = "REFUNDED" if whole else "PARTIALLY_REFUNDED"
        row = self._row(refund["id"], "T1106" if reversal else "T1107", -Decimal(amount), currency, at)
        row["transaction_info"]["paypal_reference_id"] = capture_id
        row["transaction_info"]["paypal_reference_id_type"] = "TXN"
        self.transactions.append(row)
        return refund

    def withdraw(self, amount: str, *, at: datetime | None = None) -> dict[str, Any]:
        """A withdrawal to the bank (``T0400``): a settlement line of ``reconcile payouts``."""
        row = self._row(_id("W"), "T0400", -Decimal(amount), "USD", at or datetime.now(UTC))
        self.transactions.append(row)
        return row

    def _row(self, txn_id: str, code: str, amount: Decimal, currency: str, at: datetime, *, fee: Decimal | None = None,
             payer: dict[str, Any] | None = None, item: str | None = None, custom: str | None = None) -> dict[str, Any]:  # fmt: skip
        info: dict[str, Any] = {"transaction_id": txn_id, "transaction_event_code": code,
                                "transaction_initiation_date": _iso(at), "transaction_updated_date": _iso(at),
                                "transaction_amount": _money(amount, currency), "transaction_status": "S",
                                "instrument_type": "PAYPAL"}  # fmt: skip
        if fee is not None:
            info["fee_amount"] = _money(-fee, currency)
        if custom:
            info["custom_field"] = custom
        row: dict[str, Any] = {"transaction_info": info}
        if payer:
            row["payer_info"] = {"account_id": _id(size=13), "email_address": payer["email_address"], "address_status": "Y",
                                 "payer_status": "Y", "payer_name": {"given_name": payer["name"]["given_name"],
                                 "surname": payer["name"]["surname"]}, "country_code": "US"}  # fmt: skip
        if item:
            row["cart_info"] = {"item_details": [{"item_name": item, "item_quantity": "1"}]}
        return row

    # -- its webhooks ---------------------------------------------------------------------------------------------

    def event(self, event_type: str, resource: dict[str, Any], *, resource_type: str = "capture") -> bytes:
        """A webhook event as PayPal sends it (and lists it afterwards); returns its body."""
        shown = self._shown_subscription(resource) if resource_type == "subscription" else resource
        event = {"id": _id("WH-"), "event_version": "1.0", "create_time": _iso(), "resource_type": resource_type,
                 "event_type": event_type, "summary": f"{event_type} (fake)",
                 "resource": {k: v for k, v in shown.items() if k != "refunds"},
                 "links": [{"href": f"{self.url}/v1/notifications/webhooks-events/X", "rel": "self", "method": "GET"}]}  # fmt: skip
        self.events.append(event)
        return json.dumps(event).encode()

    def sign(self, body: bytes, webhook_id: str, *, at: datetime | None = None, key: Any = None) -> dict[str, str]:
        """The five headers PayPal signs a delivery with (``certs.py`` says how)."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        transmission_id, moment = _id("tx-"), _iso(at)
        message = f"{transmission_id}|{moment}|{webhook_id}|{zlib.crc32(body)}".encode()
        signature = (key or _keys()["key"]).sign(message, padding.PKCS1v15(), hashes.SHA256())
        return {"PAYPAL-TRANSMISSION-ID": transmission_id, "PAYPAL-TRANSMISSION-TIME": moment,
                "PAYPAL-TRANSMISSION-SIG": base64.b64encode(signature).decode(), "PAYPAL-AUTH-ALGO": "SHA256withRSA",
                "PAYPAL-CERT-URL": f"{self.url}/v1/notifications/certs/{CERT_NAME}", "Content-Type": "application/json"}  # fmt: skip

    @property
    def cert_prefix(self) -> str:
        """What ``paypal.cert_url_prefixes`` lists so synctool fetches this fake's certificate."""
        return f"{self.url}/v1/notifications/certs/"

    @staticmethod
    def _shown_subscription(subscription: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in subscription.items() if k != "amount"}


def _error(status: int, name: str, message: str) -> JSONResponse:
    return JSONResponse({"name": name, "message": message, "debug_id": "fake"}, status_code=status)


def create_app(paypal: FakePayPal) -> Starlette:
    def authorised(request: Request) -> bool:
        given = request.headers.get("authorization", "")
        return given.startswith("Bearer ") and given[7:] in paypal.tokens

    def refused() -> JSONResponse:
        return _error(401, "AUTHENTICATION_FAILURE", "Authentication failed due to invalid authentication credentials")

    async def token(request: Request) -> JSONResponse:
        given = request.headers.get("authorization", "")
        try:
            _, secret = base64.b64decode(given.removeprefix("Basic ")).decode().split(":", 1)
        except ValueError:
            secret = ""
        form = dict(parse_qsl((await request.body()).decode("latin-1")))
        if not given.startswith("Basic ") or secret != paypal.key or form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "invalid_client", "error_description": "Client Authentication failed"}, 401)
        made = "A21AA" + random.token_urlsafe(24)
        paypal.tokens.add(made)
        return JSONResponse({"scope": "https://uri.paypal.com/services/reporting/search/read", "access_token": made,
                             "token_type": "Bearer", "app_id": "APP-FAKE", "expires_in": 32400, "nonce": "fake"})  # fmt: skip

    def shown(found: dict[str, Any] | None, what: str) -> JSONResponse:
        if found is None:
            return _error(404, "RESOURCE_NOT_FOUND", f"The specified {what} does not exist.")
        return JSONResponse(FakePayPal._shown_subscription(found) if what == "subscription" else found)

    async def order(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        return shown(paypal.orders.get(request.path_params["id"]), "order")

    async def capture(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        found = paypal.captures.get(request.path_params["capture_id"])
        return shown({k: v for k, v in found.items() if k != "refunds"} if found else None, "capture")

    async def subscription(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        return shown(paypal.subscriptions.get(request.path_params["id"]), "subscription")

    async def transactions(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        q = request.query_params
        try:
            start = datetime.fromisoformat(q["start_date"].replace("Z", "+00:00"))
            end = datetime.fromisoformat(q["end_date"].replace("Z", "+00:00"))
        except (KeyError, ValueError):
            return _error(400, "INVALID_REQUEST", "start_date and end_date are required")
        if end - start > timedelta(days=31):
            return _error(400, "INVALID_REQUEST", "Date range is greater than 31 days")
        page, size = int(q.get("page", "1")), int(q.get("page_size", "100"))
        rows = [t for t in paypal.transactions
                if start <= datetime.fromisoformat(t["transaction_info"]["transaction_initiation_date"].replace("Z", "+00:00")) <= end
                and q.get("transaction_id") in (None, t["transaction_info"]["transaction_id"])]  # fmt: skip
        pages = max(1, -(-len(rows) // size))
        answer: dict[str, Any] = {"account_number": "FAKEACCOUNT", "start_date": q["start_date"], "end_date": q["end_date"],
                                  "last_refreshed_datetime": _iso(), "page": page, "total_items": len(rows),
                                  "total_pages": pages,
                                  "links": [{"href": f"{paypal.url}/v1/reporting/transactions", "rel": "self", "method": "GET"}]}  # fmt: skip
        shown = rows[(page - 1) * size : page * size]
        if shown:  # the description has at least one row where the list is given
            answer["transaction_details"] = shown
        return JSONResponse(answer)

    async def webhooks(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        if request.method == "POST":
            body = await request.json()
            if not str(body.get("url", "")).startswith("https://"):
                return _error(400, "INVALID_REQUEST", "url must be https")
            made = {"id": _id("WH"), "url": body["url"], "event_types": [{"name": e["name"]} for e in body["event_types"]],
                    "links": []}  # fmt: skip
            paypal.webhooks.append(made)
            return JSONResponse(made, status_code=201)
        return JSONResponse({"webhooks": paypal.webhooks})

    async def webhook(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        found = next((w for w in paypal.webhooks if w["id"] == request.path_params["webhook_id"]), None)
        if found is None:
            return _error(404, "INVALID_RESOURCE_ID", "Webhook not found")
        for op in await request.json():
            found[op["path"].strip("/")] = op["value"]
        return JSONResponse(found)

    async def events(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        q = request.query_params
        start, end = q.get("start_time", ""), q.get("end_time", "9999")
        listed = [e for e in reversed(paypal.events) if start <= e["create_time"] <= end]
        return JSONResponse({"events": listed, "count": len(listed), "links": []})

    async def verify(request: Request) -> JSONResponse:
        if not authorised(request):
            return refused()
        body = await request.json()
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        raw = json.dumps(body["webhook_event"]).encode()  # PayPal checks the event it is sent
        message = f"{body['transmission_id']}|{body['transmission_time']}|{body['webhook_id']}|{zlib.crc32(raw)}".encode()
        try:
            _keys()["key"].public_key().verify(base64.b64decode(body["transmission_sig"]), message, padding.PKCS1v15(),
                                               hashes.SHA256())  # fmt: skip
            status = "SUCCESS"
        except (InvalidSignature, ValueError):
            status = "FAILURE"
        return JSONResponse({"verification_status": status})

    async def cert(request: Request) -> Response:
        if request.path_params["cert_id"] != CERT_NAME:
            return _error(404, "RESOURCE_NOT_FOUND", "no such certificate")
        return Response(_keys()["pem"], media_type="application/x-pem-file")

    return Starlette(
        routes=[
            Route("/v1/oauth2/token", token, methods=["POST"]),
            Route("/v2/checkout/orders/{id}", order),
            Route("/v2/payments/captures/{capture_id}", capture),
            Route("/v1/billing/subscriptions/{id}", subscription),
            Route("/v1/reporting/transactions", transactions),
            Route("/v1/notifications/webhooks", webhooks, methods=["GET", "POST"]),
            Route("/v1/notifications/webhooks/{webhook_id}", webhook, methods=["PATCH"]),
            Route("/v1/notifications/webhooks-events", events),
            Route("/v1/notifications/verify-webhook-signature", verify, methods=["POST"]),
            Route("/v1/notifications/certs/{cert_id}", cert),
        ]
    )
