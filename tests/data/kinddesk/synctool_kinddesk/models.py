"""KindDesk's payloads, as synctool reads them: strict where money is decided (ids, amounts, the donor's e-mail),
lenient elsewhere (a bad name, time zone or method takes its default and the gift goes on)."""

from __future__ import annotations

from decimal import Decimal

from pydantic import Field

from synctool.platform import Lenient, Moment, Payload

ROLE = "kind"


def external_id(gift_id: str) -> str:
    """The CRM gift external id of a KindDesk gift: ``kind_<id>`` (``Platform.external_id_prefixes``)."""
    return f"kind_{gift_id}"


class GiftRefund(Payload):
    """One refund as a gift lists it (``gift.refunds[]``): ``{id, amount, currency, created_at, timezone}``."""

    id: str = Field(min_length=1)
    amount: Decimal
    #: the currency KindDesk names (strict: another than the organisation's holds the job)
    currency: str | None = None
    created_at: Lenient[Moment | None] = None
    #: where the refund was given (IANA); its day is read in it
    timezone: Lenient[str | None] = None


class RefundData(GiftRefund):
    """One refund as its webhook (``gift.refunded``) and its job carry it: a gift's refund, with its ``gift_id``."""

    gift_id: str = Field(min_length=1)


class Gift(Payload):
    """A KindDesk gift: ``{id, amount, currency, email, first_name, last_name, created_at, timezone, method,
    recurring, refunds: [...]}``."""

    id: str = Field(min_length=1)
    amount: Decimal
    email: str = Field(min_length=3)
    #: the currency KindDesk names (strict: another than the organisation's holds the job)
    currency: str | None = None
    first_name: Lenient[str | None] = None
    last_name: Lenient[str | None] = None
    created_at: Lenient[Moment | None] = None
    timezone: Lenient[str | None] = None
    #: how it was paid: ``card``, ``paypal``, ``ach`` (the payment mapping's key ``kind:<method>``)
    method: Lenient[str] = "card"
    #: a monthly gift (its mapping key ``kind:monthly`` is looked up before ``kind:default``)
    recurring: Lenient[bool] = False
    note: Lenient[str | None] = None
    #: the subscription it is a charge of (noted on its plan: ``plans.record_charge``)
    subscription_id: Lenient[str | None] = None
    #: its refunds so far (strict: what the CRM gift should hold after them is money decided)
    refunds: list[GiftRefund] = []

    @property
    def refunded(self) -> Decimal:
        return sum((r.amount for r in self.refunds), Decimal("0.00"))


class Subscription(Payload):
    """A KindDesk subscription (a monthly donor): ``{id, amount, currency, email, first_name, last_name, interval,
    status, started_at, cancelled_at, next_payment_date, updated_at}``. Lenient but for its id: no money is decided
    from it (each charge is a gift of its own)."""

    id: str = Field(min_length=1)
    email: Lenient[str | None] = None
    first_name: Lenient[str | None] = None
    last_name: Lenient[str | None] = None
    amount: Lenient[Decimal | None] = None
    currency: Lenient[str | None] = None
    #: ``month``, ``quarter``, ``year``
    interval: Lenient[str] = "month"
    #: ``active``, ``past_due``, ``paused``, ``cancelled``
    status: Lenient[str | None] = None
    started_at: Lenient[Moment | None] = None
    cancelled_at: Lenient[Moment | None] = None
    next_payment_date: Lenient[str | None] = None
    updated_at: Lenient[Moment | None] = None
