"""Portal operations (spec portal-sync: admin routes and admin interface)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Optional

from synctool.platform import (
    Body,
    Conflict,
    InvalidInput,
    NotFound,
    Runtime,
    crm_environment,
    mappings,
    one_of,
    parse,
    runner,
    settings,
    store,
)
from synctool.platforms.portal import records as portal_records
from synctool.platforms.portal.payments import FUND_KEYS
from synctool.platforms.portal.pushes import DEFAULT_FLAGS, FLAGS, apply_record, queue

if TYPE_CHECKING:
    from synctool.platform import Connection

#: what a person may queue a CRM job for (the job's type is the entity's name)
ENTITIES = ("user", "membership", "payment", "relationship", "enrollment")
#: the portal records an entity's job reads, where they are not named as the entity is
RECORD_KIND = {"relationship": "family_link"}


def import_file(conn: Connection, lines: Iterable[str]) -> dict[str, Any]:
    """JSON lines ``{"type": "user", "data": {...}}`` (``user.upsert`` also accepted), each taking the same
    path as a push: stored, and the CRM jobs its state calls for queued. A bad line is reported with its
    number; the others still load."""
    loaded: dict[str, int] = {}
    queued = 0
    errors = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                raise InvalidInput("not valid JSON") from None
            if not isinstance(row, dict):
                raise InvalidInput("each line must be a JSON object {type, data}")
            kind = str(row.get("type") or "").split(".", 1)[0]
            with store.atomic(conn):
                _, jobs = apply_record(conn, kind, row.get("data"), "portal import")
            loaded[kind] = loaded.get(kind, 0) + 1
            queued += len(jobs)
        except InvalidInput as exc:
            errors.append({"line": number, "error": str(exc) + (f": {exc.detail}" if exc.detail else "")})
    return {"loaded": loaded, "queued": queued, "errors": errors}


def show(conn: Connection, entity: str, record_id: str) -> dict[str, Any]:
    return portal_records.get(conn, entity.replace("-", "_"), record_id)


def links(conn: Connection, entity: str | None = None) -> list[dict[str, Any]]:
    return portal_records.links(conn, entity.replace("-", "_") if entity else None)


def queue_sync(conn: Connection, entity: str, record_id: str, *, force: bool = False) -> str:
    """Queue a CRM job for a portal record (spec: POST /api/admin/crm/sync/queue-payment/:paymentId)."""
    one_of(entity, ENTITIES, "entity")
    portal_records.get(conn, RECORD_KIND.get(entity, entity), record_id)  # NotFound for an unknown id
    with store.atomic(conn):
        return queue(conn, entity, record_id, force=force, origin="operator")


def sync_now(conn: Connection, rt: Runtime, entity: str, record_id: str, *, force: bool = False) -> dict[str, Any]:
    """Queue and run one sync immediately (spec: POST /api/admin/crm/sync/payment/:paymentId)."""
    from synctool.platform import run_now

    job_id = queue_sync(conn, entity, record_id, force=force)
    row = run_now(runner(rt), conn, job_id)
    if row is None:
        raise NotFound(f"no sync record with id {job_id}")
    return {k: row[k] for k in ("id", "status", "message", "last_error", "crm_constituent_id", "crm_gift_id")}


MAPPING_KINDS = {
    "funds": "portal_fund",
    "gateways": "portal_gateway",
    "levels": "portal_level",
    "relationship-types": "portal_relationship_type",
}


def list_mappings(conn: Connection, kind: str) -> list[dict[str, Any]]:
    if kind not in MAPPING_KINDS:
        one_of(kind, MAPPING_KINDS, "portal mapping")
    return mappings.all_of(conn, MAPPING_KINDS[kind])


class FundMapping(Body):
    fund_id: int
    campaign_name: Optional[str] = None


class GatewayMapping(Body):
    payment_type_id: int


class LevelMapping(Body):
    membership_level_id: int


class RelationshipTypeMapping(Body):
    """Key ``default``: ``id``; key ``enabled``: ``ids``."""

    id: Optional[int] = None
    ids: Optional[list[int]] = None


#: what each portal mapping kind takes
MAPPING_BODIES: dict[str, type[Body]] = {
    "funds": FundMapping,
    "gateways": GatewayMapping,
    "levels": LevelMapping,
    "relationship-types": RelationshipTypeMapping,
}


def set_mapping(conn: Connection, kind: str, key: str, **values: Any) -> dict[str, Any]:
    """Fund per sync category; gateway -> payment type; product or level -> membership level (``*`` is the
    global default); relationship type default (key ``default``) and the enabled set. The values are that
    kind's body (``MAPPING_BODIES``); ids are checked against the CRM reference cache."""
    from synctool.platform import require_reference

    if kind not in MAPPING_BODIES:
        one_of(kind, MAPPING_KINDS, "portal mapping")
    values = parse(
        MAPPING_BODIES[kind], {k: v for k, v in values.items() if v is not None}, where=f"portal {kind} mapping"
    ).model_dump(exclude_none=True)
    if kind == "funds":
        one_of(key, FUND_KEYS, "sync category")
        require_reference(conn, "funds", values["fund_id"])
    elif kind == "gateways":
        require_reference(conn, "payment-types", values["payment_type_id"])
    elif kind == "levels":
        require_reference(conn, "membership-levels", values["membership_level_id"])
    else:
        if key not in ("default", "enabled"):
            raise InvalidInput("relationship-types keys: default (--id) or enabled (--ids)")
        for type_id in ([values["id"]] if "id" in values else []) + list(values.get("ids") or []):
            require_reference(conn, "relationship-types", type_id)
        if key == "default" and "id" not in values:
            raise InvalidInput("--id is required for the default relationship type")
        enabled = set(values.get("ids") or (mappings.get(conn, "portal_relationship_type", "enabled") or {}).get("ids", []))
        if key == "default" and enabled and int(values["id"]) not in enabled:
            raise InvalidInput(f"relationship type {values['id']} is not in the enabled set {sorted(enabled)}")
    mappings.put(conn, MAPPING_KINDS[kind], key, values)
    return {"key": key, **values}


def get_flags(conn: Connection, **changes: bool | None) -> dict[str, bool]:
    current = {**DEFAULT_FLAGS, **(settings.get(conn, FLAGS) or {})}
    updates = {k: v for k, v in changes.items() if v is not None}
    if updates:
        current.update(updates)
        with store.atomic(conn):
            settings.put(conn, FLAGS, current)
    return current


def _scenario_records(name: str) -> list[tuple[str, dict[str, Any]]]:
    """A named set of linked test records: two users in one family, a membership, a class, and a cart."""
    p = f"scn-{name}-"
    return [
        ("product", {"id": p + "membership", "name": "Family membership", "category": "membership", "level": "Family"}),
        ("product", {"id": p + "class", "name": "Spanish A1", "category": "class"}),
        ("user", {"id": p + "parent", "email": f"{name}.parent@example.org", "first_name": "Pat", "last_name": f"Test-{name}"}),
        ("user", {"id": p + "child", "email": f"{name}.child@example.org", "first_name": "Sam", "last_name": f"Test-{name}"}),
        (
            "membership",
            {
                "id": p + "m1",
                "user_id": p + "parent",
                "product_id": p + "membership",
                "status": "pending",
                "start_date": "2026-01-01",
                "renewal_date": "2026-12-31",
                "subsidy_tier": "none",
            },
        ),
        ("enrollment", {"id": p + "e1", "user_id": p + "child", "product_id": p + "class", "status": "pending"}),
        (
            "payment",
            {
                "id": p + "pay1",
                "user_id": p + "parent",
                "type": "cart",
                "status": "pending",
                "gateway": "stripe",
                "amount_cents": 15000,
                "membership_id": p + "m1",
                "enrollment_id": p + "e1",
                "items": [
                    {"id": p + "i1", "category": "membership", "amount_cents": 8000},
                    {"id": p + "i2", "category": "class", "amount_cents": 5000},
                    {"id": p + "i3", "category": "donation", "amount_cents": 2000},
                ],
            },
        ),
        ("family_link", {"id": p + "fam1", "primary_user_id": p + "parent", "member_user_id": p + "child"}),
    ]


def _refuse_production(conn: Connection, rt: Runtime) -> None:
    env = crm_environment.environment(conn, rt)
    if env == "production":
        raise Conflict(
            "test scenarios are refused in the production CRM environment (switch with `synctool crm environment sandbox`)"
        )


def scenario_create(conn: Connection, rt: Runtime, name: str) -> dict[str, Any]:
    _refuse_production(conn, rt)
    if not name.replace("-", "").isalnum():
        raise InvalidInput("a scenario name is letters, digits and dashes")
    with store.atomic(conn):
        for kind, data in _scenario_records(name):
            portal_records.upsert(conn, kind, data)
    return {"scenario": name, "records": [f"{k} {d['id']}" for k, d in _scenario_records(name)]}


def scenario_delete(conn: Connection, rt: Runtime, name: str) -> dict[str, Any]:
    _refuse_production(conn, rt)
    removed = 0
    with store.atomic(conn):
        for kind, data in _scenario_records(name):
            removed += conn.execute(f"DELETE FROM {portal_records.TABLES[kind]} WHERE id = ?", (data["id"],)).rowcount
            if kind == "payment":
                conn.execute("DELETE FROM portal_payment_items WHERE payment_id = ?", (data["id"],))
    if not removed:
        raise NotFound(f"no scenario named {name!r}")
    return {"scenario": name, "removed": removed}
