"""The member portal's records in synctool's database (``portal_*`` tables) and their CRM linkage ids.

Records arrive by the signed ``/webhooks/portal`` push and by ``synctool portal import``; both go
through ``platforms/portal/pushes.apply_record``, which validates with the models in
``platforms/portal/webhook.py`` and upserts here. Linkage ids (``crm_constituent_id``,
``crm_membership_id``, ``crm_gift_id``, ``crm_relationship_id``) are written only by the sync rules and
are kept when the portal pushes a record again.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from synctool.platform import InvalidInput, NotFound, one_of, parse, store
from synctool.platforms.portal.webhook import RECORD_TYPES, record_models

if TYPE_CHECKING:
    from synctool.platform import Connection

TABLES = {
    "user": "portal_users",
    "product": "portal_products",
    "membership": "portal_memberships",
    "payment": "portal_payments",
    "enrollment": "portal_enrollments",
    "family_link": "portal_family_links",
}
LINKS = {
    "user": ["crm_constituent_id"],
    "membership": ["crm_membership_id"],
    "payment": ["crm_gift_id", "crm_gift_ids"],
    "family_link": ["crm_relationship_id"],
    "enrollment": ["crm_synced_at"],
    "product": [],
}


def validate(kind: str, data: Any) -> Any:
    one_of(kind, RECORD_TYPES, "record type")
    if not isinstance(data, dict):
        raise InvalidInput(f"a {kind} record must be a JSON object")
    return parse(record_models()[kind], data, where=f"{kind} record")


def upsert(conn: Connection, kind: str, data: Any) -> dict[str, Any]:
    """Validate and store one record (inside or outside a caller's transaction). Returns the stored row."""
    record = validate(kind, data)
    values = record.model_dump(exclude={"items"})
    values["updated_at"] = store.iso()
    if kind == "payment":
        values["scholarship"] = int(values["scholarship"])
    with store.atomic(conn):  # the record and its items, whether or not the caller holds a transaction
        record_id = values.pop("id")
        store.put_row(conn, TABLES[kind], {"id": record_id}, values)  # linkage ids are not in ``values``: kept as they were
        if kind == "payment":
            conn.execute("DELETE FROM portal_payment_items WHERE payment_id = ?", (record.id,))
            for item in record.items:
                row = {**item.model_dump(), "payment_id": record.id}
                conn.execute(
                    f"INSERT INTO portal_payment_items ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                    tuple(row.values()),
                )
        return get(conn, kind, record.id)


def get(conn: Connection, kind: str, record_id: str) -> dict[str, Any]:
    if kind not in TABLES:
        one_of(kind, RECORD_TYPES, "record type")
    row = conn.execute(f"SELECT * FROM {TABLES[kind]} WHERE id = ?", (record_id,)).fetchone()
    if row is None:
        raise NotFound(f"no portal {kind} with id {record_id}")
    record = dict(row)
    if kind == "payment":
        record["items"] = [
            dict(r)
            for r in conn.execute(
                "SELECT id, product_id, category, description, quantity, amount_cents FROM portal_payment_items"
                f" WHERE payment_id = ? ORDER BY {store.dialect.arrival()}",
                (record_id,),
            )
        ]
        record["crm_gift_ids"] = json.loads(record["crm_gift_ids"]) if record["crm_gift_ids"] else {}
        record["scholarship"] = bool(record["scholarship"])
    return record


def find(conn: Connection, kind: str, record_id: str | None) -> dict[str, Any] | None:
    if not record_id:
        return None
    try:
        return get(conn, kind, record_id)
    except NotFound:
        return None


def set_link(conn: Connection, kind: str, record_id: str, **links: Any) -> None:
    with store.atomic(conn):
        for column, value in links.items():
            if column not in LINKS[kind]:
                raise ValueError(f"{column} is not a linkage field of {kind}")
            if isinstance(value, (dict, list)):
                value = json.dumps(value)
            conn.execute(f"UPDATE {TABLES[kind]} SET {column} = ? WHERE id = ?", (value, record_id))


def links(conn: Connection, kind: str | None = None) -> list[dict[str, Any]]:
    """Every record's CRM ids, for the portal to read back."""
    kinds = [kind] if kind else [k for k in RECORD_TYPES if LINKS[k]]
    out = []
    for k in kinds:
        if k not in TABLES:
            one_of(k, RECORD_TYPES, "record type")
        for row in conn.execute(f"SELECT id, {', '.join(LINKS[k]) or 'NULL AS none'} FROM {TABLES[k]} ORDER BY id"):
            out.append({"entity": k, **dict(row)})
    return out
