"""Mailchimp's audience webhooks: ``GET`` / ``POST`` / ``PATCH /3.0/lists/{list_id}/webhooks``, one per
mapped audience. Mailchimp signs nothing: the ``?secret=`` in the URL is the check. Only ``unsubscribe``
and ``cleaned`` are read, and ``sources.api`` stays off so synctool's own API changes are not echoed back."""

from __future__ import annotations

import secrets as tokens
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from synctool.platform import Check, Found, RegisterResult, Runtime, Wanted, compare, mappings, ours

if TYPE_CHECKING:
    from synctool.platform import Connection
    from synctool.platforms.mailchimp.client import MailingClient

SECRET = "MAILING_WEBHOOK_SECRET"
EVENTS = {"subscribe": False, "unsubscribe": True, "profile": False, "cleaned": True, "upemail": False, "campaign": False}
SOURCES = {"user": True, "admin": True, "api": False}


def _secret_in(url: str) -> str | None:
    found = parse_qs(urlsplit(url).query).get("secret")
    return found[0] if found else None


def wanted(conn: Connection, rt: Runtime, base: str, secret: str | None = None) -> list[Wanted]:
    secret = secret or rt.secrets.get(SECRET) or ""
    return [
        Wanted("mailing", f"{base}/webhooks/mailing?secret={secret}", ["unsubscribe", "cleaned"], SECRET, where=row["key"])
        for row in mappings.all_of(conn, "list_mapping")
    ]


def _found(client: MailingClient, list_id: str) -> list[Found]:
    found = []
    for hook in client.webhooks(list_id):
        events = {e for e, on in (hook.get("events") or {}).items() if on}
        api_echo = bool((hook.get("sources") or {}).get("api"))
        # an endpoint that echoes API changes is not as synctool needs it: count it as missing an event
        found.append(Found(hook["id"], hook.get("url") or "", events | ({"(sources.api off)"} if not api_echo else set()),
                           True, _secret_in(hook.get("url") or "")))  # fmt: skip
    return found


def status(conn: Connection, rt: Runtime, base: str, client: MailingClient) -> list[Check]:
    wants = wanted(conn, rt, base)
    if not wants:
        return [Check("mailing", "not configured", "no audience is mapped", "synctool mailing mappings set LIST_ID")]
    checks = []
    for want in wants:
        want.events = [*want.events, "(sources.api off)"]
        found = _found(client, want.where)
        here = rt.secrets.get(SECRET)
        mine = ours(found, want)
        checks.append(compare(want, found, here, secret_matches=None if mine is None else mine.secret == here))
    return checks


def register(conn: Connection, rt: Runtime, base: str, client: MailingClient) -> list[RegisterResult]:
    secret = rt.secrets.get(SECRET)
    # each mapped audience's webhooks, read once (the URL's secret is not known yet: match on the path)
    registered = {w.where: _found(client, w.where) for w in wanted(conn, rt, base, secret or "-")}
    fresh: dict[str, str] = {}
    if not secret:  # reuse the secret already in a registered URL, else make one
        known = [f.secret for w in wanted(conn, rt, base, "-") for f in registered[w.where] if f.secret and ours([f], w)]
        fresh = {SECRET: known[0] if known else tokens.token_urlsafe(18)}
    outcomes = []
    for want in wanted(conn, rt, base, secret or fresh.get(SECRET)):
        mine = ours(registered[want.where], want)
        if mine is None:
            hook = client.create_webhook(want.where, want.url, EVENTS, SOURCES)
            outcomes.append(RegisterResult("mailing", "created", hook.get("id", ""), where=want.where))
        elif mine.url != want.url or not {"unsubscribe", "cleaned", "(sources.api off)"} <= mine.events:
            client.update_webhook(want.where, mine.id, want.url, EVENTS, SOURCES)
            outcomes.append(
                RegisterResult(
                    "mailing", "repaired", f"{mine.id}: URL (with its secret), events and sources set", where=want.where
                )
            )
        else:
            outcomes.append(RegisterResult("mailing", "unchanged", mine.id, where=want.where))
    if outcomes and fresh:
        outcomes[0].secrets = fresh
    if not outcomes:
        outcomes.append(
            RegisterResult("mailing", "not configured", "no audience is mapped: synctool mailing mappings set LIST_ID")
        )
    return outcomes
