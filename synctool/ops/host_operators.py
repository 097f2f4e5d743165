"""The host's operators' operations (``synctool/host.py`` says where the host's data lives): their sign-in link to
the host page, and the host's overview the page shows.

The overview is ``orgs list``'s rows (``ops.orgs.summary``: platforms in use, jobs due, failed, last drain, last
poll; counts and times, never a donor's name, e-mail, amount or campaign) and, for each organisation, whether the
operator is also an active user in that organisation's own database (read-only), which is when the page links
into it. An organisation that cannot be read keeps its error in its row and stops no other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NotRequired, TypedDict

from synctool import host, orgs, store
from synctool.errors import Conflict, NotFound, SynctoolError
from synctool.ops import sign_in
from synctool.runtime import Runtime


class OrgRow(TypedDict):
    """One organisation as the host page shows it."""

    name: str
    platforms: str
    due: int | None
    failed: int | None
    last_drain: str | None
    last_poll: str | None
    error: NotRequired[str]
    #: the operator is an active user of this organisation too: the page links to its staff page
    member: bool


def login_link(conn: store.Connection, rt: Runtime, email: str, url: str | None = None) -> sign_in.SignInLink:
    """A one-time sign-in link to the host page for an active host operator (``conn``: the host's database):
    ``sign_in.login_link``'s link and expiry, at ``URL/host/login/TOKEN``; ``url`` else the host's public URL
    (``receiver.public_url`` in the host's config) else its receiver's address."""
    try:
        link = sign_in.login_link(conn, rt, email)
    except NotFound:
        raise NotFound(f"no host operator {email!r}", "add one: synctool users add EMAIL --host-admin") from None
    except Conflict:
        raise Conflict(f"{email} is deactivated (synctool users update {email} --host-admin --activate)") from None
    token = link["url"].rsplit("/", 1)[1]  # the link's last segment, whichever page it was made for
    base = (url or sign_in.base_url(conn, rt)).rstrip("/")
    return {**link, "url": f"{base}{host.PAGE_PATH}/login/{token}"}


def is_member(org: orgs.Org, email: str) -> bool:
    """Whether ``email`` is an active user in the organisation's own database (opened read-only; an organisation
    that cannot be read has no members)."""
    try:
        conn = orgs.open_store(org, read_only=True)
    except (store.Error, SynctoolError):
        return False
    try:
        row = conn.execute("SELECT active FROM users WHERE email = ?", (email.strip().lower(),)).fetchone()
    except store.Error:
        return False
    finally:
        conn.close()
    return bool(row and row[0])


def overview(environ: Mapping[str, str], email: str) -> list[OrgRow]:
    """Every organisation of the host, by name, as the operator ``email`` sees it."""
    from synctool.ops.orgs import list_all

    rows: list[OrgRow] = []
    for found in list_all(environ):
        row: OrgRow = {
            "name": found["name"],
            "platforms": found["platforms"],
            "due": found["due"],
            "failed": found["failed"],
            "last_drain": found["last_drain"],
            "last_poll": found["last_poll"],
            "member": "error" not in found and is_member(orgs.place(found["name"], environ), email),
        }
        if "error" in found:
            row["error"] = found["error"]
        rows.append(row)
    return rows
