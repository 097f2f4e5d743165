"""The staff page's views and actions.

A view reads through the operation its CLI command and admin API route call, and hands its page's template
(the view's own name: ``syncs`` -> ``templates/syncs.html``) what it found. An action changes something through
the same operation and returns what to say on the next page and what it acted on. Which path shows which view,
for which role, and which action a form posts to, is ``staff_page.PAGES`` and ``staff_page.ACTIONS``."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from synctool.errors import InvalidInput
from synctool.ops import actions as action_ops
from synctool.ops import donors as donor_ops
from synctool.ops import outbox, users
from synctool.ops import overview as overview_ops
from synctool.ops import reconcile as reconcile_ops
from synctool.ops import syncs as sync_ops
from synctool.runtime import Runtime
from synctool.validation import parse
from synctool.web.render import Problem

M = TypeVar("M", bound=BaseModel)


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


# -- what a refused form says: plain words, beside the field they are about ----------------------------------


class FormProblem(InvalidInput):
    """A form's value refused, in the words of the page (never a model's ``emails.1: ...``): ``field`` is the
    form field it is about (None: the form as a whole), so the page shows it there."""

    def __init__(self, text: str, field: str | None = None):
        super().__init__(text)
        self.field = field


#: a form's fields that are not typed, so not kept for the next page
NOT_KEPT = ("csrf", "back")


def problem(error: Any, form_path: str, form: dict[str, str]) -> Problem:
    """What the next page says about a refused form: the error in words, the field it is about (when the form
    has it) and what was typed."""
    text = str(error) + ("" if isinstance(error, FormProblem) or not getattr(error, "detail", "") else f" ({error.detail})")
    name = getattr(error, "field", None)
    kept = {k: v for k, v in form.items() if k not in NOT_KEPT}
    return Problem(text=f"Not done: {text}", form=form_path, field=name if name in form else None,
                   target=form.get("target"), kept=kept)  # fmt: skip


def _typed(value: Any) -> str:
    return f"\u201c{value}\u201d" if isinstance(value, (str, int, float)) and not isinstance(value, bool) else "that"


def _worded(error: Any, label: str) -> str:
    """One pydantic error in a person's words, about the field a person knows as ``label``."""
    kind, got, said = error["type"], error.get("input"), str(error.get("msg", "")).removeprefix("Value error, ")
    typed, what = _typed(got), label[:1].upper() + label[1:]
    if kind == "missing" or (kind == "string_too_short" and not got):
        return f"{what} is needed."
    if said.startswith("not an e-mail address"):
        return f"{typed} is not an e-mail address."
    if said.startswith("not a CRM id"):
        return f"{what}: {typed} is not a CRM id (a whole number): choose it from the list."
    if kind == "literal_error":
        allowed = str(error.get("ctx", {}).get("expected", "")).replace("'", "")
        return f"{what}: {typed} is not one of {allowed}."
    if kind in ("int_parsing", "int_type", "int_from_float", "float_parsing", "float_type"):
        return f"{what}: {typed} is not a number."
    if kind in ("bool_parsing", "bool_type"):
        return f"{what}: choose on or off."
    if kind == "string_too_long":
        return f"{what} is too long (at most {error.get('ctx', {}).get('max_length')} characters)."
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        return f"{what}: {typed} {_bound_words(error)}."
    return f"{what}: {said}."


def _bound_words(error: Any) -> str:
    from synctool.validation import problem as worded

    return worded(error).split(", got ")[0]


def _read(model: type[M], data: dict[str, Any], labels: dict[str, str] | None = None, prefix: str = "") -> M:
    """``data`` as ``model`` (as ``validation.parse`` reads a form), or a ``FormProblem`` about the first field
    that does not fit, in words; ``labels`` name the fields as the form does, ``prefix`` is the form fields'."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else None
        label = (labels or {}).get(name or "") or (name or "the form").replace("_", " ")
        raise FormProblem(_worded(error, label), prefix + name if name else None) from None


# -- pages ---------------------------------------------------------------------------------------------------


def _needs(found: dict[str, Any]) -> list[dict[str, Any]]:
    """What needs attention, each with the page (and the place on it) where a person sees to it; what only
    the server's operator can do (cron, the mail, the platforms' delivery records) says so instead."""
    from urllib.parse import urlencode

    shown = []
    for item in found["attention"]:
        path = "/" + ("" if item["page"] == "overview" else item["page"])
        href: str | None = path
        if item["page"] == "mappings":
            words = str(item.get("command") or "").split()
            campaign = next((c for c in found.get("unmapped_campaigns") or [] if str(c["campaign_id"]) in words), None)
            asked = urlencode({"campaign": campaign["campaign_id"]}) if campaign else ""
            href = f"/mappings?{asked}#campaign-overrides" if asked else "/mappings#campaign-overrides"
        elif item["page"] == "events":
            href = "/events#waiting"
        elif item["page"] == "overview":
            href = None
        operator = item.get("command") if href is None else None
        shown.append({"text": item["text"], "path": path, "href": href, "operator": operator})
    return shown


def overview(ask: Ask) -> Shown:
    found = overview_ops.overview(ask.conn, ask.rt)
    return Shown({"o": found, "needs": _needs(found)})


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
    body = _read(sync_ops.ReleaseBody, {"amount": (ask.form.get("amount") or "").strip()}, {"amount": "amount the bank credited"})
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
    """A waiting event campaign -> a CRM event (`synctool mappings events set`); its orders are queued. The
    campaign is the form's ``target`` (the events page's row, the mappings page's list) or the id or title
    typed in ``campaign_other``."""
    from synctool.ops import events as event_ops

    campaign = _campaign_key(ask, _field(ask, "campaign_other") or _field(ask, "target"), "target")
    given = {"campaign": campaign, "event_id": _field(ask, "event_id")}
    body = _read(event_ops.EventMappingBody, given, {"event_id": "CRM event", "campaign": "the event campaign"})
    _known(ask.conn, "event_id", body.event_id)
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
    body = _read(
        users.InviteBody, {"email": ask.form.get("email"), "role": ask.form.get("role") or "viewer"}, {"email": "e-mail address"}
    )
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
    user = users.update(ask.conn, ask.path["id"], _read(users.UserPatch, patch))
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


#: a coding field -> the CRM reference list its id is one of, and what a person calls it
CODING = {
    "fund_id": ("funds", "CRM fund"),
    "campaign_id": ("campaigns", "CRM campaign"),
    "appeal_id": ("appeals", "CRM appeal"),
    "gift_category_id": ("gift-categories", "CRM gift category"),
    "payment_type_id": ("payment-types", "CRM payment type"),
    "gift_type_id": ("gift-types", "CRM gift type"),
    "event_id": ("events", "CRM event"),
}
#: the coding fields' names as the forms label them
LABELS = {name: what for name, (_, what) in CODING.items()} | {"ack_template_name": "acknowledgement"}


def _item_name(item: dict[str, Any] | None) -> str:
    found = item or {}
    return str(found.get("name") or found.get("display_name") or found.get("title") or found.get("key") or "")


def _crm_named(conn: sqlite3.Connection, kind: str, item_id: Any) -> str:
    """A CRM id as a person reads it: its name from the cached list, the id beside it (``General (#2398)``)."""
    from synctool.crm import references

    name = _item_name(references.find(conn, kind, item_id))
    return f"{name} (#{item_id})" if name else f"#{item_id}"


def _known(conn: sqlite3.Connection, name: str, value: Any) -> None:
    """A coding field's CRM id checked against the cached list, refused in words beside its field."""
    from synctool import settings as cached
    from synctool.crm import references

    kind, what = CODING[name]
    if value is None or references.find(conn, kind, value) is not None:
        return
    if kind == "events" and not cached.cache_refreshed_at(conn, "crm:events"):
        return  # an event's id is taken as given until the CRM's events are read (as `mappings events set` takes it)
    if kind != "events" and not cached.cache_list(conn, f"crm:{kind}"):
        raise FormProblem(f"The CRM's lists have not been read yet, so no {what} can be checked: press "
                          "\u201cRead the CRM's lists\u201d on the Mappings page first.", name)  # fmt: skip
    raise FormProblem(f"There is no {what} #{value} in the CRM's lists as last read: choose one from the list "
                      "(a new one appears once the CRM's lists are read again).", name)  # fmt: skip


def _campaigns(ask: Ask) -> dict[str, dict[str, Any]]:
    """The donation platforms' campaigns as their caches hold them (id -> the campaign and its source)."""
    from synctool import platforms
    from synctool import settings as cached

    return {
        str(c["id"]): {**c, "source": p.role}
        for p in platforms.in_use(ask.rt.config)
        if p.mappings.types
        for c in cached.cache_list(ask.conn, f"{p.role}:campaigns")
        if isinstance(c, dict) and c.get("id") is not None
    }


def _campaign_named(ask: Ask, key: str) -> str:
    """A donation campaign as a person reads it: ``Annual Appeal (118722)``, or its id when none is cached."""
    found = _campaigns(ask).get(str(key)) or {}
    name = found.get("title") or found.get("code")
    return f"{name} ({key})" if name else str(key)


def _campaign_key(ask: Ask, given: str | None, field_name: str) -> str | None:
    """A campaign chosen or typed: its id as given, or the one cached campaign whose title or code it is."""
    if given is None:
        return None
    known = _campaigns(ask)
    if given in known:
        return given
    named = [
        k
        for k, c in known.items()
        if given.casefold() in (str(c.get("title") or "").casefold(), str(c.get("code") or "").casefold())
    ]
    if len(named) > 1:
        listed = ", ".join(_campaign_named(ask, k) for k in named)
        raise FormProblem(f"More than one campaign is called {_typed(given)}: {listed}. Choose it from the list.", field_name)
    return named[0] if named else given


def mappings(ask: Ask) -> Shown:
    """Every kind of mapping as `synctool mappings ...` and `synctool mailing mappings|tag-rules` list them, with
    the CRM's cached lists as the forms' choices and the donation campaigns by name; ``?campaign=ID`` fills the
    campaign override form (the overview's link), ``?edit=KIND&key=KEY`` fills a kind's form with a mapping's
    values to change it."""
    from synctool import mappings as mapping_store
    from synctool import platforms
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
    unmapped = overview_ops.unmapped_campaigns(conn, ask.rt)
    known = _campaigns(ask)
    # every campaign a person may pick by name: the cached ones, those whose gifts had no mapping, those mapped
    for key in [str(u["campaign_id"]) for u in unmapped] + [str(r["key"]) for r in listed["campaign_override"]]:
        known.setdefault(key, {"id": key, "title": next((u["campaign"] for u in unmapped if str(u["campaign_id"]) == key), None)})
    editing: dict[str, Any] = {}
    kind, key = ask.query.get("edit") or "", ask.query.get("key") or ""
    if kind in listed and key:
        editing = next((dict(row) for row in listed[kind] if str(row.get("key", row.get("list_id"))) == key), {})
        editing["kind"] = kind
    elif ask.query.get("campaign"):
        editing = {"kind": "campaign_override", "key": ask.query["campaign"]}
        known.setdefault(editing["key"], {"id": editing["key"], "title": None})
    choices = {k: crm.reference(conn, k)["items"] for k in CHOICES}
    names = {k: {str(i.get("id")): _item_name(i) for i in items} for k, items in choices.items()}
    waiting = {str(u["campaign_id"]) for u in unmapped}
    ordered = sorted(
        known.values(), key=lambda c: (str(c["id"]) not in waiting, str(c.get("title") or c.get("code") or "~").casefold())
    )
    return Shown(
        {
            "m": listed,
            "choices": choices,
            "names": names,
            "lists_read_at": crm.reference(conn, "funds")["refreshed_at"],
            "acks": _ack_templates(conn),
            "type_keys": [f"{p.role}:{t}" for p in in_use for t in p.mappings.types],
            "paying": [(p.role, p.mappings.payment_examples) for p in in_use if p.mappings.payment_case],
            "campaigns": ordered,
            "campaign_names": {str(c["id"]): c.get("title") or c.get("code") or "" for c in ordered},
            "waiting": waiting,
            "unmapped": unmapped,
            "mailing": mailing,
            "editing": editing,
        }
    )


def _field(ask: Ask, name: str) -> str | None:
    value = (ask.form.get(name) or "").strip()
    return value or None


def _coding(ask: Ask) -> dict[str, Any]:
    """A form's CRM coding, read as the API reads it (``Coding``): blank fields unset, each CRM id one of the
    cached lists', and at least one field given."""
    from synctool.ops import mappings as mapping_ops

    given = {f: _field(ask, f) for f in ("fund_id", "campaign_id", "appeal_id", "gift_category_id", "ack_template_name")}
    coding = _read(mapping_ops.Coding, given, LABELS).model_dump()
    for name, value in coding.items():
        if name in CODING:
            _known(ask.conn, name, value)
    if not any(v is not None for v in coding.values()):
        raise FormProblem("Choose at least a CRM fund, campaign, appeal, gift category or acknowledgement.")
    return coding


def _coded(conn: sqlite3.Connection, done: dict[str, Any]) -> str:
    """A coding as a person reads it: ``CRM fund General (#2398), CRM campaign Annual Giving (#822)``."""
    shown = [f"{CODING[k][1]} {_crm_named(conn, CODING[k][0], done[k])}"
             for k in ("fund_id", "campaign_id", "appeal_id", "gift_category_id") if done.get(k) is not None]  # fmt: skip
    if done.get("ack_template_name"):
        ack = done["ack_template_name"]
        shown.append("no acknowledgement" if ack == "do_not_ack" else f"acknowledgement \u201c{ack}\u201d")
    return ", ".join(shown)


def set_type_default(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings types set KEY ...`: the options given replace the type's whole coding."""
    from synctool.ops import mappings as mapping_ops

    done = mapping_ops.set_type_default(ask.conn, _field(ask, "key") or "", **_coding(ask))
    return f"Type default {done['key']}: {_coded(ask.conn, done)}.", done["key"]


def set_campaign_override(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings overrides set CAMPAIGN ...` (``POST /api/mappings/overrides``): the campaign chosen
    from the list, or its id or title typed in ``campaign_other``."""
    from synctool.ops import mappings as mapping_ops

    campaign = _campaign_key(ask, _field(ask, "campaign_other") or _field(ask, "campaign"), "campaign")
    if campaign is None:
        raise FormProblem("Choose the donation campaign to map.", "campaign")
    body = _read(mapping_ops.OverrideBody, {**_coding(ask), "campaign": campaign}, LABELS | {"campaign": "donation campaign"})
    done = mapping_ops.set_campaign_override(ask.conn, body)
    return (
        f"Campaign {_campaign_named(ask, done['key'])} is mapped: {_coded(ask.conn, done)}. Its next gifts are coded so.",
        done["key"],
    )


def set_fund_override(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings funds set FUND --fund-id N` (``POST /api/mappings/funds``)."""
    from synctool.ops import mappings as mapping_ops

    given = {"fund": _field(ask, "fund"), "fund_id": _field(ask, "fund_id")}
    body = _read(mapping_ops.FundOverrideBody, given, {"fund": "donation fund", "fund_id": "CRM fund"})
    _known(ask.conn, "fund_id", body.fund_id)
    done = mapping_ops.set_fund_override(ask.conn, body)
    return f"Gifts designated to fund {done['key']} go to CRM fund {_crm_named(ask.conn, 'funds', done['fund_id'])}.", done["key"]


def set_payment_method(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings payments set ROLE:METHOD ...`."""
    from synctool.ops import mappings as mapping_ops

    if _field(ask, "method") is None:
        raise FormProblem("Payment method is needed (as the platform names it: card, cash, ...).", "method")
    key = f"{_field(ask, 'role') or ''}:{_field(ask, 'method') or ''}"
    values = {}
    for name in ("payment_type_id", "gift_type_id"):
        given = _field(ask, name)
        if given is not None and not given.isdigit():
            raise FormProblem(f"{LABELS[name]}: {_typed(given)} is not a CRM id (a whole number).", name)
        values[name] = None if given is None else int(given)
        _known(ask.conn, name, values[name])
    if not any(values.values()):
        raise FormProblem("Choose a CRM payment type, a CRM gift type, or both.")
    done = mapping_ops.set_payment_method(ask.conn, key, **values)
    ids_said = ", ".join(f"{CODING[k][1]} {_crm_named(ask.conn, CODING[k][0], done[k])}"
                         for k in ("payment_type_id", "gift_type_id") if done.get(k) is not None)  # fmt: skip
    return f"Payment method {done['key']}: {ids_said}.", done["key"]


def set_custom_field(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings custom-fields set FIELD --crm-field NAME`."""
    from synctool.crm.references import gift_field
    from synctool.ops import mappings as mapping_ops

    field_name, crm_field = _field(ask, "field"), _field(ask, "crm_field")
    if field_name is None:
        raise FormProblem("Donation custom field is needed (its id or its title).", "field")
    if crm_field is None:
        raise FormProblem("CRM gift field is needed.", "crm_field")
    if gift_field(ask.conn, crm_field) is None:
        raise FormProblem(f"There is no CRM gift field {_typed(crm_field)} in the CRM's lists as last read: choose one "
                          "from the list.", "crm_field")  # fmt: skip
    done = mapping_ops.set_custom_field(ask.conn, field_name, crm_field)
    return f"Custom field {done['key']} is copied into the CRM gift field {done['crm_field_name']}.", done["key"]


def set_mailing_list(ask: Ask) -> tuple[str, str | None]:
    """`synctool mailing mappings set LIST ...` (``POST /api/mailing/mappings``)."""
    if _field(ask, "list_id") is None:
        raise FormProblem("Mailing list id is needed.", "list_id")
    body = {"list_id": _field(ask, "list_id") or "", "enabled": ask.form.get("enabled") == "on",
            "label": _field(ask, "label"), "push_donors": ask.form.get("push_donors") == "on"}  # fmt: skip
    done = _through(ask, "POST", MAILING_LISTS, body)
    state = "enabled" if done["enabled"] else "disabled"
    named = f"{done['label']} ({done['list_id']})" if done.get("label") else done["list_id"]
    return f"Mailing list {named} is mapped ({state}{', donors pushed' if done['push_donors'] else ''}).", done["list_id"]


def _keywords(ask: Ask, name: str) -> list[int]:
    """Tag keyword ids: a form's comma- or space-separated numbers."""
    given = (ask.form.get(name) or "").replace(",", " ").split()
    wrong = [g for g in given if not g.isdigit()]
    if wrong:
        what = "CRM tags to add" if name == "add" else "CRM tags to remove"
        raise FormProblem(
            f"{what}: {_typed(wrong[0])} is not a tag's id: give the CRM tag ids (numbers) from the list below.", name
        )
    return [int(g) for g in given]


def _tags_named(conn: sqlite3.Connection, ids: list[int]) -> str:
    from synctool import settings as cached

    names = {str(t.get("id")): _item_name(t) for t in cached.cache_list(conn, "crm:tags") if isinstance(t, dict)}
    return ", ".join(f"{names[str(i)]} (#{i})" if names.get(str(i)) else f"#{i}" for i in ids) or "none"


def set_tag_rule(ask: Ask) -> tuple[str, str | None]:
    """`synctool mailing tag-rules set LIST EVENT --add N --remove N` (``POST /api/mailing/tag-rules``)."""
    if _field(ask, "list_id") is None:
        raise FormProblem("Mailing list id is needed (* for every mapped list).", "list_id")
    body = {"list_id": _field(ask, "list_id") or "", "event": _field(ask, "event") or "",
            "add": _keywords(ask, "add"), "remove": _keywords(ask, "remove")}  # fmt: skip
    done = _through(ask, "POST", TAG_RULES, body)
    key = f"{done['list_id']}:{done['event']}"
    return f"Tag rule {key}: add {_tags_named(ask.conn, done['add'])}, remove {_tags_named(ask.conn, done['remove'])}.", key


def remove_mapping(ask: Ask) -> tuple[str, str | None]:
    """`synctool mappings remove KIND KEY` (an event mapping: `synctool mappings events remove`)."""
    from synctool.ops import mappings as mapping_ops

    kind, key = _field(ask, "kind") or "", _field(ask, "target") or ""
    if kind == "event":
        return unmap_event(ask)
    done = mapping_ops.remove(ask.conn, kind, key)
    named = _campaign_named(ask, done["removed"]) if kind == "campaign_override" else done["removed"]
    return f"The {kind.replace('_', ' ')} mapping {named} is removed.", done["removed"]


def refresh_lists(ask: Ask) -> tuple[str, str | None]:
    """`synctool crm refresh` (``POST /api/settings/crm-reference-refresh``), and each donation platform's
    campaigns read again where it has the route (``POST /api/donations/campaigns/refresh``): the lists the
    forms offer by name."""
    from synctool import platforms
    from synctool.ops import crm

    counts = crm.refresh(ask.conn, ask.rt)
    said = f"The CRM's lists are read again: {counts.get('funds', 0)} fund(s), {counts.get('campaigns', 0)} campaign(s), " \
           f"{counts.get('appeals', 0)} appeal(s), {counts.get('events', 0)} event(s)."  # fmt: skip
    for platform in platforms.in_use(ask.rt.config):
        path = f"/api/{platform.role}/campaigns/refresh"
        if platform.mappings.types and _route(ask.rt, "POST", path) is not None:
            found = _through(ask, "POST", path)
            said += f" {platform.name}: {len(found)} campaign(s)."
    return said, "crm"


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
    return {"name": name, "form_name": f"f_{name}", "label": label, "kind": kind, "choices": choices,
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

    done = preview.set_mode(ask.conn, _read(preview.ModeBody, {"mode": _field(ask, "mode")}, {"mode": "sync mode"}))
    said = f"The sync mode is {done['mode']}."
    if done["queued_for_real"]:
        said += f" {done['queued_for_real']} previewed job(s) are queued to run for real at the next drain."
    return said, done["mode"]


def set_donor_matching(ask: Ask) -> tuple[str, str | None]:
    """`synctool settings donor-matching POLICY` (``PATCH /api/settings/donor-matching``)."""
    from synctool.ops import settings as setting_ops

    body = _read(setting_ops.DonorMatchingBody, {"policy": _field(ask, "policy")}, {"policy": "donor matching"})
    done = setting_ops.donor_matching(ask.conn, ask.rt, body)
    return f"Donor matching is {done['policy']}.", done["policy"]


def set_alert_recipients(ask: Ask) -> tuple[str, str | None]:
    """`synctool settings alert-recipients EMAIL...` (none: `--clear`)."""
    from synctool.ops import settings as setting_ops

    emails = (ask.form.get("emails") or "").replace(",", " ").split()
    body = _read(setting_ops.RecipientsBody, {"emails": emails}, {"emails": "e-mail addresses"})
    done = setting_ops.alert_recipients(ask.conn, body)
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
        raise FormProblem("Fill in at least one of the setting's fields.")
    labels = {n: _form_field(n, f, None)["label"] for n, f in model.model_fields.items()}
    done = dict(found.write(ask.conn, _read(model, given, labels, prefix="f_")))
    said = ", ".join(f"{k} {'on' if v is True else 'off' if v is False else v}" for k, v in done.items())
    return f"{name}: {said}.", name
