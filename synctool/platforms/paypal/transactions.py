"""PayPal's Transaction Search rows (``transaction_detail``, reporting_transactions_v1.json) in synctool's terms:
a payment received becomes a ``Donation``'s fields, a refund, reversal or chargeback a ``RefundData``'s, a
withdrawal to the bank a settlement line. Read by the poll, reconcile, backfill and payouts.

The event code (``transaction_event_code``, https://developer.paypal.com/docs/transaction-search/transaction-event-codes/)
says which: ``T00nn`` a payment (``T0002`` a subscription's, ``T0006`` PayPal Checkout, ``T0013`` a donation),
``T11nn`` a reversal (``T1107`` a refund, ``T1106`` a reversal) and ``T12nn`` a chargeback, ``T04nn`` a withdrawal
to the bank; ``transaction_status`` ``S`` is a completed one."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from synctool.platform import JsonObject, text


def _obj(value: object) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _info(detail: JsonObject) -> JsonObject:
    return _obj(detail.get("transaction_info"))


def _value(money: object) -> Decimal | None:
    if not isinstance(money, dict):
        return None
    try:
        return Decimal(str(money.get("value")))
    except (InvalidOperation, ValueError):
        return None


def code(detail: JsonObject) -> str:
    return str(_info(detail).get("transaction_event_code") or "")


def is_payment(detail: JsonObject) -> bool:
    info = _info(detail)
    amount = _value(info.get("transaction_amount"))
    return code(detail).startswith("T00") and info.get("transaction_status") == "S" and amount is not None and amount > 0


def is_refund(detail: JsonObject) -> bool:
    return code(detail).startswith(("T11", "T12")) and bool(_info(detail).get("paypal_reference_id"))


def is_withdrawal(detail: JsonObject) -> bool:
    return code(detail).startswith("T04")


def donation(detail: JsonObject) -> dict[str, Any]:
    """A payment row as a ``Donation``'s fields (``models.Donation`` checks them when its job runs)."""
    info, payer = _info(detail), _obj(detail.get("payer_info"))
    name, cart = _obj(payer.get("payer_name")), _obj(detail.get("cart_info"))
    items = [i for i in cart.get("item_details") or [] if isinstance(i, dict)]
    fee = _value(info.get("fee_amount"))
    amount = info.get("transaction_amount") if isinstance(info.get("transaction_amount"), dict) else None
    gross = _value(amount)
    # a subscription's payment (T0002) is coded recurring; its row names no subscription id synctool could read
    # (``paypal_reference_id`` is ``^[a-zA-Z0-9]*$`` in the description, and a subscription's id is ``I-...``):
    # its plan's charge is noted by its webhook (PAYMENT.SALE.COMPLETED names ``billing_agreement_id``)
    return {
        "id": text(info.get("transaction_id")),
        "amount": amount,
        "payer": {
            "email_address": payer.get("email_address"),
            "name": {"given_name": name.get("given_name"), "surname": name.get("surname")},
            "address": payer.get("address"),
        },  # fmt: skip
        "fee": str(abs(fee)) if fee is not None else None,
        "net": str(gross - abs(fee)) if gross is not None and fee is not None else None,
        "custom_id": text(info.get("custom_field")),
        "invoice_id": text(info.get("invoice_id")),
        "item": text(items[0].get("item_name")) if items else None,
        "recurring": code(detail) == "T0002",
        "source": str(info.get("instrument_type") or "paypal").lower(),
        "create_time": text(info.get("transaction_initiation_date")),
    }


def refund(detail: JsonObject) -> dict[str, Any]:
    """A reversal row as a ``RefundData``'s fields: its amount positive, the payment it takes back from named."""
    info = _info(detail)
    amount = _obj(info.get("transaction_amount"))
    value = _value(amount)
    kind = "refund" if code(detail) == "T1107" else "reversal"
    return {"id": text(info.get("transaction_id")), "payment_id": text(info.get("paypal_reference_id")),
            "amount": {"currency_code": amount.get("currency_code"), "value": str(abs(value)) if value is not None else None},
            "create_time": text(info.get("transaction_initiation_date")), "kind": kind}  # fmt: skip
