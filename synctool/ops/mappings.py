"""Mapping operations: type defaults, campaign and fund overrides, payment methods and custom fields (spec:
/api/mappings/*), each validated against the cached CRM reference lists."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, TypedDict

from pydantic import Field

from synctool import mappings, platforms
from synctool.crm.references import coding, listing
from synctool.errors import InvalidInput, one_of
from synctool.validation import Body, CrmId, Email

if TYPE_CHECKING:
    from synctool import store


def set_type_default(conn: store.Connection, key: str, **values: Any) -> dict[str, Any]:
    allowed = [f"{p.role}:{t}" for p in platforms.registered() for t in p.mappings.types]
    one_of(key, allowed, "type")
    value = coding(conn, values)
    if not value:
        raise InvalidInput("nothing to set", "give at least --fund-id, --campaign-id, --ack or --no-ack")
    mappings.put(conn, "type_default", key, value)
    return {"key": key, **value}


class Coding(Body):
    fund_id: Optional[CrmId] = None
    campaign_id: Optional[CrmId] = None
    appeal_id: Optional[CrmId] = None
    gift_category_id: Optional[CrmId] = None
    #: the CRM acknowledgement template (``do_not_ack``: none; the donor already has the platform's receipt)
    ack_template_name: Optional[str] = None


class OverrideBody(Coding):
    """Spec: POST /api/mappings/overrides: the coding for one donation-platform campaign."""

    campaign: str = Field(min_length=1)


class FundOverrideBody(Body):
    """POST /api/mappings/funds: the CRM fund for one donation-platform fund (its code, or its id)."""

    fund: str = Field(min_length=1)
    fund_id: CrmId


def set_campaign_override(conn: store.Connection, body: OverrideBody) -> dict[str, Any]:
    value = coding(conn, body.model_dump(exclude={"campaign"}))
    if not value:
        raise InvalidInput("nothing to set", "give at least --fund-id, --campaign-id, --ack or --no-ack")
    mappings.put(conn, "campaign_override", body.campaign, value)
    return {"key": body.campaign, **value}


def set_payment_method(conn: store.Connection, key: str, **values: Any) -> dict[str, Any]:
    role, sep, method = key.partition(":")
    paying = {p.role: p.mappings for p in platforms.registered() if p.mappings.payment_case}
    if role not in paying or not sep or not method:
        raise InvalidInput(f"bad payment method key {key!r}", " or ".join(m.payment_examples for m in paying.values()))
    value = coding(conn, values)
    if not value:
        raise InvalidInput("nothing to set", "give --payment-type-id and/or --gift-type-id")
    key = f"{role}:{method.lower() if paying[role].payment_case == 'lower' else method.upper()}"
    mappings.put(conn, "payment_method", key, value)
    return {"key": key, **value}


def set_fund_override(conn: store.Connection, body: FundOverrideBody) -> dict[str, Any]:
    """The CRM fund for gifts a donor designated to one donation-platform fund (its code, or its id); it wins
    over the campaign's mappings."""
    value = coding(conn, {"fund_id": body.fund_id})
    mappings.put(conn, "fund_override", body.fund, value)
    return {"key": body.fund, **value}


class CustomField(TypedDict):
    key: str
    crm_field: str
    crm_field_name: str
    values: list[str | None]


class PlansMapping(TypedDict):
    """The monthly donors' group and follow-up coding, with the names from the cached CRM lists."""

    mapped: bool
    group_id: object
    group: str | None
    contact_report_type_id: object
    contact_report_type: str | None
    team_member: str | None


class Removed(TypedDict):
    removed: str
    kind: str


def set_custom_field(conn: store.Connection, field: str, crm_field: str) -> CustomField:
    """Copy a donation-platform custom field into a CRM gift custom field (checked against the cached gift fields)."""
    from synctool.crm.references import gift_field

    if not field or not crm_field:
        raise InvalidInput("both the donation platform's field (id or title) and the CRM gift field are needed")
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


class PlansMappingBody(Body):
    """POST /api/mappings/plans: the CRM group monthly donors are kept in, and their follow-ups' contact report
    type and team member."""

    group_id: CrmId
    contact_report_type_id: Optional[CrmId] = None
    team_member: Optional[Email] = None


def set_plans_mapping(conn: store.Connection, body: PlansMappingBody) -> PlansMapping:
    """``mappings plans set``: the group and report type checked against the cached CRM lists."""
    from synctool.crm.references import require

    require(conn, "groups", body.group_id)
    if body.contact_report_type_id is not None:
        require(conn, "contact-report-types", body.contact_report_type_id)
    value = body.model_dump()
    mappings.put(conn, "plans", "*", value)
    return plans_mapping(conn)


def plans_mapping(conn: store.Connection) -> PlansMapping:
    """``mappings plans show``: the mapping with its names from the cached CRM lists (None: not mapped)."""
    from synctool.crm.references import find

    value = mappings.get(conn, "plans", "*")
    if value is None:
        return {"mapped": False, "group_id": None, "group": None, "contact_report_type_id": None,
                "contact_report_type": None, "team_member": None}  # fmt: skip
    group = find(conn, "groups", value.get("group_id"))
    kind = find(conn, "contact-report-types", value.get("contact_report_type_id"))
    return {
        "mapped": True,
        "group_id": value.get("group_id"),
        "group": (group or {}).get("name"),
        "contact_report_type_id": value.get("contact_report_type_id"),
        "contact_report_type": (kind or {}).get("name"),
        "team_member": value.get("team_member"),
    }


def remove(conn: store.Connection, kind: str, key: str) -> Removed:
    one_of(kind, mappings.KINDS, "mapping kind")
    from synctool.errors import NotFound

    if not mappings.delete(conn, kind, key):
        raise NotFound(f"no {kind} mapping for {key!r}")
    return {"removed": key, "kind": kind}
