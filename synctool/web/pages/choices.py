"""What the set-up forms (mappings, events) offer and check: the CRM's cached reference lists and the donation
platforms' cached campaigns, each by name (``synctool crm refresh`` and each platform's campaign refresh fill
them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from synctool import platforms
from synctool import settings as cached
from synctool.crm import references
from synctool.web.pages.forms import FormProblem, typed
from synctool.web.request import StaffRequest

if TYPE_CHECKING:
    from synctool import store

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


def item_name(item: Mapping[str, object] | None) -> str:
    """A cached list item's name, whichever key its list keeps it under."""
    listed = item or {}
    return str(listed.get("name") or listed.get("display_name") or listed.get("title") or listed.get("key") or "")


def crm_named(conn: store.Connection, kind: str, item_id: object) -> str:
    """A CRM id as a person reads it: its name from the cached list, the id beside it (``General (#2398)``)."""
    name = item_name(references.find(conn, kind, item_id))
    return f"{name} (#{item_id})" if name else f"#{item_id}"


def check_known(conn: store.Connection, name: str, value: object) -> None:
    """A coding field's CRM id checked against the cached list, refused in words beside its field."""
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


def campaigns(request: StaffRequest) -> dict[str, dict[str, Any]]:
    """The donation platforms' campaigns (id -> the campaign, its ``title`` and its source): each platform's by name
    as its ``Mappings.campaigns`` hook answers them (with what its cache holds of each beside), else as its cache
    ``<role>:campaigns`` holds them."""
    found: dict[str, dict[str, Any]] = {}
    for p in platforms.in_use(request.rt.config):
        if not p.mappings.types and p.mappings.campaigns is None:
            continue
        held = {
            str(c["id"]): c
            for c in cached.cache_list(request.conn, f"{p.role}:campaigns")
            if isinstance(c, dict) and c.get("id") is not None
        }
        if p.mappings.campaigns is None:
            found.update({key: {**c, "source": p.role} for key, c in held.items()})
            continue
        for key, name in p.mappings.campaigns(request.conn, request.rt).items():
            found[str(key)] = {**held.get(str(key), {}), "id": str(key), "title": str(name), "source": p.role}
    return found


def campaign_named(request: StaffRequest, key: str) -> str:
    """A donation campaign as a person reads it: ``Annual Appeal (118722)``, or its id when none is cached."""
    campaign = campaigns(request).get(str(key)) or {}
    name = campaign.get("title") or campaign.get("code")
    return f"{name} ({key})" if name else str(key)


def campaign_key(request: StaffRequest, given: str | None, field_name: str) -> str | None:
    """A campaign chosen or typed: its id as given, or the one cached campaign whose title or code it is."""
    if given is None:
        return None
    known = campaigns(request)
    if given in known:
        return given
    named = [
        k
        for k, c in known.items()
        if given.casefold() in (str(c.get("title") or "").casefold(), str(c.get("code") or "").casefold())
    ]
    if len(named) > 1:
        listed = ", ".join(campaign_named(request, k) for k in named)
        raise FormProblem(f"More than one campaign is called {typed(given)}: {listed}. Choose it from the list.", field_name)
    return named[0] if named else given
