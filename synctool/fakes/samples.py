"""Real-shaped payloads from the reference notes, and signers, shared by the demo, the tests and the benches."""

from __future__ import annotations

import json
import uuid

GIVEBUTTER_TRANSACTION = {
    "id": "QiN7blzUhiwXBVBr",
    "number": "4212",
    "campaign_id": 118722,
    "campaign_code": "7NQKTF",
    "plan_id": None,
    "team_id": None,
    "member_id": None,
    "fund_id": None,
    "fund_code": None,
    "contact_id": 21993417,
    "first_name": "Ada",
    "last_name": "Lovelace",
    "company": None,
    "email": "Ada.Lovelace@Example.org",
    "phone": "+14155551212",
    "address": {
        "address_1": "12 Analytical Way",
        "address_2": None,
        "city": "Oakland",
        "state": "CA",
        "zipcode": "94607",
        "country": "USA",
    },
    "status": "succeeded",
    "method": "card",
    "payment_method": "card",
    "amount": 10,
    "fee": 0.61,
    "fee_covered": 0.61,
    "donated": 10,
    "payout": 10,
    "currency": "USD",
    "transacted_at": "2024-02-03T20:49:24+00:00",
    "created_at": "2024-02-03T20:49:24+00:00",
    "giving_space": {"id": 1, "name": "Ada", "amount": 10, "message": "Keep going"},
    "dedication": None,
    "transactions": [
        {
            "id": "2277824212",
            "plan_id": None,
            "amount": 10,
            "fee": 0.61,
            "fee_covered": 0.61,
            "donated": 10,
            "payout": 10,
            "captured": True,
            "captured_at": "2024-02-03T20:49:24+00:00",
            "refunded": False,
            "refunded_at": None,
            "line_items": [
                {
                    "type": "donation",
                    "subtype": "donation",
                    "description": "Donation",
                    "quantity": 1,
                    "price": 10,
                    "discount": 0,
                    "total": 10,
                }
            ],
        }
    ],
    "custom_fields": [
        {"id": 1, "field_id": 77, "title": "How did you hear about us?", "description": None, "type": "text", "value": "A friend"}
    ],
    "utm_parameters": [],
    "external_id": None,
    "communication_opt_in": True,
    "session_id": "s-1",
}


#: Givebutter's ``dedication`` object (null when the donor made none)
GIVEBUTTER_DEDICATION = {
    "type": "in_memory_of",
    "name": "Rose Parks",
    "recipient": {"name": "Ray Parks", "email": "ray.parks@example.org"},
}


def givebutter_refund(transaction: dict, *, as_transaction: bool = False, amount: float | None = None) -> dict:
    """``refund.created`` data, which Givebutter publishes no schema for: a refund object naming its
    transaction, or the refunded transaction itself."""
    if as_transaction:
        parts = [{**t, "refunded": True, "refunded_at": "2024-02-05T16:00:00+00:00"} for t in transaction["transactions"]]
        return {**transaction, "refunded": True, "refunded_at": "2024-02-05T16:00:00+00:00", "transactions": parts}
    return {
        "id": f"rf_{transaction['id']}",
        "transaction_id": transaction["id"],
        "amount": transaction["amount"] if amount is None else amount,
        "reason": "requested_by_customer",
        "created_at": "2024-02-05T16:00:00+00:00",
    }


def stripe_session(
    payment_id: str, user_id: str, amount: int, *, payment_status: str = "paid", method: str = "card", **meta: str
) -> dict:
    """A Checkout Session as ``checkout.session.*`` events carry it; the portal's ids are in ``metadata``."""
    return {
        "id": f"cs_test_{payment_id}",
        "object": "checkout.session",
        "amount_total": amount,
        "amount_subtotal": amount,
        "currency": "usd",
        "payment_status": payment_status,
        "status": "complete",
        "payment_intent": f"pi_{payment_id}",
        "mode": "payment",
        "payment_method_types": [method],
        "customer_details": {"email": f"{user_id}@example.org", "name": "Pat Member"},
        "metadata": {"portal_payment_id": payment_id, "portal_user_id": user_id, **meta},
    }


def givebutter(event: str, data: dict, event_id: str | None = None) -> bytes:
    return json.dumps({"event": event, "id": event_id or str(uuid.uuid4()), "data": data}).encode()


def square_order_event(
    order_id: str,
    state: str = "COMPLETED",
    event_type: str = "order.updated",
    event_id: str | None = None,
    location_id: str = "FPYCBCHYMXFK1",
) -> bytes:
    key = "order_updated" if event_type == "order.updated" else "order_created"
    return json.dumps(
        {
            "merchant_id": "5S9MXCS9Y99KK",
            "type": event_type,
            "event_id": event_id or str(uuid.uuid4()),
            "created_at": "2020-04-16T23:14:26.129Z",
            "data": {
                "type": "order",
                "id": order_id,
                "object": {
                    key: {
                        "created_at": "2020-04-16T23:14:26.129Z",
                        "location_id": location_id,
                        "order_id": order_id,
                        "state": state,
                        "version": 1,
                    }
                },
            },
        },
        separators=(",", ":"),
    ).encode()


def square_payment_event(
    payment_id: str, order_id: str | None, cents: int = 1250, event_type: str = "payment.created", event_id: str | None = None
) -> bytes:
    payment = {
        "id": payment_id,
        "amount_money": {"amount": cents, "currency": "USD"},
        "total_money": {"amount": cents, "currency": "USD"},
        "status": "COMPLETED",
        "source_type": "CARD",
        "location_id": "FPYCBCHYMXFK1",
        "created_at": "2026-11-20T18:00:00.000Z",
    }
    if order_id:
        payment["order_id"] = order_id
    return square_notice("payment", payment, event_type, event_id, "2026-11-20T18:00:01.000Z")


def square_refund_event(
    refund_id: str,
    payment_id: str,
    cents: int,
    *,
    status: str = "COMPLETED",
    order_id: str | None = None,
    event_type: str = "refund.created",
    event_id: str | None = None,
) -> bytes:
    """A ``refund.created`` / ``refund.updated`` notification: ``data.object.refund`` is a PaymentRefund."""
    refund = {
        "id": refund_id,
        "status": status,
        "amount_money": {"amount": cents, "currency": "USD"},
        "payment_id": payment_id,
        "location_id": "FPYCBCHYMXFK1",
        "reason": "Returned goods",
        "created_at": "2026-11-21T17:00:00.000Z",
        "updated_at": "2026-11-21T17:00:05.000Z",
    }
    if order_id:
        refund["order_id"] = order_id
    return square_refund_notice(refund, event_type, event_id)


def square_refund_notice(refund: dict, event_type: str = "refund.created", event_id: str | None = None) -> bytes:
    """The notification of a PaymentRefund (as ``FakeSquare.refund_payment`` makes one, return order and all)."""
    return square_notice("refund", refund, event_type, event_id, "2026-11-21T17:00:06.000Z")


def square_notice(kind: str, item: dict, event_type: str, event_id: str | None, created_at: str) -> bytes:
    """A Square notification about one ``kind`` of object (``payment``, ``refund``): ``data.object.<kind>``."""
    return json.dumps(
        {
            "merchant_id": "5S9MXCS9Y99KK",
            "type": event_type,
            "event_id": event_id or str(uuid.uuid4()),
            "created_at": created_at,
            "data": {"type": kind, "id": item["id"], "object": {kind: item}},
        }
    ).encode()


def stripe_charge(
    charge_id: str, amount: int, refunded: int, *, payment_intent: str | None = None, refund_id: str | None = None, **meta: str
) -> dict:
    """A Charge as ``charge.refunded`` carries it: ``amount_refunded`` is the running total in cents."""
    charge = {
        "id": charge_id,
        "object": "charge",
        "amount": amount,
        "amount_captured": amount,
        "amount_refunded": refunded,
        "refunded": refunded >= amount,
        "currency": "usd",
        "paid": True,
        "status": "succeeded",
        "payment_intent": payment_intent,
        "metadata": meta,
        "created": 1763740000,
    }
    if refund_id:  # older API versions list the refunds on the charge
        charge["refunds"] = {
            "object": "list",
            "data": [{"id": refund_id, "object": "refund", "amount": refunded, "status": "succeeded", "created": 1763750000}],
            "has_more": False,
        }
    return charge


def mailchimp_unsubscribe(
    email: str = "jane.doe@example.org", list_id: str = "b7e21c0d94", fired_at: str = "2024-05-02 14:03:11"
) -> bytes:
    from urllib.parse import urlencode

    return urlencode(
        [
            ("type", "unsubscribe"),
            ("fired_at", fired_at),
            ("data[action]", "unsub"),
            ("data[reason]", "manual"),
            ("data[id]", "3f1c9a7be2"),
            ("data[email]", email),
            ("data[email_type]", "html"),
            ("data[ip_opt]", "203.0.113.7"),
            ("data[web_id]", "412937551"),
            ("data[list_id]", list_id),
            ("data[campaign_id]", "9d0a5c11fe"),
            ("data[merges][EMAIL]", email),
            ("data[merges][FNAME]", "Jane"),
            ("data[merges][LNAME]", "Doe"),
            ("data[merges][PHONE]", ""),
            ("data[merges][INTERESTS]", "Weekly,Offers"),
        ]
    ).encode()


MAILCHIMP_CLEANED_WIRE = (
    b"type=cleaned&fired_at=2024-05-02+15%3A20%3A45&data%5Blist_id%5D=b7e21c0d94"
    b"&data%5Breason%5D=hard&data%5Bemail%5D=bounced.user%40example.net"
)


def stripe_event(event_type: str, obj: dict, event_id: str | None = None) -> bytes:
    return json.dumps(
        {
            "id": event_id or f"evt_{uuid.uuid4().hex[:24]}",
            "object": "event",
            "type": event_type,
            "created": 1714650000,
            "livemode": False,
            "api_version": "2026-10-28.endive",
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "data": {"object": obj},
        }
    ).encode()


def square_signature(key: str, url: str, body: bytes) -> str:
    from synctool.platforms.square.webhook import signature

    return signature(key, url, body)
