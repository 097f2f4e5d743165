"""The member portal: signed pushes of its records to ``/webhooks/portal``.

``Synctool-Signature: t=<unix>,v1=<hex>``, v1 = HMAC-SHA256(``PORTAL_WEBHOOK_SECRET``, ``"<t>." + raw body``),
300 s tolerance (the same scheme as Stripe). Body: ``{id, type, data}`` with ``id`` unique per push.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from synctool.platform import Event, InvalidInput, JobSpec, WebhookSecrets, parse_json_object, text, verify_signed_delivery

SIGNATURE_HEADER = "synctool-signature"
KEPT_HEADERS = (SIGNATURE_HEADER, "content-type", "user-agent")


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    verify_signed_delivery(
        body, headers, SIGNATURE_HEADER, secrets.get("PORTAL_WEBHOOK_SECRET"), "PORTAL_WEBHOOK_SECRET", secrets.tolerance_s, now
    )


def parse_webhook(body: bytes) -> Event:
    push = parse_json_object(body)
    event_id = text(push.get("id"))
    if not event_id:
        raise InvalidInput("missing id", "a portal push is {id, type, data}")
    event_type = text(push.get("type"))
    if not event_type:
        raise InvalidInput("missing type", "a portal push is {id, type, data}")
    found = push.get("data")
    data: dict[str, Any] = found if isinstance(found, dict) else {}
    kind = record_type(event_type)
    if kind is None:
        job = JobSpec(
            "event",
            event_id,
            target="portal",
            status="skipped",
            message=f"{event_type}: unknown portal record type (one of {', '.join(RECORD_TYPES)})",
        )
    else:
        job = JobSpec("push", f"{kind}:{data.get('id') or '?'}", target="portal", email=text(data.get("email")))
    return Event(event_id, event_type, job, push)


# -- the record shapes the portal pushes (and `synctool portal import` reads) ------------------------

RECORD_TYPES = ("user", "product", "membership", "payment", "enrollment", "family_link")


def record_models():
    """Pydantic models of the six record types (built on first use: pydantic is slow to import)."""
    global _MODELS
    if _MODELS is None:
        _MODELS = _build_models()
    return _MODELS


_MODELS = None


def _build_models():
    from typing import Literal, Optional

    from pydantic import BaseModel, ConfigDict, Field, field_validator

    class Record(BaseModel):
        model_config = ConfigDict(extra="ignore", coerce_numbers_to_str=True)
        id: str = Field(min_length=1)

    class User(Record):
        email: str = Field(min_length=3)
        first_name: Optional[str] = None
        last_name: Optional[str] = None
        phone: Optional[str] = None
        billing_address_1: Optional[str] = None
        billing_address_2: Optional[str] = None
        billing_city: Optional[str] = None
        billing_state: Optional[str] = None
        billing_postcode: Optional[str] = None
        billing_country: Optional[str] = None

        @field_validator("email")
        @classmethod
        def has_at(cls, value: str) -> str:
            if "@" not in value:
                raise ValueError("not an e-mail address")
            return value.strip()

    class Product(Record):
        name: Optional[str] = None
        category: Literal["membership", "family_addon", "class", "event", "donation", "other"]
        level: Optional[str] = None

    class Membership(Record):
        user_id: str
        product_id: Optional[str] = None
        level: Optional[str] = None
        status: str = "pending"
        start_date: Optional[str] = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}$")
        renewal_date: Optional[str] = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}$")
        subsidy_tier: Optional[Literal["none", "partial", "full"]] = None

    class Item(Record):
        product_id: Optional[str] = None
        category: Optional[Literal["membership", "family_addon", "class", "event", "donation", "other"]] = None
        description: Optional[str] = None
        quantity: int = Field(1, ge=1)
        amount_cents: int = Field(ge=0)

    class Payment(Record):
        user_id: str
        type: Literal["membership", "enrollment", "donation", "cart"]
        status: str = "pending"
        gateway: Optional[str] = None
        amount_cents: int = Field(ge=0)
        created_at: Optional[str] = None
        payment_intent_id: Optional[str] = None
        membership_id: Optional[str] = None
        enrollment_id: Optional[str] = None
        scholarship: bool = False
        #: ISO 4217 (Stripe's ``currency`` sets it when the portal's push does not): another than the
        #: organisation's holds the payment's gifts (``crm.currency``)
        currency: Optional[str] = None
        items: list[Item] = []

    class Enrollment(Record):
        user_id: str
        product_id: Optional[str] = None
        payment_id: Optional[str] = None
        status: str = "pending"

    class FamilyLink(Record):
        primary_user_id: str
        member_user_id: str
        crm_relationship_type_id: Optional[str] = None

    return {
        "user": User,
        "product": Product,
        "membership": Membership,
        "payment": Payment,
        "enrollment": Enrollment,
        "family_link": FamilyLink,
    }


def record_type(push_type: str) -> str | None:
    """``user.upsert`` or ``user`` -> ``user``; None for a type synctool does not know."""
    base = push_type.split(".", 1)[0]
    return base if base in RECORD_TYPES else None
