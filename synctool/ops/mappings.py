"""Mapping operations: type defaults, campaign and fund overrides, payment methods and custom fields (spec:
/api/mappings/*), each validated against the cached CRM reference lists."""

from __future__ import annotations

import sqlite3
from typing import Any, Literal, Optional

from pydantic import Field, RootModel

from synctool import mappings, platforms, store
from synctool.crm.references import listing
from synctool.crm.references import require as require_reference
from synctool.errors import InvalidInput, one_of
from synctool.validation import Body

REFERENCE_KIND = {
    "fund_id": "funds",
    "campaign_id": "campaigns",
    "appeal_id": "appeals",
    "gift_category_id": "gift-categories",
    "payment_type_id": "payment-types",
    "gift_type_id": "gift-types",
}


def validated(conn: sqlite3.Connection, values: dict[str, Any]) -> dict[str, Any]:
    """Drop unset values and check every CRM id against the cache (unknown ids list the valid choices)."""
    clean = {k: v for k, v in values.items() if v is not None}
    for field, value in clean.items():
        if field in REFERENCE_KIND:
            require_reference(conn, REFERENCE_KIND[field], value)
            clean[field] = int(value)
    return clean


def set_type_default(conn: sqlite3.Connection, key: str, **values: Any) -> dict[str, Any]:
    allowed = [f"{p.role}:{t}" for p in platforms.registered() for t in p.mappings.types]
    one_of(key, allowed, "type")
    value = validated(conn, values)
    if not value:
        raise InvalidInput("nothing to set", "give at least --fund-id or --campaign-id")
    mappings.put(conn, "type_default", key, value)
    return {"key": key, **value}


class Coding(Body):
    fund_id: Optional[int] = None
    campaign_id: Optional[int] = None
    appeal_id: Optional[int] = None
    gift_category_id: Optional[int] = None


class OverrideBody(Coding):
    """Spec: POST /api/mappings/overrides: the coding for one donation-platform campaign."""

    campaign: str = Field(min_length=1)


class FundOverrideBody(Body):
    """POST /api/mappings/funds: the CRM fund for one Givebutter fund (its code, or its id)."""

    fund: str = Field(min_length=1)
    fund_id: int


class LocationOverride(Body):
    location_id: str = Field(min_length=1)
    fund_id: Optional[int] = None
    campaign_id: Optional[int] = None
    #: ``none``: a sale here is not a gift of its full price (a shop), so its deductible amount is 0
    deductible: Optional[Literal["none", "full"]] = None


#: spec: PUT /api/pos/location-overrides: the whole set
LocationOverrides = RootModel[list[LocationOverride]]


def set_campaign_override(conn: sqlite3.Connection, body: OverrideBody) -> dict[str, Any]:
    value = validated(conn, body.model_dump(exclude={"campaign"}))
    if not value:
        raise InvalidInput("nothing to set", "give at least --fund-id or --campaign-id")
    mappings.put(conn, "campaign_override", body.campaign, value)
    return {"key": body.campaign, **value}


def set_location_override(conn: sqlite3.Connection, body: LocationOverride) -> dict[str, Any]:
    value = validated(conn, body.model_dump(exclude={"location_id"}))
    mappings.put(conn, "location_override", body.location_id, value)
    return {"location_id": body.location_id, **value}


def replace_location_overrides(conn: sqlite3.Connection, overrides: LocationOverrides) -> list[dict[str, Any]]:
    """PUT semantics (spec: PUT /api/pos/location-overrides): the list given becomes the whole set."""
    checked = [(item.location_id, validated(conn, item.model_dump(exclude={"location_id"}))) for item in overrides.root]
    with store.atomic(conn):  # one commit: a drain never sees the set half replaced
        for row in mappings.all_of(conn, "location_override"):
            mappings.delete(conn, "location_override", row["key"])
        for location_id, value in checked:
            mappings.put(conn, "location_override", location_id, value)
    return location_overrides(conn)


def location_overrides(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    return [{"location_id": r.pop("key"), **r} for r in mappings.all_of(conn, "location_override")]


def set_payment_method(conn: sqlite3.Connection, key: str, **values: Any) -> dict[str, Any]:
    role, sep, method = key.partition(":")
    paying = {p.role: p.mappings for p in platforms.registered() if p.mappings.payment_case}
    if role not in paying or not sep or not method:
        raise InvalidInput(f"bad payment method key {key!r}", " or ".join(m.payment_examples for m in paying.values()))
    value = validated(conn, values)
    if not value:
        raise InvalidInput("nothing to set", "give --payment-type-id and/or --gift-type-id")
    key = f"{role}:{method.lower() if paying[role].payment_case == 'lower' else method.upper()}"
    mappings.put(conn, "payment_method", key, value)
    return {"key": key, **value}


def set_fund_override(conn: sqlite3.Connection, body: FundOverrideBody) -> dict[str, Any]:
    """The CRM fund for gifts a donor designated to one Givebutter fund (its code, or its id); it wins
    over the campaign's mappings."""
    value = validated(conn, {"fund_id": body.fund_id})
    mappings.put(conn, "fund_override", body.fund, value)
    return {"key": body.fund, **value}


def set_custom_field(conn: sqlite3.Connection, field: str, crm_field: str) -> dict[str, Any]:
    """Copy a Givebutter custom field into a CRM gift custom field (checked against the cached gift fields)."""
    from synctool.crm.references import gift_field

    if not field or not crm_field:
        raise InvalidInput("both the Givebutter field (id or title) and the CRM gift field are needed")
    found = gift_field(conn, crm_field)
    if found is None:
        known = listing(conn, "gift-fields")["items"]
        if not known:
            raise InvalidInput("no cached CRM gift fields", "run `synctool crm refresh` first")
        raise InvalidInput(
            f"unknown CRM gift field {crm_field!r}",
            "valid: " + ", ".join(f"{f.get('key')} ({f.get('name')})" for f in known[:30]),
        )
    mappings.put(conn, "custom_field", field, {"crm_field": found["key"] or str(found["id"]), "crm_field_name": found["name"]})
    return {
        "key": field,
        "crm_field": found["key"] or str(found["id"]),
        "crm_field_name": found["name"],
        "values": [k.get("name") for k in found.get("keywords") or []],
    }


def remove(conn: sqlite3.Connection, kind: str, key: str) -> dict[str, Any]:
    one_of(kind, mappings.KINDS, "mapping kind")
    from synctool.errors import NotFound

    if not mappings.delete(conn, kind, key):
        raise NotFound(f"no {kind} mapping for {key!r}")
    return {"removed": key, "kind": kind}
