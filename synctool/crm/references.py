"""The CRM's reference lists, cached in the database: funds, campaigns, appeals, gift types and categories,
payment types, membership levels, relationship types, groups, contact report types, team members (given a
``name``, "first last", which LGL's answer lacks), the constituent tag keywords, and the gift custom fields (categories with ``item_type: Gift``, whose keywords are the values a gift may carry).

``synctool crm refresh`` fills the cache; mappings are checked against it, and the sync rules read it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool import settings, store
from synctool.errors import InvalidInput, RemoteError, one_of
from synctool.queue.unit import Unit

if TYPE_CHECKING:
    from synctool.crm.client import CrmClient
    from synctool.crm.types import JsonObject

#: cache kind -> CRM path; the spec's CRM reference lists plus what the sync rules look up
LISTS = {
    "funds": "/funds",
    "campaigns": "/campaigns",
    "appeals": "/appeals",
    "gift-types": "/gift_types",
    "gift-categories": "/gift_categories",
    "payment-types": "/payment_types",
    "membership-levels": "/membership_levels",
    "relationship-types": "/relationship_types",
    "groups": "/groups",
    "mailing-templates": "/mailing_templates",
    "events": "/events",
    "contact-report-types": "/types/contact_report_types",
    "team-members": "/team_members",
}
#: cached from ``/categories``: the constituent category with key ``tags``, and every gift category
CATEGORY_KINDS = ("tags", "gift-fields")


def refresh(conn: store.Connection, crm: CrmClient) -> dict[str, int]:
    """Fetch every reference list, the tag keywords and the gift custom fields; replace the cache in one
    commit (all fetched first, so a failed request changes nothing and no write waits on the network)."""
    fetched = {f"crm:{kind}": crm.reference_list(path) for kind, path in LISTS.items()}
    fetched["crm:team-members"] = [_named(m) for m in fetched["crm:team-members"]]
    tags = [c for c in crm.reference_list("/categories", item_type="Constituent") if c.get("key") == "tags"]
    fetched["crm:tags"] = tags[0].get("keywords", []) if tags else []
    fetched["crm:gift-fields"] = crm.reference_list("/categories", item_type="Gift")
    with store.atomic(conn):
        for kind, items in fetched.items():
            settings.cache_replace(conn, kind, {f"{int(i['id']):012d}": i for i in items})
    return {kind.removeprefix("crm:"): len(items) for kind, items in fetched.items()}


def _named(member: JsonObject) -> JsonObject:
    """A team member (``{id, first_name, last_name, email, ...}``) with the ``name`` every cached list shows."""
    name = " ".join(str(member.get(k) or "").strip() for k in ("first_name", "last_name")).strip()
    return {**member, "name": member.get("name") or name or member.get("email")}


def listing(conn: store.Connection, kind: str) -> dict[str, Any]:
    one_of(kind, [*LISTS, *CATEGORY_KINDS], "CRM list")
    return {
        "kind": kind,
        "refreshed_at": settings.cache_refreshed_at(conn, f"crm:{kind}"),
        "items": settings.cache_list(conn, f"crm:{kind}"),
    }


def find(conn: store.Connection, kind: str, item_id: Any) -> JsonObject | None:
    try:
        return settings.cache_get(conn, f"crm:{kind}", f"{int(item_id):012d}")
    except (TypeError, ValueError):
        return None


def require(conn: store.Connection, kind: str, item_id: Any) -> JsonObject:
    """The cached item, or InvalidInput listing the valid choices (for mappings)."""
    found = find(conn, kind, item_id)
    if found is not None:
        return found
    items = settings.cache_list(conn, f"crm:{kind}")
    if not items:
        raise InvalidInput(f"no cached CRM {kind}", "run `synctool crm refresh` first")
    choices = ", ".join(f"{i['id']} ({i.get('name') or i.get('display_name')})" for i in items[:30])
    raise InvalidInput(f"unknown CRM {kind[:-1] if kind.endswith('s') else kind} id {item_id!r}", f"valid: {choices}")


def gift_field(conn: store.Connection, key_or_name: str) -> JsonObject | None:
    """A cached gift custom field by its key, name or id (case-insensitive), with its ``keywords``."""
    wanted = str(key_or_name).strip().lower()
    for field in settings.cache_list(conn, "crm:gift-fields"):
        if wanted in (str(field.get("key") or "").lower(), str(field.get("name") or "").lower(), str(field.get("id"))):
            return field
    return None


def ensure_gift_field_value(work: Unit, crm: CrmClient, field: JsonObject, value: str) -> None:
    """Make ``value`` one of the gift custom field's values: LGL keeps only a field's own values and drops
    any other without a word. A value the cached field lacks is added to the CRM's field
    (``POST /categories/{id}/keywords``, one request, by one job at a time) and to the cache."""

    def offered(field: JsonObject) -> bool:
        return any(str(k.get("name")) == value for k in field.get("keywords") or [])

    if offered(field):
        return
    key = f"{int(field['id']):012d}"
    with work.lock([f"gift-field:{field['id']}"], wait_s=30):
        field = settings.cache_get(work.conn, "crm:gift-fields", key) or field
        if offered(field):  # another job added it while this one waited
            return
        try:
            keyword = crm.request("POST", f"/categories/{field['id']}/keywords", json={"name": value})
            keywords = [*(field.get("keywords") or []), keyword]
        except RemoteError as exc:
            if exc.status != 422:
                raise
            # someone added it in the CRM since the cache was filled: read the field's values again
            keywords = crm.reference_list(f"/categories/{field['id']}/keywords")
        field = {**field, "keywords": keywords}
        with work.gather() as conn:  # in a job: committed with the lock let go, at its next point
            settings.cache_put(conn, "crm:gift-fields", key, field)


#: a coding field -> the reference list its id must be in
REFERENCE_KIND = {
    "fund_id": "funds",
    "campaign_id": "campaigns",
    "appeal_id": "appeals",
    "gift_category_id": "gift-categories",
    "payment_type_id": "payment-types",
    "gift_type_id": "gift-types",
}


def coding(conn: store.Connection, values: dict[str, Any]) -> dict[str, Any]:
    """A mapping's CRM coding: unset values dropped, every CRM id checked against the cache (an unknown id
    lists the valid choices)."""
    clean = {k: v for k, v in values.items() if v is not None}
    for field, value in clean.items():
        if field in REFERENCE_KIND:
            require(conn, REFERENCE_KIND[field], value)
            clean[field] = int(value)
    if clean.get("ack_template_name"):
        clean["ack_template_name"] = ack_template(conn, clean["ack_template_name"])
    return clean


def ack_template(conn: store.Connection, name: str) -> str:
    """An acknowledgement template's name as the CRM spells it: checked against the cached mailing templates
    of type "Acknowledgment" (``GET /mailing_templates``; by name or code, any case) when the cache holds
    any, else taken as written. ``do_not_ack`` means none."""
    if name == "do_not_ack":
        return name
    templates = [
        t for t in settings.cache_list(conn, "crm:mailing-templates") if "ack" in str(t.get("mailing_type_name", "")).lower()
    ]
    if not templates:
        return name
    wanted = name.strip().lower()
    for t in templates:
        if wanted in (str(t.get("name", "")).lower(), str(t.get("code", "")).lower()):
            return str(t["name"])
    choices = ", ".join(str(t.get("name")) for t in templates[:30])
    raise InvalidInput(f"unknown acknowledgement template {name!r}", f"valid: {choices}, or --no-ack")
