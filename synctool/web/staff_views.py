"""The staff page's views: each reads through the operation its CLI command and admin API route call, and
hands a template its result. The actions return what to say on the next page and what they acted on."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from synctool.errors import InvalidInput
from synctool.ops import actions as action_ops
from synctool.ops import donors, outbox, syncs, users
from synctool.ops import overview as overview_ops
from synctool.ops import reconcile as reconcile_ops
from synctool.runtime import Runtime
from synctool.timeutil import parse_moment
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
    """What a view hands back: a template and its context."""

    template: str
    context: dict[str, Any]
    status: int = 200


#: the sync log's page size on the page (the API's default)
PAGE_SIZE = 50


def when(value: str | None) -> str:
    """A stored UTC time, shortened for a table: ``2026-11-24 14:05 UTC``."""
    if not value:
        return ""
    try:
        moment = parse_moment(value)
    except InvalidInput:
        return value
    return datetime.strftime(moment, "%Y-%m-%d %H:%M UTC")


def overview(ask: Ask) -> Shown:
    return Shown("overview.html", {"o": overview_ops.overview(ask.conn, ask.rt), "page": "overview"})


def sync_log(ask: Ask) -> Shown:
    filters = {k: v for k, v in ask.query.items() if k in ("status", "source", "date_from", "date_to", "q", "page") and v}
    try:
        query = parse(syncs.SyncQuery, {**filters, "limit": PAGE_SIZE}, where="filters")
    except InvalidInput as exc:
        return Shown("syncs.html", {"filters": filters, "result": None, "problem": f"{exc} {exc.detail}", "page": "syncs",
                                    "statuses": syncs.STATUSES_WITH_RESOLVED}, 400)  # fmt: skip
    result = syncs.list_syncs(ask.conn, query)
    return Shown("syncs.html", {"filters": filters, "result": result, "problem": None, "page": "syncs",
                                "statuses": syncs.STATUSES_WITH_RESOLVED})  # fmt: skip


def sync_record(ask: Ask) -> Shown:
    record = syncs.show_sync(ask.conn, ask.path["id"])
    done = action_ops.list_actions(ask.conn, action_ops.ActionsQuery(target=record["id"]))["items"]
    return Shown("sync.html", {"r": record, "done": done, "page": "syncs"})


def failed(ask: Ask) -> Shown:
    number = ask.query.get("page") or "1"
    query = parse(syncs.SyncQuery, {"status": "failed", "page": number, "limit": PAGE_SIZE}, where="filters")
    from synctool.crm import currency

    held = currency.listing(ask.conn, "pending", 100)  # money in another currency, waiting for the bank's amount
    return Shown("failed.html", {"result": syncs.list_syncs(ask.conn, query), "held": held, "page": "failed", "filters": {}})


def reconcile(ask: Ask) -> Shown:
    found = reconcile_ops.differences(ask.conn)
    reviewed = reconcile_ops.accepted(ask.conn)["items"][:50]
    return Shown("reconcile.html", {"d": found, "reviewed": reviewed, "page": "reconcile"})


def donor_changes(ask: Ask) -> Shown:
    status = ask.query.get("status") or "pending"
    found = donors.changes(ask.conn, parse(donors.ChangesQuery, {"status": status}, where="filters"))
    held = donors.matches(ask.conn, donors.MatchesQuery(status="pending"))
    return Shown("donors.html", {"changes": found, "matches": held, "status": status, "page": "donors"})


def payouts(ask: Ask) -> Shown:
    """The form; with a period, the payouts of that period, read from the platforms as `reconcile payouts`
    reads them (the one page that spends requests, and only when asked)."""
    query = parse(reconcile_ops.PayoutsQuery, ask.query, where="filters")
    result = None
    if query.start or ask.query.get("run"):
        result = reconcile_ops.payouts(ask.conn, ask.rt, start=query.start, end=query.end, source=query.source)
    return Shown("payouts.html", {"result": result, "start": query.start or "", "end": query.end or "", "page": "payouts"})


def year_end_page(ask: Ask) -> Shown:
    """The last year-end check of a year (this season's by default), as stored: the page runs no check."""
    from synctool.ops import year_end

    try:
        year = int(ask.query.get("year") or year_end.today(ask.rt).year - (1 if year_end.today(ask.rt).month == 1 else 0))
    except ValueError:
        raise InvalidInput("the year must be a number") from None
    return Shown("year_end.html", {"year": year, "check": year_end.last(ask.conn, year), "page": "year-end"})


#: an invitation's RSVP as LGL numbers it, in words (none yet, or another number: "not said")
RSVP = {1: "yes", 2: "no"}


def events(ask: Ask) -> Shown:
    """Who came: as `synctool events list`, with the cached CRM events for an admin's mapping form."""
    from synctool.ops import crm
    from synctool.ops import events as event_ops

    found = event_ops.list_events(ask.conn)
    crm_events = crm.reference(ask.conn, "events")["items"]
    return Shown("events.html", {"e": found, "crm_events": crm_events, "detail": None, "page": "events"})


def event_detail(ask: Ask) -> Shown:
    """One event campaign's orders, as `synctool events show CAMPAIGN`; its counts and title as the list shows them."""
    from synctool.ops import events as event_ops

    shown = event_ops.show_event(ask.conn, ask.path["campaign"])
    listed = event_ops.list_events(ask.conn)
    row = next((r for r in [*listed["items"], *listed["waiting"]] if r["campaign_id"] == shown["campaign_id"]), None)
    return Shown("events.html", {"detail": shown, "row": row, "rsvp": RSVP, "page": "events"})


def team(ask: Ask) -> Shown:
    return Shown("team.html", {"users": users.list_users(ask.conn), "page": "team"})


def actions(ask: Ask) -> Shown:
    query = parse(action_ops.ActionsQuery, ask.query, where="filters")
    return Shown("actions.html", {"result": action_ops.list_actions(ask.conn, query), "filters": {}, "page": "actions"})


# -- actions: (what to say, what was acted on) -------------------------------------------------------------


def retry(ask: Ask) -> tuple[str, str | None]:
    job = syncs.retry(ask.conn, ask.path["id"])
    return f"Sync record {job['id'][:8]} is queued again; the next drain runs it.", job["id"]


def resolve(ask: Ask) -> tuple[str, str | None]:
    note = (ask.form.get("note") or "").strip()
    if not note:
        raise InvalidInput("a note is required", "say what was done about it")
    body = syncs.ResolveBody(notes=note, resolvedBy=ask.user["email"])
    record = syncs.resolve(ask.conn, ask.path["id"], body)
    return f"Sync record {record['id'][:8]} is resolved.", record["id"]


def release(ask: Ask) -> tuple[str, str | None]:
    """A job held for money in another currency, written at the amount the bank credited."""
    body = parse(syncs.ReleaseBody, {"amount": (ask.form.get("amount") or "").strip()}, where="form")
    result = syncs.release(ask.conn, ask.path["id"], body, by=ask.user["email"])
    return f"{result['held']} is released at {result['released']}; the next drain writes it.", result["job"]


def accept(ask: Ask) -> tuple[str, str | None]:
    external_id = ask.form.get("target") or ""
    row = reconcile_ops.accept(ask.conn, external_id, ask.form.get("note") or "", ask.user["email"])
    return f"The difference on {row['external_id']} is accepted.", row["external_id"]


def _change_ids(ask: Ask) -> donors.DecideBody:
    return donors.DecideBody(ids=[ask.path["id"]])


def apply_change(ask: Ask) -> tuple[str, str | None]:
    result = donors.apply(ask.conn, ask.rt, _change_ids(ask))["results"][0]
    return f"Donor change {result['id']}: {result['result']}" + (f" ({result['detail']})" if result.get("detail") else ""), str(
        ask.path["id"]
    )


def dismiss_change(ask: Ask) -> tuple[str, str | None]:
    result = donors.dismiss(ask.conn, _change_ids(ask))["results"][0]
    return f"Donor change {result['id']}: {result['result']}", str(ask.path["id"])


def accept_match(ask: Ask) -> tuple[str, str | None]:
    body = donors.AcceptBody(constituent_id=ask.form.get("constituent") or None)
    result = donors.accept_match(ask.conn, ask.path["id"], body, by=ask.user["email"])
    return f"Donor match {ask.path['id']}: the gift goes to {result['decision']}; the next drain writes it.", str(ask.path["id"])


def new_constituent(ask: Ask) -> tuple[str, str | None]:
    donors.new_constituent(ask.conn, ask.path["id"], by=ask.user["email"])
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
