"""Mailchimp's admin API routes (``Platform.routes``): each row's handler calls this package's ``ops`` with what the
request (a ``StaffRequest``) carries."""

from __future__ import annotations

from synctool.platform import ApiRoute
from synctool.platforms.mailchimp import ops


def routes() -> list[ApiRoute]:
    """``Platform.routes``: the admin API routes of this platform."""
    return [
        ApiRoute("GET", "/api/mailing/account", "admin", lambda call: ops.account(call.rt)),
        ApiRoute("GET", "/api/mailing/lists", "admin", lambda call: ops.lists(call.rt)),
        ApiRoute("GET", "/api/mailing/mappings", "admin", lambda call: ops.list_mappings(call.conn)),
        ApiRoute("POST", "/api/mailing/mappings", "admin", lambda call: ops.set_mapping(call.conn, call.body_as(ops.ListMappingBody))),
        ApiRoute("POST", "/api/mailing/test", "admin", lambda call: ops.test(call.rt)),
        ApiRoute("GET", "/api/mailing/tag-rules", "admin", lambda call: ops.tag_rules(call.conn)),
        ApiRoute("POST", "/api/mailing/tag-rules", "admin", lambda call: ops.set_tag_rule(call.conn, call.body_as(ops.TagRuleBody))),
    ]  # fmt: skip
