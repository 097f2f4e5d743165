"""How platform data lands in CRM coding: the mappings operators set, and the lookups the sync rules use.

| kind | key | value |
|---|---|---|
| type_default | ``donations:<campaign type>``, ``donations:default``, ``pos:default`` | fund_id, campaign_id, appeal_id, gift_category_id, ack_template_name |
| fund_override | Givebutter fund code (or fund id) | fund_id (wins over the campaign's mappings) |
| campaign_override | Givebutter campaign id | fund_id, campaign_id, appeal_id, gift_category_id |
| location_override | Square location id | fund_id, campaign_id |
| payment_method | ``donations:<method>`` or ``pos:<tender type>`` | payment_type_id, gift_type_id |
| custom_field | Givebutter custom field id or title | crm_field, crm_field_name (a CRM gift custom field) |
| list_mapping | Mailchimp list id | enabled, label |
| tag_rule | ``<list id or *>:<unsubscribe or cleaned>`` | add, remove (keyword ids) |
| event | a donation platform's event campaign id | event_id, event_name (the CRM event its orders are invited to) |
| plans | ``*`` | group_id, contact_report_type_id, team_member (monthly donors' CRM group and their follow-ups) |
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from synctool import store

KINDS = (
    "type_default",
    "fund_override",
    "campaign_override",
    "location_override",
    "payment_method",
    "custom_field",
    "list_mapping",
    "tag_rule",
    "event",
    "plans",
)
#: ``ack_template_name``: the CRM's acknowledgement template for the gift (``do_not_ack``: none)
CODING_FIELDS = ("fund_id", "campaign_id", "appeal_id", "gift_category_id", "ack_template_name")
#: LGL's word for "send no acknowledgement" (lgl.md, "Soft credits and acknowledgements")
NO_ACK = "do_not_ack"


def ack_choice(template: str | None, no_ack: bool) -> str | None:
    """``--ack TEMPLATE`` / ``--no-ack`` as the mapping's ``ack_template_name`` (None: leave it to the next layer)."""
    if template and no_ack:
        from synctool.errors import InvalidInput

        raise InvalidInput("--ack and --no-ack are each other's opposite", "give one of them")
    return NO_ACK if no_ack else (template or None)


def get(conn: store.Connection, kind: str, key: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT value FROM mappings WHERE kind = ? AND key = ?", (kind, key)).fetchone()
    return json.loads(row[0]) if row else None


def put(conn: store.Connection, kind: str, key: str, value: Mapping[str, object]) -> None:
    with store.atomic(conn):
        store.put_row(conn, "mappings", {"kind": kind, "key": key}, {"value": json.dumps(value), "updated_at": store.iso()})


def delete(conn: store.Connection, kind: str, key: str) -> bool:
    with store.atomic(conn):
        return conn.execute("DELETE FROM mappings WHERE kind = ? AND key = ?", (kind, key)).rowcount == 1


def all_of(conn: store.Connection, kind: str) -> list[dict[str, Any]]:
    rows = conn.execute("SELECT key, value, updated_at FROM mappings WHERE kind = ? ORDER BY key", (kind,))
    return [{"key": key, **json.loads(value), "updated_at": updated_at} for key, value, updated_at in rows]


def coding(*layers: Mapping[str, object] | None) -> dict[str, Any]:
    """The first layer that sets a fund decides fund and campaign together; later layers fill gaps."""
    result: dict[str, Any] = {}
    for layer in layers:
        for field in CODING_FIELDS:
            if layer and layer.get(field) not in (None, "") and field not in result:
                result[field] = layer[field]
    return result


def payment_coding(conn: store.Connection, key: str) -> dict[str, Any]:
    """Payment type and gift type for a payment method key (``donations:card``, ``pos:CASH``); the gift
    type is "Gift" by name when no mapping sets one."""
    mapped = get(conn, "payment_method", key) or {}
    coded: dict[str, Any] = {}
    if mapped.get("payment_type_id"):
        coded["payment_type_id"] = mapped["payment_type_id"]
    if mapped.get("gift_type_id"):
        coded["gift_type_id"] = mapped["gift_type_id"]
    else:
        coded["gift_type_name"] = "Gift"
    return coded
