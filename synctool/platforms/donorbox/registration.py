"""Donorbox's webhook registration: its API has no webhook endpoints (its README lists none), so an endpoint is
added in Donorbox's dashboard. ``webhooks status`` says what synctool can know (whether the Signature Secret is
set); ``webhooks register`` prints the exact steps (``docs/donorbox.md`` has them too)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from synctool.platform import Check, RegisterResult, Runtime
from synctool.platforms.donorbox.models import ROLE
from synctool.platforms.donorbox.webhook import EVENTS, SECRET

if TYPE_CHECKING:
    from synctool.platform import Connection


def steps(url: str) -> str:
    """The dashboard steps, after Donorbox's Custom Webhooks and Verify articles (donorbox.zendesk.com
    articles 4733681068820 and 17982194843028)."""
    return (
        "Donorbox's API cannot create webhooks; in Donorbox: 1. Add-ons > API & Zapier Integration (the add-on, or "
        "the Premium plan); 2. 'Add new endpoint URL': URL " + url + ", events " + ", ".join(EVENTS) + ", version v2; "
        "3. open the endpoint's details page (Integrations & Addons > Custom Webhooks) and copy its Signature Secret; "
        f"4. keep it as {SECRET} (`keyring set synctool {SECRET}`, or the environment) and restart the receiver"
    )


def status(conn: Connection, rt: Runtime, base: str, client: Any) -> list[Check]:
    url = f"{base}/webhooks/{ROLE}"
    if not rt.secrets.get(SECRET):
        return [Check(ROLE, "no secret", f"{SECRET} is not set: Donorbox's deliveries are refused", steps(url), where=url)]
    said = "the Signature Secret is set; Donorbox's API cannot list its endpoints: its dashboard shows " + url
    return [Check(ROLE, "ok", said, "", where=url)]


def register(conn: Connection, rt: Runtime, base: str, client: Any) -> list[RegisterResult]:
    url = f"{base}/webhooks/{ROLE}"
    return [RegisterResult(ROLE, "dashboard steps", steps(url), where=url)]
