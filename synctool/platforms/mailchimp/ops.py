"""Mailing operations (spec: /api/mailing/*): account, lists, list mappings, tag rules and a connection test."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Optional

from pydantic import Field

from synctool.platform import Body, Runtime, SynctoolError, mappings, using

if TYPE_CHECKING:
    from synctool.platform import Connection


def _with_client(rt: Runtime, fn, client=None):
    with using(rt, "mailing", client) as mc:
        return fn(mc)


def account(rt: Runtime, *, client=None) -> dict[str, Any]:
    data = _with_client(rt, lambda mc: mc.account(), client)
    return {k: data.get(k) for k in ("account_id", "account_name", "email", "role", "pricing_plan_type", "total_subscribers")}


def lists(rt: Runtime, *, client=None) -> list[dict[str, Any]]:
    return [
        {"id": item["id"], "name": item.get("name"), "members": (item.get("stats") or {}).get("member_count")}
        for item in _with_client(rt, lambda mc: mc.lists(), client)
    ]


def test(rt: Runtime, *, client=None) -> dict[str, Any]:
    try:
        health = _with_client(rt, lambda mc: mc.ping(), client)
        return {"ok": True, "health_status": health.get("health_status")}
    except SynctoolError as exc:
        return {"ok": False, "error": str(exc)}


def list_mappings(conn: Connection) -> list[dict[str, Any]]:
    return [{"list_id": r.pop("key"), **r} for r in mappings.all_of(conn, "list_mapping")]


class ListMappingBody(Body):
    """Spec: POST /api/mailing/mappings."""

    list_id: str = Field(min_length=1)
    enabled: bool = True
    label: Optional[str] = None
    #: opt-in: donors from donations and POS who gave e-mail consent are added to (or updated on) this list
    push_donors: bool = False


class TagRuleBody(Body):
    """Spec: POST /api/mailing/tag-rules. ``list_id`` may be ``*`` (every mapped list)."""

    list_id: str = Field(min_length=1)
    event: Literal["unsubscribe", "cleaned"]
    add: list[int] = []
    remove: list[int] = []


def set_mapping(conn: Connection, body: ListMappingBody) -> dict[str, Any]:
    value = body.model_dump(exclude={"list_id"})
    mappings.put(conn, "list_mapping", body.list_id, value)
    return {"list_id": body.list_id, **value}


def tag_rules(conn: Connection) -> list[dict[str, Any]]:
    rules = []
    for r in mappings.all_of(conn, "tag_rule"):
        list_id, _, event = r.pop("key").rpartition(":")
        rules.append({"list_id": list_id, "event": event, **r})
    return rules


def set_tag_rule(conn: Connection, body: TagRuleBody) -> dict[str, Any]:
    """Tags (CRM keyword ids of the ``tags`` category) to add and remove when ``event`` arrives on the list
    (``*`` for every mapped list). Keyword ids are checked against the cache from `synctool crm refresh`."""
    from synctool.platform import require_reference

    list_id, event, add, remove = body.list_id, body.event, body.add, body.remove
    for keyword in [*add, *remove]:
        require_reference(conn, "tags", keyword)
    value = {"add": [int(k) for k in add], "remove": [int(k) for k in remove]}
    mappings.put(conn, "tag_rule", f"{list_id}:{event}", value)
    return {"list_id": list_id, "event": event, **value}
