"""CRM operations: reference data cache, constituent mirror, connection test, configuration, environment
and budget."""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, NotRequired, Optional, TypedDict

from synctool import settings, store
from synctool.crm import environment as crm_environment
from synctool.crm import matching, references
from synctool.errors import InvalidInput, SynctoolError
from synctool.queue.unit import Unit

if TYPE_CHECKING:
    from synctool.crm.types import MirrorStatus
from synctool.runtime import Runtime
from synctool.validation import Body


def refresh(conn: store.Connection, rt: Runtime, *, client=None) -> dict[str, int]:
    """Fetch every CRM reference list (and the tag keywords and gift custom fields) into the cache."""
    crm = client or crm_environment.open_client(conn, rt)
    return references.refresh(conn, crm)


def reference(conn: store.Connection, kind: str) -> dict[str, Any]:
    return references.listing(conn, kind)


class CrmStatus(TypedDict):
    """Which CRM synctool writes to, and where its address and key come from."""

    environment: str
    base_url: str | None
    base_url_from: str | None
    api_key: str
    api_key_from: str | None


class ConnectionTest(CrmStatus):
    ok: bool
    configured: bool
    constituents: NotRequired[object]
    error: NotRequired[str]
    rate_limit: NotRequired[dict[str, object]]


class Duplicates(TypedDict):
    pairs: Sequence[matching.DuplicatePair]
    count: int
    constituents: object
    mirror_refreshed_at: object


def status(conn: store.Connection, rt: Runtime) -> CrmStatus:
    where = crm_environment.target(conn, rt)
    return {
        "environment": where.environment,
        "base_url": where.base_url,
        "base_url_from": where.base_url_source,
        "api_key": "set" if where.key_source else "missing",
        "api_key_from": where.key_source,
    }


def test_connection(conn: store.Connection, rt: Runtime, *, client=None) -> ConnectionTest:
    """One read on constituents (spec: GET /api/admin/crm/test-connection)."""
    result: ConnectionTest = {**status(conn, rt), "ok": False, "configured": False}
    try:
        crm = client or crm_environment.open_client(conn, rt)
        result["configured"] = True
        page = crm.request("GET", "/constituents", params={"limit": 1})
        result["ok"] = True
        result["constituents"] = page.get("total_items")
    except SynctoolError as exc:
        result["error"] = str(exc)
    result["rate_limit"] = crm_environment.budget(rt)
    return result


class CrmConfigBody(Body):
    """Spec: POST /api/admin/crm/config/api."""

    base_url: Optional[str] = None
    api_key: Optional[str] = None


class EnvironmentBody(Body):
    """Spec: PATCH /api/settings/crm-environment and POST /api/admin/crm/environment."""

    environment: Literal["production", "sandbox"]


#: why a new base URL needs the key with it (invariant 8: the key is sent to whatever host the base URL names)
KEY_WITH_BASE_URL = "changing the CRM base URL needs the API key in the same request: the key is sent to the new host"


def configure(conn: store.Connection, rt: Runtime, body: CrmConfigBody) -> CrmStatus:
    """Save the active environment's base URL (settings) and API key (keyring only).

    Every request carries the key to the base URL's host, so whoever changes the base URL must give the key in
    the same call (an admin token alone must not be able to send it elsewhere). Where there is no keyring the
    key cannot be saved: the base URL may still change when the key given is the one synctool already has.
    Nothing is saved unless all of it can be."""
    from synctool.crm.client import check_base_url

    env = crm_environment.environment(conn, rt)
    where = crm_environment.target(conn, rt)
    api_key = None if body.api_key is None else body.api_key.strip()
    if body.api_key is not None and not api_key:
        raise InvalidInput("the API key is empty")
    base_url = None if body.base_url is None else check_base_url(body.base_url, "--base-url")
    moved = base_url is not None and base_url != (where.base_url or "").rstrip("/")
    if moved and api_key is None:
        raise InvalidInput(
            KEY_WITH_BASE_URL, "send api_key with base_url; on the command line, `synctool crm config --base-url URL --api-key`"
        )
    if api_key is not None:
        known = rt.secrets.get(where.key_name) or ""
        held = hmac.compare_digest(api_key.encode(), known.encode())
        if not (moved and held and not rt.secrets.keyring_available()):
            rt.secrets.set(crm_environment.key_name(env), api_key)  # no keyring: ConfigError, and nothing saved
    if base_url is not None:
        with store.atomic(conn):
            settings.put(conn, f"crm_base_url_{env}", base_url)
    return status(conn, rt)


def set_environment(conn: store.Connection, rt: Runtime, body: EnvironmentBody | None = None) -> CrmStatus:
    if body is not None:
        with store.atomic(conn):
            settings.put(conn, "crm_environment", body.environment)
    return status(conn, rt)


def budget(conn: store.Connection, rt: Runtime) -> dict[str, Any]:
    """synctool's share of the account's request budget, what this window used, and the mirror's age."""
    from synctool.crm import mirror

    return {**crm_environment.budget(rt), "mirror_age_s": mirror.status(conn)["age_s"], "sync_mode": settings.sync_mode(conn)}


def mirror_status(conn: store.Connection) -> MirrorStatus:
    from synctool.crm import mirror

    return mirror.status(conn)


def mirror_refresh(conn: store.Connection, rt: Runtime, *, full: bool = False, client=None) -> dict[str, Any]:
    """Refresh the constituent mirror from the CRM (incrementally, or a full rebuild) and say what it cost."""
    from synctool.crm import mirror

    crm = client or crm_environment.open_client(conn, rt)
    try:
        done = mirror.refresh(crm, Unit(conn), full=full, page_size=rt.config.crm.mirror_page_size)
    finally:
        if client is None:
            crm.close()
    return {"refresh": done, **mirror.status(conn)}


def find_constituents(conn: store.Connection, text: str, *, limit: int = 50) -> list[dict[str, Any]]:
    """Search the mirror by name, e-mail or phone: no CRM request."""
    from synctool.crm import mirror

    if not text.strip():
        raise InvalidInput("nothing to search for", "give a name, an e-mail or a phone number")
    return mirror.find(conn, text, limit=limit)


def duplicates(conn: store.Connection, *, limit: int = 500) -> Duplicates:
    """Likely duplicate constituents in the CRM by donor matching's rule, read from the mirror (no CRM request)."""
    from synctool.crm import matching, mirror

    if not 1 <= limit <= 10_000:
        raise InvalidInput("limit must be between 1 and 10000")
    pairs = matching.duplicates(conn, limit=limit)
    state = mirror.status(conn)
    return {
        "pairs": pairs,
        "count": len(pairs),
        "constituents": state["constituents"],
        "mirror_refreshed_at": state["refreshed_at"],
    }
