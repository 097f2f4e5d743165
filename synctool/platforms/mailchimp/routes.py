"""Mailchimp's admin API routes (``Platform.routes``): each a named handler over this package's ``ops``."""

from __future__ import annotations

from typing import Any

from synctool.platforms import ApiRoute
from synctool.platforms.mailchimp import ops


def _account(call: Any) -> Any:
    return ops.account(call.rt)


def _lists(call: Any) -> Any:
    return ops.lists(call.rt)


def _list_mappings(call: Any) -> Any:
    return ops.list_mappings(call.conn)


def _set_mapping(call: Any) -> Any:
    return ops.set_mapping(call.conn, call.body_as(ops.ListMappingBody))


def _test(call: Any) -> Any:
    return ops.test(call.rt)


def _tag_rules(call: Any) -> Any:
    return ops.tag_rules(call.conn)


def _set_tag_rule(call: Any) -> Any:
    return ops.set_tag_rule(call.conn, call.body_as(ops.TagRuleBody))


def routes() -> list[ApiRoute]:
    """``Platform.routes``: the admin API routes of this platform."""
    return [
        ApiRoute("GET", "/api/mailing/account", "admin", _account),
        ApiRoute("GET", "/api/mailing/lists", "admin", _lists),
        ApiRoute("GET", "/api/mailing/mappings", "admin", _list_mappings),
        ApiRoute("POST", "/api/mailing/mappings", "admin", _set_mapping),
        ApiRoute("POST", "/api/mailing/test", "admin", _test),
        ApiRoute("GET", "/api/mailing/tag-rules", "admin", _tag_rules),
        ApiRoute("POST", "/api/mailing/tag-rules", "admin", _set_tag_rule),
    ]
