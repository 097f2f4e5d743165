"""The staff page's views and actions.

A view reads through the operation its CLI command and admin API route call, and hands its page's template
(the view's own name: ``syncs`` -> ``templates/syncs.html``) what it found. An action changes something through
the same operation and returns what to say on the next page and what it acted on. Which path shows which view,
for which role, and which action a form posts to, is ``staff_page.PAGES`` and ``staff_page.ACTIONS``."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from synctool.errors import InvalidInput
from synctool.ops import actions as action_ops
from synctool.ops import donors as donor_ops
from synctool.ops import outbox, users
from synctool.ops import overview as overview_ops
from synctool.ops import reconcile as reconcile_ops
from synctool.ops import syncs as sync_ops
from synctool.runtime import Runtime
from synctool.validation import parse


@dataclass
class Ask:
    """One page request, as a view sees it."""

    conn: sqlite3.Connection
    rt: Runtime
    user: dict[str, Any]
    path: dict[str, Any]
    query: dict[str, str]
    form: dict[str, str] = field(default_factory=dict)


@dataclass
class Shown:
    """What a view hands its template (the view's own name), and the page's status."""

    context: dict[str, Any]
    status: int = 200


#: the sync log's page size on the page (the API's default)
PAGE_SIZE = 50


def overview(ask: Ask) -> Shown:
    return Shown({"o": overview_ops.overview(ask.conn, ask.rt)})


def syncs(ask: Ask) -> Shown:
    """The sync log, filtered as `synctool syncs list` filters it."""
    filters = {k: v for k, v in ask.query.items() if k in ("status", "source", "date_from", "date_to", "q", "page") and v}
    shown = {"filters": filters, "result": None, "problem": None, "statuses": sync_ops.STATUSES_WITH_RESOLVED}
    try:
        query = parse(sync_ops.SyncQuery, {**filters, "limit": PAGE_SIZE}, where="filters")
    except InvalidInput as exc:
        return Shown({**shown, "problem": f"{exc} {exc.detail}"}, 400)
    return Shown({**shown, "result": sync_ops.list_syncs(ask.conn, query)})


def sync_record(ask: Ask) -> Shown:
    record = sync_ops.show_sync(ask.conn, ask.path["id"])
    done = action_ops.list_actions(ask.conn, action_ops.ActionsQuery(target=record["id"]))["items"]
    return Shown({"r": record, "done": done})


def failed(ask: Ask) -> Shown:
    number = ask.query.get("page") or "1"
    query = parse(sync_ops.SyncQuery, {"status": "failed", "page": number, "limit": PAGE_SIZE}, where="filters")
    from synctool.crm import currency

    held = currency.listing(ask.conn, "pending", 100)  # money in another currency, waiting for the bank's amount
    return Shown({"result": sync_ops.list_syncs(ask.conn, query), "held": held, "filters": {}})


def reconcile(ask: Ask) -> Shown:
    found = reconcile_ops.differences(ask.conn)
    reviewed = reconcile_ops.accepted(ask.conn)["items"][:50]
    return Shown({"d": found, "reviewed": reviewed})


def donors(ask: Ask) -> Shown:
    """Donor changes to apply or dismiss, and gifts held for a donor match."""
    status = ask.query.get("status") or "pending"
    found = donor_ops.changes(ask.conn, parse(donor_ops.ChangesQuery, {"status": status}, where="filters"))
    held = donor_ops.matches(ask.conn, donor_ops.MatchesQuery(status="pending"))
    return Shown({"changes": found, "matches": held, "status": status})


def payouts(ask: Ask) -> Shown:
    """The form; with a period, the payouts of that period, read from the platforms as `reconcile payouts`
    reads them (the one page that spends requests, and only when asked)."""
    query = parse(reconcile_ops.PayoutsQuery, ask.query, where="filters")
    result = None
    if query.start or ask.query.get("run"):
        result = reconcile_ops.payouts(ask.conn, ask.rt, start=query.start, end=query.end, source=query.source)
    return Shown({"result": result, "start": query.start or "", "end": query.end or ""})


def year_end(ask: Ask) -> Shown:
    """The last year-end check of a year (this season's by default), as stored: the page runs no check."""
    from synctool.ops import year_end as year_end_ops

    today = year_end_ops.today(ask.rt)
    try:
        year = int(ask.query.get("year") or today.year - (1 if today.month == 1 else 0))
    except ValueError:
        raise InvalidInput("the year must be a number") from None
    return Shown({"year": year, "check": year_end_ops.last(ask.conn, year)})


#: an invitation's RSVP as LGL numbers it, in words (none yet, or another number: "not said")
RSVP = {1: "yes", 2: "no"}


def events(ask: Ask) -> Shown:
    """Who came: as `synctool events list`, with the cached CRM events for an admin's mapping form."""
    from synctool.ops import crm
    from synctool.ops import events as event_ops

    found = event_ops.list_events(ask.conn)
    crm_events = crm.reference(ask.conn, "events")["items"]
    return Shown({"e": found, "crm_events": crm_events})


def event_detail(ask: Ask) -> Shown:
    """One event campaign's orders, as `synctool events show CAMPAIGN`; its counts and title as the list shows them."""
    from synctool.ops import events as event_ops

    shown = event_ops.show_event(ask.conn, ask.path["campaign"])
    listed = event_ops.list_events(ask.conn)
    row = next((r for r in [*listed["items"], *listed["waiting"]] if r["campaign_id"] == shown["campaign_id"]), None)
    return Shown({"detail": shown, "row": row, "rsvp": RSVP})


def team(ask: Ask) -> Shown:
    return Shown({"users": users.list_users(ask.conn)})


def actions(ask: Ask) -> Shown:
    query = parse(action_ops.ActionsQuery, ask.query, where="filters")
    return Shown({"result": action_ops.list_actions(ask.conn, query), "filters": {}})


# -- actions: (what to say, what was acted on) -------------------------------------------------------------


def retry(ask: Ask) -> tuple[str, str | None]:
    job = sync_ops.retry(ask.conn, ask.path["id"])
    return f"Sync record {job['id'][:8]} is queued again; the next drain runs it.", job["id"]


def resolve(ask: Ask) -> tuple[str, str | None]:
    note = (ask.form.get("note") or "").strip()
    if not note:
        raise InvalidInput("a note is required", "say what was done about it")
    body = sync_ops.ResolveBody(notes=note, resolvedBy=ask.user["email"])
    record = sync_ops.resolve(ask.conn, ask.path["id"], body)
    return f"Sync record {record['id'][:8]} is resolved.", record["id"]


def release(ask: Ask) -> tuple[str, str | None]:
    """A job held for money in another currency, written at the amount the bank credited."""
    body = parse(sync_ops.ReleaseBody, {"amount": (ask.form.get("amount") or "").strip()}, where="form")
    result = sync_ops.release(ask.conn, ask.path["id"], body, by=ask.user["email"])
    return f"{result['held']} is released at {result['released']}; the next drain writes it.", result["job"]


def accept(ask: Ask) -> tuple[str, str | None]:
    external_id = ask.form.get("target") or ""
    row = reconcile_ops.accept(ask.conn, external_id, ask.form.get("note") or "", ask.user["email"])
    return f"The difference on {row['external_id']} is accepted.", row["external_id"]


def _change_ids(ask: Ask) -> donor_ops.DecideBody:
    return donor_ops.DecideBody(ids=[ask.path["id"]])


def apply_change(ask: Ask) -> tuple[str, str | None]:
    result = donor_ops.apply(ask.conn, ask.rt, _change_ids(ask))["results"][0]
    return f"Donor change {result['id']}: {result['result']}" + (f" ({result['detail']})" if result.get("detail") else ""), str(
        ask.path["id"]
    )


def dismiss_change(ask: Ask) -> tuple[str, str | None]:
    result = donor_ops.dismiss(ask.conn, _change_ids(ask))["results"][0]
    return f"Donor change {result['id']}: {result['result']}", str(ask.path["id"])


def accept_match(ask: Ask) -> tuple[str, str | None]:
    body = donor_ops.AcceptBody(constituent_id=ask.form.get("constituent") or None)
    result = donor_ops.accept_match(ask.conn, ask.path["id"], body, by=ask.user["email"])
    return f"Donor match {ask.path['id']}: the gift goes to {result['decision']}; the next drain writes it.", str(ask.path["id"])


def new_constituent(ask: Ask) -> tuple[str, str | None]:
    donor_ops.new_constituent(ask.conn, ask.path["id"], by=ask.user["email"])
    return f"Donor match {ask.path['id']}: a new constituent; the next drain writes the gift.", str(ask.path["id"])


def map_event(ask: Ask) -> tuple[str, str | None]:
    """A waiting event campaign -> a CRM event (`synctool mappings events set`); its orders are queued."""
    from synctool.ops import events as event_ops

    campaign = (ask.form.get("target") or "").strip()
    body = parse(event_ops.EventMappingBody, {"campaign": campaign, "event_id": (ask.form.get("event_id") or "").strip()},
                 where="form")  # fmt: skip
    done = event_ops.set_mapping(ask.conn, body)
    event = f"{done['event_name']} ({done['event_id']})" if done.get("event_name") else str(done["event_id"])
    said = f"Campaign {done.get('campaign') or done['key']} is mapped to CRM event {event}"
    return said + f"; {done['orders_queued']} order(s) are queued for the next drain.", done["key"]


def unmap_event(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings events remove`: invitations written stay in the CRM; new orders wait."""
    from synctool.ops import events as event_ops

    done = event_ops.remove_mapping(ask.conn, (ask.form.get("target") or "").strip())
    return f"Campaign {done['removed']} is mapped to no CRM event now: its new orders wait.", done["removed"]


def invite(ask: Ask) -> tuple[str, str | None]:
    body = parse(users.InviteBody, {"email": ask.form.get("email"), "role": ask.form.get("role") or "viewer"}, where="form")
    user = users.invite(ask.conn, body)
    said = f"{user['email']} is invited as {user['role']}."
    if ask.form.get("send"):  # through the outbox: the page never waits for the mail server
        outbox.queue_sign_in(ask.conn, user["id"], user["email"])
        said += " A sign-in link will be on its way to them at the next drain."
    return said, user["email"]


def change_user(ask: Ask) -> tuple[str, str | None]:
    what = ask.form.get("change")
    changes: dict[str, dict[str, Any]] = {
        "role": {"role": ask.form.get("role")},
        "deactivate": {"deactivate": True},
        "activate": {"active": True},
    }
    patch = changes.get(what or "", {})
    if not patch:
        raise InvalidInput("say what to change", "role, deactivate or activate")
    if ask.path["id"] == ask.user["id"] and (what != "role" or patch["role"] != "super_admin"):
        # the last super_admin locking themselves out would leave the team page to no one
        raise InvalidInput("you cannot lower or deactivate yourself here", "another super_admin can, or `synctool users update`")
    user = users.update(ask.conn, ask.path["id"], parse(users.UserPatch, patch, where="form"))
    state = "active" if user["active"] else "deactivated"
    return f"{user['email']} is now {user['role']}, {state}.", user["email"]


# -- set-up: the mappings and the settings -------------------------------------------------------------------

#: the CRM reference lists the mapping forms offer as choices (``synctool crm refresh`` caches them)
CHOICES = ("funds", "campaigns", "appeals", "gift-categories", "gift-types", "payment-types", "events", "gift-fields", "tags")
#: the mailing platform's routes its list mappings and tag rules are read and set through (``Platform.routes``)
MAILING_LISTS, TAG_RULES = "/api/mailing/mappings", "/api/mailing/tag-rules"


def _route(rt: Runtime, method: str, path: str) -> Any:
    """The admin API route of a platform in use that answers ``method path`` (None: no platform in use has it)."""
    from synctool import platforms

    for platform in platforms.in_use(rt.config):
        for route in platform.routes() if platform.routes else ():
            if route.method == method and route.path == path:
                return route
    return None


def _through(ask: Ask, method: str, path: str, body: Any = None) -> Any:
    """What a platform's admin API route answers, called as the API calls it (the same operation)."""
    from synctool.web.api_handlers import Call

    route = _route(ask.rt, method, path)
    if route is None:
        raise InvalidInput("no platform in use keeps these mappings", "see `synctool platforms`")
    return route.handler(Call(ask.conn, ask.rt, ask.user, {}, {}, {} if body is None else body))


def _ack_templates(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    from synctool.ops import crm

    return [t for t in crm.reference(conn, "mailing-templates")["items"] if "ack" in str(t.get("mailing_type_name", "")).lower()]


def mappings(ask: Ask) -> Shown:
    """Every kind of mapping as `synctool mappings ...` and `synctool mailing mappings|tag-rules` list them, with
    the CRM's cached lists as the forms' choices; ``?campaign=ID`` fills the campaign override form (the
    overview's link), ``?edit=KIND&key=KEY`` fills a kind's form with a mapping's values to change it."""
    from synctool import mappings as mapping_store
    from synctool import platforms, settings
    from synctool.ops import crm
    from synctool.ops import events as event_ops

    conn = ask.conn
    in_use = platforms.in_use(ask.rt.config)
    listed = {
        kind: mapping_store.all_of(conn, kind)
        for kind in ("type_default", "campaign_override", "fund_override", "payment_method", "custom_field")
    }
    listed["event"] = event_ops.list_mappings(conn)
    mailing = _route(ask.rt, "GET", MAILING_LISTS) is not None
    if mailing:
        listed["list_mapping"] = _through(ask, "GET", MAILING_LISTS)
        listed["tag_rule"] = _through(ask, "GET", TAG_RULES)
    campaigns = [
        {**c, "source": p.role}
        for p in in_use
        if p.mappings.types
        for c in settings.cache_list(conn, f"{p.role}:campaigns")
        if isinstance(c, dict) and c.get("id") is not None
    ]
    editing: dict[str, Any] = {}
    kind, key = ask.query.get("edit") or "", ask.query.get("key") or ""
    if kind in listed and key:
        editing = next((dict(row) for row in listed[kind] if str(row.get("key", row.get("list_id"))) == key), {})
        editing["kind"] = kind
    elif ask.query.get("campaign"):
        editing = {"kind": "campaign_override", "key": ask.query["campaign"]}
    return Shown(
        {
            "m": listed,
            "choices": {k: crm.reference(conn, k)["items"] for k in CHOICES},
            "acks": _ack_templates(conn),
            "type_keys": [f"{p.role}:{t}" for p in in_use for t in p.mappings.types],
            "paying": [(p.role, p.mappings.payment_examples) for p in in_use if p.mappings.payment_case],
            "campaigns": campaigns,
            "unmapped": overview_ops.unmapped_campaigns(conn, ask.rt),
            "mailing": mailing,
            "editing": editing,
        }
    )


def _field(ask: Ask, name: str) -> str | None:
    value = (ask.form.get(name) or "").strip()
    return value or None


def _coding(ask: Ask) -> dict[str, Any]:
    """A form's CRM coding, read as the API reads it (``Coding``): blank fields unset."""
    from synctool.ops import mappings as mapping_ops

    given = {f: _field(ask, f) for f in ("fund_id", "campaign_id", "appeal_id", "gift_category_id", "ack_template_name")}
    return parse(mapping_ops.Coding, given, where="form").model_dump()


def _coded(done: dict[str, Any]) -> str:
    shown = [f"{k} {done[k]}" for k in ("fund_id", "campaign_id", "appeal_id", "gift_category_id") if done.get(k) is not None]
    if done.get("ack_template_name"):
        shown.append("no acknowledgement" if done["ack_template_name"] == "do_not_ack" else f"ack {done['ack_template_name']}")
    return ", ".join(shown)


def set_type_default(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings types set KEY ...`: the options given replace the type's whole coding."""
    from synctool.ops import mappings as mapping_ops

    done = mapping_ops.set_type_default(ask.conn, _field(ask, "key") or "", **_coding(ask))
    return f"Type default {done['key']}: {_coded(done)}.", done["key"]


def set_campaign_override(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings overrides set CAMPAIGN ...` (``POST /api/mappings/overrides``)."""
    from synctool.ops import mappings as mapping_ops

    body = parse(mapping_ops.OverrideBody, {**_coding(ask), "campaign": _field(ask, "campaign")}, where="form")
    done = mapping_ops.set_campaign_override(ask.conn, body)
    return f"Campaign {done['key']} is mapped: {_coded(done)}. Its next gifts are coded so.", done["key"]


def set_fund_override(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings funds set FUND --fund-id N` (``POST /api/mappings/funds``)."""
    from synctool.ops import mappings as mapping_ops

    body = parse(mapping_ops.FundOverrideBody, {"fund": _field(ask, "fund"), "fund_id": _field(ask, "fund_id")}, where="form")
    done = mapping_ops.set_fund_override(ask.conn, body)
    return f"Gifts designated to fund {done['key']} go to CRM fund {done['fund_id']}.", done["key"]


def set_payment_method(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings payments set ROLE:METHOD ...`."""
    from synctool.ops import mappings as mapping_ops

    key = f"{_field(ask, 'role') or ''}:{_field(ask, 'method') or ''}"
    values = {}
    for name in ("payment_type_id", "gift_type_id"):
        given = _field(ask, name)
        if given is not None and not given.isdigit():
            raise InvalidInput(f"{name}: not a number", "in the form")
        values[name] = None if given is None else int(given)
    done = mapping_ops.set_payment_method(ask.conn, key, **values)
    ids_said = ", ".join(f"{k} {done[k]}" for k in ("payment_type_id", "gift_type_id") if done.get(k) is not None)
    return f"Payment method {done['key']}: {ids_said}.", done["key"]


def set_custom_field(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings custom-fields set FIELD --crm-field NAME`."""
    from synctool.ops import mappings as mapping_ops

    done = mapping_ops.set_custom_field(ask.conn, _field(ask, "field") or "", _field(ask, "crm_field") or "")
    return f"Custom field {done['key']} is copied into the CRM gift field {done['crm_field_name']}.", done["key"]


def set_mailing_list(ask: Ask) -> tuple[str, str | None]:
    """`synctool mailing mappings set LIST ...` (``POST /api/mailing/mappings``)."""
    body = {"list_id": _field(ask, "list_id") or "", "enabled": ask.form.get("enabled") == "on",
            "label": _field(ask, "label"), "push_donors": ask.form.get("push_donors") == "on"}  # fmt: skip
    done = _through(ask, "POST", MAILING_LISTS, body)
    state = "enabled" if done["enabled"] else "disabled"
    return f"Mailing list {done['list_id']} is mapped ({state}{', donors pushed' if done['push_donors'] else ''}).", done[
        "list_id"
    ]


def _keywords(ask: Ask, name: str) -> list[int]:
    """Tag keyword ids: a form's comma- or space-separated numbers."""
    given = (ask.form.get(name) or "").replace(",", " ").split()
    if not all(g.isdigit() for g in given):
        raise InvalidInput(f"{name}: give CRM tag keyword ids (numbers)", "in the form")
    return [int(g) for g in given]


def set_tag_rule(ask: Ask) -> tuple[str, str | None]:
    """`synctool mailing tag-rules set LIST EVENT --add N --remove N` (``POST /api/mailing/tag-rules``)."""
    body = {"list_id": _field(ask, "list_id") or "", "event": _field(ask, "event") or "",
            "add": _keywords(ask, "add"), "remove": _keywords(ask, "remove")}  # fmt: skip
    done = _through(ask, "POST", TAG_RULES, body)
    key = f"{done['list_id']}:{done['event']}"
    return f"Tag rule {key}: add {done['add'] or 'none'}, remove {done['remove'] or 'none'}.", key


def remove_mapping(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings remove KIND KEY` (an event mapping: `synctool mappings events remove`)."""
    from synctool.ops import mappings as mapping_ops

    kind, key = _field(ask, "kind") or "", _field(ask, "target") or ""
    if kind == "event":
        return unmap_event(ask)
    done = mapping_ops.remove(ask.conn, kind, key)
    return f"The {kind.replace('_', ' ')} mapping {done['removed']} is removed.", done["removed"]


def _form_field(name: str, found: Any, value: Any) -> dict[str, Any]:
    """One field of a platform setting's body model, as its form shows it: a yes/no choice, a list of choices
    (a ``Literal``) or text, with its description and the value it holds now."""
    import typing

    kinds = [a for a in typing.get_args(found.annotation) if a is not type(None)] or [found.annotation]
    kind, choices = "text", None
    if bool in kinds:
        kind, choices = "choice", [("on", "on"), ("off", "off")]
        value = None if value is None else ("on" if value else "off")
    elif typing.get_origin(kinds[0]) is typing.Literal:
        kind, choices = "choice", [(str(c), str(c)) for c in typing.get_args(kinds[0])]
    words, said = name.replace("_", " "), found.description
    label = said if said and words in said.lower() else words + (f" ({said})" if said else "")
    return {"name": name, "label": label, "kind": kind, "choices": choices,
            "required": found.is_required(), "value": "" if value is None else str(value)}  # fmt: skip


def _platform_settings(ask: Ask) -> list[dict[str, Any]]:
    from synctool import platforms

    shown = []
    for platform in platforms.in_use(ask.rt.config):
        for setting in platform.settings:
            value = dict(setting.read(ask.conn))
            fields = [_form_field(n, f, value.get(n)) for n, f in setting.body().model_fields.items()]
            shown.append(
                {"platform": platform.name, "name": setting.name, "help": setting.help, "value": value, "fields": fields}
            )
    return shown


def settings(ask: Ask) -> Shown:
    """The settings as `synctool sync-mode`, `synctool settings donor-matching`, `... alert-recipients` and each
    platform's `synctool settings NAME` show them, each with its form."""
    from synctool.ops import preview
    from synctool.ops import settings as setting_ops

    return Shown(
        {
            "mode": preview.set_mode(ask.conn),
            "matching": setting_ops.donor_matching(ask.conn, ask.rt),
            "recipients": setting_ops.alert_recipients(ask.conn)["emails"],
            "platform_settings": _platform_settings(ask),
        }
    )


def set_sync_mode(ask: Ask) -> tuple[str, str | None]:
    """`synctool sync-mode live|preview`: going live queues the previewed jobs to run for real."""
    from synctool.ops import preview

    done = preview.set_mode(ask.conn, parse(preview.ModeBody, {"mode": _field(ask, "mode")}, where="form"))
    said = f"The sync mode is {done['mode']}."
    if done["queued_for_real"]:
        said += f" {done['queued_for_real']} previewed job(s) are queued to run for real at the next drain."
    return said, done["mode"]


def set_donor_matching(ask: Ask) -> tuple[str, str | None]:
    """`synctool settings donor-matching POLICY` (``PATCH /api/settings/donor-matching``)."""
    from synctool.ops import settings as setting_ops

    body = parse(setting_ops.DonorMatchingBody, {"policy": _field(ask, "policy")}, where="form")
    done = setting_ops.donor_matching(ask.conn, ask.rt, body)
    return f"Donor matching is {done['policy']}.", done["policy"]


def set_alert_recipients(ask: Ask) -> tuple[str, str | None]:
    """`synctool settings alert-recipients EMAIL...` (none: `--clear`)."""
    from synctool.ops import settings as setting_ops

    emails = (ask.form.get("emails") or "").replace(",", " ").split()
    done = setting_ops.alert_recipients(ask.conn, parse(setting_ops.RecipientsBody, {"emails": emails}, where="form"))
    said = ", ".join(done["emails"]) or "no one"
    return f"The failure digest goes to {said}.", said


def set_platform_setting(ask: Ask) -> tuple[str, str | None]:
    """A platform's `synctool settings NAME ...` (``PATCH /api/settings/NAME``): the fields given, checked with
    the setting's body model."""
    from synctool import platforms
    from synctool.errors import NotFound

    name = ask.path["name"]
    found = next((s for p in platforms.in_use(ask.rt.config) for s in p.settings if s.name == name), None)
    if found is None:
        raise NotFound(f"no setting {name} of a platform in use")
    model = found.body()
    given = {n: _field(ask, f"f_{n}") for n in model.model_fields if _field(ask, f"f_{n}") is not None}
    if not given:
        raise InvalidInput("nothing to change", "fill in the setting's fields")
    done = dict(found.write(ask.conn, parse(model, given, where="form")))
    said = ", ".join(f"{k} {'on' if v is True else 'off' if v is False else v}" for k, v in done.items())
    return f"{name}: {said}.", name
