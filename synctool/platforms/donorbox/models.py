"""Donorbox's records as synctool reads them: strict where money is decided (ids, amounts, the refunded total, the
currency, the donor's e-mail), lenient elsewhere (a bad name, address, comment or date takes its default and the
gift goes on).

Source: Donorbox's API documentation (github.com/donorbox/donorbox-api README.md, commit e6b4daf, 2024-04-16:
``GET /api/v1/donations``, ``/plans``, ``/campaigns``), the same shapes its custom webhooks carry
(donorbox.zendesk.com/hc/en-us/articles/4733681068820-Custom-Webhooks). A field marked *unconfirmed* below is in
neither: it is read when present and never required."""

from __future__ import annotations

from decimal import Decimal
from typing import Optional

from pydantic import Field

from synctool.platform import Lenient, Moment, Payload, PostalAddress, Text

ROLE = "donorbox"
NAME = "Donorbox"
ZERO = Decimal("0.00")
#: a donation's ``status`` in which money moved (documented: ``paid``; ``refunded`` is the status of a donation
#: refunded whole: *unconfirmed* as a word, read as money that moved and was given back)
PAID = ("paid", "refunded", "partially_refunded")


def external_id(donation_id: object) -> str:
    """The CRM gift external id of a Donorbox donation: ``donorbox_<id>`` (``Platform.external_id_prefixes``)."""
    return f"{ROLE}_{donation_id}"


class Campaign(Payload):
    """``campaign: {id, name}``: the Donorbox campaign (its form) the donation was given on."""

    id: Lenient[Optional[Text]] = None
    name: Lenient[Optional[str]] = None


class DonorAddress(PostalAddress):
    """The donor's address as Donorbox names its fields (``address``, ``address_line_2``, ``zip_code``)."""

    model_config = PostalAddress.named(line_1="address", line_2="address_line_2", postal_code="zip_code")


class Donor(Payload):
    """``donor: {id, name, first_name, last_name, email, phone, address, city, state, zip_code, country, employer}``."""

    id: Lenient[Optional[Text]] = None
    first_name: Lenient[Optional[str]] = None
    last_name: Lenient[Optional[str]] = None
    name: Lenient[Optional[str]] = None
    #: the e-mail that keys the person (strict: a bad one fails the job, naming it)
    email: Optional[str] = Field(None, max_length=320)
    phone: Lenient[Optional[str]] = None
    employer: Lenient[Optional[str]] = None


class Dedication(Payload):
    """A donation given in honour or in memory of someone. *Unconfirmed*: Donorbox's forms offer a dedication,
    but neither its API documentation nor its webhook samples show the field; read as ``{type, name, email}``
    when present."""

    type: Lenient[Optional[str]] = None
    name: Lenient[Optional[str]] = None
    email: Lenient[Optional[str]] = None


class Donation(Payload):
    """One Donorbox donation, as ``GET /api/v1/donations`` lists it and ``donation.created`` carries it."""

    id: Text = Field(min_length=1, max_length=64)
    #: the amount given, a decimal string (``"100.0"``)
    amount: Decimal = Field(max_digits=14, decimal_places=4)
    #: Donorbox's running total of what was refunded of it (``"0.0"``): each refund is what this adds
    amount_refunded: Decimal = Field(ZERO, max_digits=14, decimal_places=4)
    #: the currency it was given in (``"USD"``; strict: another than the organisation's holds the job)
    currency: Optional[str] = Field(None, pattern=r"^[A-Za-z]{3}$")
    status: str = "paid"
    donor: Donor = Donor()
    campaign: Lenient[Campaign] = Campaign()
    donation_date: Lenient[Optional[Moment]] = None
    recurring: Lenient[bool] = False
    first_recurring_donation: Lenient[bool] = False
    #: ``stripe``, ``paypal``, ... (the payment mapping's key ``donorbox:<donation_type>``)
    donation_type: Lenient[str] = "unknown"
    processing_fee: Lenient[Optional[Decimal]] = None
    designation: Lenient[Optional[str]] = None
    comment: Lenient[Optional[str]] = None
    donating_company: Lenient[Optional[str]] = None
    join_mailing_list: Lenient[bool] = False
    #: the plan a recurring charge belongs to (*unconfirmed*: seen in a production integration's handler of
    #: ``donation.created``, not in Donorbox's samples)
    plan_id: Lenient[Optional[Text]] = None
    #: *unconfirmed*: the deductible part where a donation says it (Donorbox documents it on tickets only)
    tax_deductible_amount: Lenient[Optional[Decimal]] = None
    dedication: Lenient[Optional[Dedication]] = None
    #: the donor's address (Donorbox repeats it at the donation's top level and in ``donor``)
    address: Lenient[Optional[str]] = None
    address_line_2: Lenient[Optional[str]] = None
    city: Lenient[Optional[str]] = None
    state: Lenient[Optional[str]] = None
    zip_code: Lenient[Optional[str]] = None
    country: Lenient[Optional[str]] = None

    @property
    def refunded(self) -> Decimal:
        return min(max(self.amount_refunded, ZERO), self.amount)

    @property
    def paid(self) -> bool:
        return self.status.lower() in PAID


class Plan(Payload):
    """One Donorbox recurring plan, as ``GET /api/v1/plans`` lists it (``plan.*`` webhooks carry it too)."""

    id: Text = Field(min_length=1, max_length=64)
    amount: Decimal = Field(max_digits=14, decimal_places=4)
    #: ``active``, ``cancelled``, ``failed``, ... (documented: ``active``; the others *unconfirmed*)
    status: str = Field(min_length=1, max_length=40)
    #: ``monthly``, ``quarterly``, ``annually``, ...
    type: Lenient[str] = "monthly"
    currency: Optional[str] = Field(None, pattern=r"^[A-Za-z]{3}$")
    donor: Donor = Donor()
    campaign: Lenient[Campaign] = Campaign()
    payment_method: Lenient[Optional[str]] = None
    started_at: Lenient[Optional[str]] = None
    last_donation_date: Lenient[Optional[str]] = None
    next_donation_date: Lenient[Optional[str]] = None
