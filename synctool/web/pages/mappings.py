"""Mappings (``/admin/mappings``): every kind of mapping as `synctool mappings ...` and `synctool mailing
mappings|tag-rules` list and set them, with the CRM's cached lists as the forms' choices and the donation
campaigns by name; reading the CRM's lists again, as `synctool crm refresh` does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypedDict

from synctool import mappings as mapping_store
from synctool import platforms
from synctool import settings as cached
from synctool.crm.references import gift_field
from synctool.errors import InvalidInput
from synctool.ops import crm
from synctool.ops import events as event_ops
from synctool.ops import mappings as mapping_ops
from synctool.ops import overview as overview_ops
from synctool.platforms import ApiRoute
from synctool.runtime import Runtime
from synctool.web.pages import forms
from synctool.web.pages.base import ActionResult, ViewResult
from synctool.web.pages.choices import CODING, LABELS, campaign_key, campaign_named, campaigns, check_known, crm_named, item_name
from synctool.web.pages.events import unmap_event
from synctool.web.pages.forms import FormProblem, field, typed
from synctool.web.request import Json, StaffRequest

if TYPE_CHECKING:
    from synctool import store

#: the CRM reference lists the mapping forms offer as choices (``synctool crm refresh`` caches them)
CHOICES = ("funds", "campaigns", "appeals", "gift-categories", "gift-types", "payment-types", "events", "gift-fields", "tags",
           "groups", "contact-report-types", "team-members")  # fmt: skip
#: the mapping kinds kept in synctool's own table, as `synctool mappings KIND list` lists them
KINDS = ("type_default", "campaign_override", "fund_override", "payment_method", "custom_field")
#: the mailing platform's routes its list mappings and tag rules are read and set through (``Platform.routes``)
MAILING_LISTS, TAG_RULES = "/api/mailing/mappings", "/api/mailing/tag-rules"


class MappingsPage(TypedDict):
    mappings: dict[str, Any]
    choices: dict[str, list[Mapping[str, object]]]
    names: dict[str, dict[str, str]]
    lists_read_at: str | None
    acks: list[Mapping[str, object]]
    type_keys: list[str]
    paying: list[tuple[str, str]]
    campaigns: list[dict[str, Any]]
    campaign_names: dict[str, str]
    waiting: set[str]
    unmapped: list[overview_ops.UnmappedCampaign]
    mailing: bool
    editing: dict[str, Any]


# -- a platform's admin API route, called as the API calls it ----------------------------------------------


def platform_route(rt: Runtime, method: str, path: str) -> ApiRoute | None:
    """The admin API route of a platform in use that answers ``method path`` (None: no platform in use has it)."""
    for platform in platforms.in_use(rt.config):
        for route in platform.routes() if platform.routes else ():
            if route.method == method and route.path == path:
                return route
    return None


def call_platform_route(request: StaffRequest, method: str, path: str, body: Json = None) -> Json:
    """What a platform's admin API route answers to this request, with ``body`` (the same operation)."""
    route = platform_route(request.rt, method, path)
    if route is None:
        raise InvalidInput(
            "no platform in use keeps these mappings", "whoever runs synctool's server chooses the platforms in use"
        )
    return route.handler(replace(request, path={}, query={}, form={}, body={} if body is None else body))


# -- the page ------------------------------------------------------------------------------------------------


def _listed(request: StaffRequest) -> dict[str, Any]:
    """Every kind of mapping, by kind (the mailing platform's when one is in use)."""
    listed: dict[str, Any] = {kind: mapping_store.all_of(request.conn, kind) for kind in KINDS}
    listed["event"] = event_ops.list_mappings(request.conn)
    listed["plans"] = mapping_ops.plans_mapping(request.conn)
    if platform_route(request.rt, "GET", MAILING_LISTS) is not None:
        listed["list_mapping"] = call_platform_route(request, "GET", MAILING_LISTS)
        listed["tag_rule"] = call_platform_route(request, "GET", TAG_RULES)
    return listed


def _editing(request: StaffRequest, listed: dict[str, Any], known: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The mapping a form is filled with: ``?edit=KIND&key=KEY`` (a mapping's values, to change it) or
    ``?campaign=ID`` (the campaign override form, from the overview's link)."""
    editing: dict[str, Any] = {}
    kind, key = request.query.get("edit") or "", request.query.get("key") or ""
    if kind in listed and key:
        editing = next((dict(row) for row in listed[kind] if str(row.get("key", row.get("list_id"))) == key), {})
        editing["kind"] = kind
    elif request.query.get("campaign"):
        editing = {"kind": "campaign_override", "key": request.query["campaign"]}
        known.setdefault(editing["key"], {"id": editing["key"], "title": None})
    return editing


def _ack_templates(conn: store.Connection) -> list[Mapping[str, object]]:
    templates = crm.reference(conn, "mailing-templates")["items"]
    return [t for t in templates if "ack" in str(t.get("mailing_type_name", "")).lower()]


def _title(campaign: dict[str, Any]) -> str:
    return campaign.get("title") or campaign.get("code") or ""


def mappings(request: StaffRequest) -> ViewResult:
    """Every mapping with its form; the campaigns a person may pick by name: the cached ones, those whose gifts
    had no mapping (first), those mapped."""
    conn, in_use = request.conn, platforms.in_use(request.rt.config)
    listed = _listed(request)
    unmapped = overview_ops.unmapped_campaigns(conn, request.rt)
    known = campaigns(request)
    for key in [str(u["campaign_id"]) for u in unmapped] + [str(r["key"]) for r in listed["campaign_override"]]:
        known.setdefault(key, {"id": key, "title": next((u["campaign"] for u in unmapped if str(u["campaign_id"]) == key), None)})
    editing = _editing(request, listed, known)
    choices = {k: crm.reference(conn, k)["items"] for k in CHOICES}
    waiting = {str(u["campaign_id"]) for u in unmapped}
    ordered = sorted(known.values(), key=lambda c: (str(c["id"]) not in waiting, str(_title(c) or "~").casefold()))
    return ViewResult(
        MappingsPage(
            mappings=listed,
            choices=choices,
            names={k: {str(i.get("id")): item_name(i) for i in items} for k, items in choices.items()},
            lists_read_at=crm.reference(conn, "funds")["refreshed_at"],
            acks=_ack_templates(conn),
            type_keys=[f"{p.role}:{t}" for p in in_use for t in p.mappings.types],
            paying=[(p.role, p.mappings.payment_examples) for p in in_use if p.mappings.payment_case],
            campaigns=ordered,
            campaign_names={str(c["id"]): _title(c) for c in ordered},
            waiting=waiting,
            unmapped=unmapped,
            mailing="list_mapping" in listed,
            editing=editing,
        )
    )


# -- the forms -----------------------------------------------------------------------------------------------


def _coding(request: StaffRequest) -> dict[str, Any]:
    """A form's CRM coding, read as the API reads it (``Coding``): blank fields unset, each CRM id one of the
    cached lists', and at least one field given."""
    given = {f: field(request, f) for f in ("fund_id", "campaign_id", "appeal_id", "gift_category_id", "ack_template_name")}
    coding = forms.read(mapping_ops.Coding, given, LABELS).model_dump()
    for name, value in coding.items():
        if name in CODING:
            check_known(request.conn, name, value)
    if not any(v is not None for v in coding.values()):
        raise FormProblem("Choose at least a CRM fund, campaign, appeal, gift category or acknowledgement.")
    return coding


def _coded(conn: store.Connection, mapping: Mapping[str, object]) -> str:
    """A coding as a person reads it: ``CRM fund General (#2398), CRM campaign Annual Giving (#822)``."""
    words = [f"{CODING[k][1]} {crm_named(conn, CODING[k][0], mapping[k])}"
             for k in ("fund_id", "campaign_id", "appeal_id", "gift_category_id") if mapping.get(k) is not None]  # fmt: skip
    if mapping.get("ack_template_name"):
        ack = mapping["ack_template_name"]
        words.append("no acknowledgement" if ack == "do_not_ack" else f"acknowledgement \u201c{ack}\u201d")
    return ", ".join(words)


def set_type_default(request: StaffRequest) -> ActionResult:
    """`synctool mappings types set KEY ...`: the options given replace the type's whole coding."""
    mapping = mapping_ops.set_type_default(request.conn, field(request, "key") or "", **_coding(request))
    return ActionResult(f"Type default {mapping['key']}: {_coded(request.conn, mapping)}.", mapping["key"])


def set_campaign_override(request: StaffRequest) -> ActionResult:
    """`synctool mappings overrides set CAMPAIGN ...` (``POST /api/mappings/overrides``): the campaign chosen
    from the list, or its id or title typed in ``campaign_other``."""
    campaign = campaign_key(request, field(request, "campaign_other") or field(request, "campaign"), "campaign")
    if campaign is None:
        raise FormProblem("Choose the donation campaign to map.", "campaign")
    given = {**_coding(request), "campaign": campaign}
    body = forms.read(mapping_ops.OverrideBody, given, LABELS | {"campaign": "donation campaign"})
    mapping = mapping_ops.set_campaign_override(request.conn, body)
    named, coded = campaign_named(request, mapping["key"]), _coded(request.conn, mapping)
    return ActionResult(f"Campaign {named} is mapped: {coded}. Its next gifts are coded so.", mapping["key"])


def set_fund_override(request: StaffRequest) -> ActionResult:
    """`synctool mappings funds set FUND --fund-id N` (``POST /api/mappings/funds``)."""
    given = {"fund": field(request, "fund"), "fund_id": field(request, "fund_id")}
    body = forms.read(mapping_ops.FundOverrideBody, given, {"fund": "donation fund", "fund_id": "CRM fund"})
    check_known(request.conn, "fund_id", body.fund_id)
    mapping = mapping_ops.set_fund_override(request.conn, body)
    crm_fund = crm_named(request.conn, "funds", mapping["fund_id"])
    return ActionResult(f"Gifts designated to fund {mapping['key']} go to CRM fund {crm_fund}.", mapping["key"])


def set_plans_mapping(request: StaffRequest) -> ActionResult:
    """`synctool mappings plans set --group ID [--report-type ID] [--team-member EMAIL]` (``POST
    /api/mappings/plans``): the group and report type chosen by name from the CRM's cached lists."""
    given = {"group_id": field(request, "group_id"), "contact_report_type_id": field(request, "contact_report_type_id"),
             "team_member": field(request, "team_member")}  # fmt: skip
    labels = {"group_id": "CRM group", "contact_report_type_id": "contact report type", "team_member": "team member"}
    mapping = mapping_ops.set_plans_mapping(request.conn, forms.read(mapping_ops.PlansMappingBody, given, labels))
    said = f"Monthly donors are kept in CRM group {mapping['group'] or ''} (#{mapping['group_id']})"
    if mapping["contact_report_type_id"]:
        said += f"; follow-ups are {mapping['contact_report_type'] or ''} (#{mapping['contact_report_type_id']}) contact reports"
    if mapping["team_member"]:
        said += f" assigned to {mapping['team_member']}"
    return ActionResult(said + ".", "plans")


def set_payment_method(request: StaffRequest) -> ActionResult:
    """`synctool mappings payments set ROLE:METHOD ...`."""
    if field(request, "method") is None:
        raise FormProblem("Payment method is needed (as the platform names it: card, cash, ...).", "method")
    key = f"{field(request, 'role') or ''}:{field(request, 'method') or ''}"
    values = {}
    for name in ("payment_type_id", "gift_type_id"):
        given = field(request, name)
        if given is not None and not given.isdigit():
            raise FormProblem(f"{LABELS[name]}: {typed(given)} is not a CRM id (a whole number).", name)
        values[name] = None if given is None else int(given)
        check_known(request.conn, name, values[name])
    if not any(values.values()):
        raise FormProblem("Choose a CRM payment type, a CRM gift type, or both.")
    mapping = mapping_ops.set_payment_method(request.conn, key, **values)
    ids = ", ".join(f"{CODING[k][1]} {crm_named(request.conn, CODING[k][0], mapping[k])}"
                    for k in ("payment_type_id", "gift_type_id") if mapping.get(k) is not None)  # fmt: skip
    return ActionResult(f"Payment method {mapping['key']}: {ids}.", mapping["key"])


def set_custom_field(request: StaffRequest) -> ActionResult:
    """`synctool mappings custom-fields set FIELD --crm-field NAME`."""
    field_name, crm_field = field(request, "field"), field(request, "crm_field")
    if field_name is None:
        raise FormProblem("Donation custom field is needed (its id or its title).", "field")
    if crm_field is None:
        raise FormProblem("CRM gift field is needed.", "crm_field")
    if gift_field(request.conn, crm_field) is None:
        raise FormProblem(f"There is no CRM gift field {typed(crm_field)} in the CRM's lists as last read: choose one "
                          "from the list.", "crm_field")  # fmt: skip
    mapping = mapping_ops.set_custom_field(request.conn, field_name, crm_field)
    return ActionResult(
        f"Custom field {mapping['key']} is copied into the CRM gift field {mapping['crm_field_name']}.", mapping["key"]
    )


def set_mailing_list(request: StaffRequest) -> ActionResult:
    """`synctool mailing mappings set LIST ...` (``POST /api/mailing/mappings``)."""
    if field(request, "list_id") is None:
        raise FormProblem("Mailing list id is needed.", "list_id")
    body = {"list_id": field(request, "list_id") or "", "enabled": request.form.get("enabled") == "on",
            "label": field(request, "label"), "push_donors": request.form.get("push_donors") == "on"}  # fmt: skip
    mapping = call_platform_route(request, "POST", MAILING_LISTS, body)
    state = "enabled" if mapping["enabled"] else "disabled"
    named = f"{mapping['label']} ({mapping['list_id']})" if mapping.get("label") else mapping["list_id"]
    pushed = ", donors pushed" if mapping["push_donors"] else ""
    return ActionResult(f"Mailing list {named} is mapped ({state}{pushed}).", mapping["list_id"])


def _keywords(request: StaffRequest, name: str) -> list[int]:
    """Tag keyword ids: a form's comma- or space-separated numbers."""
    given = (request.form.get(name) or "").replace(",", " ").split()
    wrong = [g for g in given if not g.isdigit()]
    if wrong:
        what = "CRM tags to add" if name == "add" else "CRM tags to remove"
        raise FormProblem(
            f"{what}: {typed(wrong[0])} is not a tag's id: give the CRM tag ids (numbers) from the list below.", name
        )
    return [int(g) for g in given]


def _tags_named(conn: store.Connection, ids: list[int]) -> str:
    names = {str(t.get("id")): item_name(t) for t in cached.cache_list(conn, "crm:tags") if isinstance(t, dict)}
    return ", ".join(f"{names[str(i)]} (#{i})" if names.get(str(i)) else f"#{i}" for i in ids) or "none"


def set_tag_rule(request: StaffRequest) -> ActionResult:
    """`synctool mailing tag-rules set LIST EVENT --add N --remove N` (``POST /api/mailing/tag-rules``)."""
    if field(request, "list_id") is None:
        raise FormProblem("Mailing list id is needed (* for every mapped list).", "list_id")
    body = {"list_id": field(request, "list_id") or "", "event": field(request, "event") or "",
            "add": _keywords(request, "add"), "remove": _keywords(request, "remove")}  # fmt: skip
    rule = call_platform_route(request, "POST", TAG_RULES, body)
    key = f"{rule['list_id']}:{rule['event']}"
    added, removed = _tags_named(request.conn, rule["add"]), _tags_named(request.conn, rule["remove"])
    return ActionResult(f"Tag rule {key}: add {added}, remove {removed}.", key)


def remove_mapping(request: StaffRequest) -> ActionResult:
    """`synctool mappings remove KIND KEY` (an event mapping: `synctool mappings events remove`)."""
    kind, key = field(request, "kind") or "", field(request, "target") or ""
    if kind == "event":
        return unmap_event(request)
    removed = mapping_ops.remove(request.conn, kind, key)["removed"]
    named = campaign_named(request, removed) if kind == "campaign_override" else removed
    return ActionResult(f"The {kind.replace('_', ' ')} mapping {named} is removed.", removed)


def refresh_lists(request: StaffRequest) -> ActionResult:
    """`synctool crm refresh` (``POST /api/settings/crm-reference-refresh``), and each donation platform's
    campaigns read again where it has the route (``POST /api/donations/campaigns/refresh``): the lists the
    forms offer by name."""
    counts = crm.refresh(request.conn, request.rt)
    message = f"The CRM's lists are read again: {counts.get('funds', 0)} fund(s), {counts.get('campaigns', 0)} campaign(s), " \
              f"{counts.get('appeals', 0)} appeal(s), {counts.get('events', 0)} event(s)."  # fmt: skip
    for platform in platforms.in_use(request.rt.config):
        path = f"/api/{platform.role}/campaigns/refresh"
        if platform.mappings.types and platform_route(request.rt, "POST", path) is not None:
            refreshed = call_platform_route(request, "POST", path)
            message += f" {platform.name}: {len(refreshed)} campaign(s)."
    return ActionResult(message, "crm")
