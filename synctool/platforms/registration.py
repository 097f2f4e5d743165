"""Webhook registration, shared by the platforms (``platforms/<p>/registration.py`` each speak their own
API): what synctool needs registered, what the platform has, and the comparison, in words with the fix.

A registration is "ours" when its URL's path is synctool's route for the source (``/webhooks/pos``);
registering repairs ours in place rather than adding a second one for the same route.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class Wanted:
    """What one source needs registered: the exact URL, the events its handlers read, the secret's name."""

    source: str
    url: str
    events: list[str]
    secret_name: str
    #: where on the platform (a Mailchimp audience), when a platform has several
    where: str = ""


@dataclass
class Found:
    """One registration as the platform reports it."""

    id: str
    url: str
    events: set[str]
    enabled: bool = True
    #: the signing secret, where the platform lets it be read back (Givebutter, Mailchimp's ``?secret=``)
    secret: str | None = None


@dataclass
class Check:
    source: str
    state: str  # ok | missing | wrong URL | missing events | disabled | no secret | not configured | error
    detail: str = ""
    fix: str = ""
    where: str = ""
    registration_id: str | None = None


@dataclass
class RegisterResult:
    """What ``register`` did for one source, and the secrets to keep on this side."""

    source: str
    action: str  # created | repaired | unchanged | secret renewed
    detail: str = ""
    where: str = ""
    secrets: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)


def path_of(url: str) -> str:
    return urlsplit(url).path.rstrip("/")


def ours(found: list[Found], wanted: Wanted) -> Found | None:
    """The registration on synctool's route for this source: the exact URL first, else the same path."""
    exact = [f for f in found if f.url == wanted.url]
    if exact:
        return exact[0]
    same_path = [f for f in found if path_of(f.url) == path_of(wanted.url)]
    return same_path[0] if same_path else None


def needs_repair(mine: Found, wanted: Wanted) -> bool:
    """Whether synctool's registration must be changed in place: another URL, an event missing, switched off."""
    return mine.url != wanted.url or bool(set(wanted.events) - mine.events) or not mine.enabled


def compare(wanted: Wanted, found: list[Found], secret_here: str | None, *, secret_matches: bool | None = None) -> Check:
    """How the platform's registrations stand against what synctool needs, with the fix."""
    fix = f"synctool webhooks register --url {_base(wanted.url)} --source {wanted.source}"
    mine = ours(found, wanted)
    if mine is None:
        return Check(wanted.source, "missing", f"nothing registered for {path_of(wanted.url)}", fix, wanted.where)
    if mine.url != wanted.url:
        return Check(
            wanted.source, "wrong URL", f"registered {mine.url}, synctool needs {wanted.url}", fix, wanted.where, mine.id
        )
    lacking = [e for e in wanted.events if e not in mine.events and "*" not in mine.events]
    if lacking:
        return Check(wanted.source, "missing events", ", ".join(lacking), fix, wanted.where, mine.id)
    if not mine.enabled:
        return Check(wanted.source, "disabled", "the registration is switched off", fix, wanted.where, mine.id)
    if not secret_here:
        return Check(wanted.source, "no secret", f"{wanted.secret_name} is not set on this side", fix, wanted.where, mine.id)
    if secret_matches is False:
        return Check(
            wanted.source, "no secret", f"{wanted.secret_name} is not the registration's secret", fix, wanted.where, mine.id
        )
    return Check(wanted.source, "ok", mine.url, "", wanted.where, mine.id)


def _base(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
