"""`synctool webhooks status|register`: the webhooks synctool needs, checked against and registered with
each platform's API (each platform speaks its own: ``platforms/<p>/registration.py``).

``register`` is idempotent: it creates what is missing, repairs what is wrong in place, and never adds a
second registration for synctool's route. Secrets the platforms return go to the keyring; on a machine
without one they are handed back for the operator to put in the environment (never printed in ``--json``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from typing import Any, TypedDict
from urllib.parse import urlsplit

from synctool import platforms, settings, store
from synctool.errors import ConfigError, InvalidInput, SynctoolError
from synctool.ops.inbox import received
from synctool.ops.per_platform import each, words
from synctool.platforms import Platform
from synctool.platforms.contract import Registration
from synctool.platforms.registration import Check, RegisterResult
from synctool.platforms.webhook import Missed
from synctool.runtime import Runtime

PUBLIC_URL = "receiver_public_url"
#: the last `webhooks heal` (not a dry run): when, and per platform what it found (the staff page's overview)
LAST_HEAL = "webhooks:last_heal"


class DeliveryCount(TypedDict):
    """A platform's failed deliveries, as its own record says, and how many of them synctool never received."""

    source: str
    failed: int | None
    not_received: int | None
    detail: str


class WebhookStatus(TypedDict):
    url: str | None
    ok: bool
    sources: list[dict[str, Any]]
    deliveries: list[DeliveryCount]
    not_received: int
    failed: dict[str, str]


class RegisteredSource(TypedDict):
    source: str
    action: str
    detail: str
    where: str


class Registered(TypedDict):
    """What `webhooks register` did; ``export`` holds the secrets that could not be stored (no keyring)."""

    url: str
    registered: list[RegisteredSource]
    stored_in_keyring: list[str]
    to_export: list[str]
    export: dict[str, str]
    restart_receiver: bool
    ok: bool
    failed: dict[str, str]


def _chosen(rt: Runtime, sources: list[str] | None, can: Callable[[Platform], object]) -> tuple[Platform, ...]:
    """The platforms in use that ``can`` (all of them, or those ``sources`` names), in the platforms' order."""
    if not sources:
        return platforms.chosen(rt.config, None, can)
    named = {p.role for source in sources for p in platforms.chosen(rt.config, source, can)}
    return tuple(p for p in platforms.in_use(rt.config) if p.role in named)


def _registration(platform: Platform) -> Registration:
    """The platform's module that checks and registers its webhook (``Platform.registration``)."""
    assert platform.registration is not None
    return platform.registration()


def public_url(conn: store.Connection, rt: Runtime) -> str | None:
    """Where the platforms reach the receiver: what `webhooks register --url` saved, else ``receiver.public_url``.
    For an organisation it is the host's base URL: its webhooks are under ``rt.path_prefix`` there."""
    return settings.get(conn, PUBLIC_URL) or rt.config.receiver.public_url


def status(conn: store.Connection, rt: Runtime, sources: list[str] | None = None) -> WebhookStatus:
    """One line per source (and per mapped mailing-list audience): ok, missing, wrong URL, missing events,
    disabled, no secret, not configured or error, with the fix."""
    base = public_url(conn, rt)
    chosen = _chosen(rt, sources, lambda p: p.registration)
    checks: list[Check] = []
    found: dict[str, list[Check]] = {}
    failed: dict[str, SynctoolError] = {}
    if not base:
        checks = [Check(p.role, "not configured", "no public URL for the receiver",
                        "synctool webhooks register --url https://YOUR.HOST") for p in chosen]  # fmt: skip
    else:

        def check(platform: Platform) -> list[Check]:
            with platforms.using(rt, platform.role) as client:
                return _registration(platform).status(conn, rt, base.rstrip("/") + rt.path_prefix, client)

        found, failed = each(chosen, check)
    for platform in chosen:
        checks += found.get(platform.role, [])
        exc = failed.get(platform.role)
        if isinstance(exc, ConfigError):
            checks.append(Check(platform.role, "not configured", str(exc), f"set {exc.key}"))
        elif exc is not None:
            checks.append(Check(platform.role, "error", str(exc), "synctool test-connections"))
    delivered, unread = failed_deliveries(conn, rt, 24, sources)
    missing = sum(r["not_received"] or 0 for r in delivered)
    failed_words = {**words(failed), **unread}
    return {
        "url": base and base.rstrip("/") + rt.path_prefix,
        "ok": all(c.state == "ok" for c in checks) and not missing and not failed_words,
        "sources": [asdict(c) for c in checks],
        "deliveries": delivered,
        "not_received": missing,
        "failed": failed_words,
    }


def register(conn: store.Connection, rt: Runtime, url: str, sources: list[str] | None = None) -> Registered:
    """Create or repair each source's registration at ``url`` and keep the secrets the platforms return.
    Returns what was done; ``export`` holds the secrets that could not be stored (no keyring)."""
    parts = urlsplit(url.strip())
    if parts.scheme != "https" or not parts.netloc or parts.path not in ("", "/") or parts.query:
        raise InvalidInput(f"not a base URL: {url!r}", "give the receiver's public address, e.g. https://sync.example.org")
    base = f"https://{parts.netloc}"
    chosen = _chosen(rt, sources, lambda p: p.registration)
    with store.atomic(conn):
        settings.put(conn, PUBLIC_URL, base)
    done: list[RegisteredSource] = []
    stored: list[str] = []
    export: dict[str, str] = {}

    def register_one(platform: Platform) -> list[RegisterResult]:
        with platforms.using(rt, platform.role) as client:
            return _registration(platform).register(conn, rt, base + rt.path_prefix, client)

    registered, failed = each(chosen, register_one)
    for platform in chosen:
        if platform.role in failed:
            exc = failed[platform.role]
            action = "not configured" if isinstance(exc, ConfigError) else "failed"
            done.append({"source": platform.role, "action": action, "detail": str(exc), "where": ""})
            continue
        for outcome in registered[platform.role]:
            for name, value in outcome.secrets.items():
                try:
                    rt.secrets.set(name, value)
                    stored.append(name)
                except ConfigError:
                    export[name] = value
                rt.secrets.environ[name] = value  # the rest of this run sees it
            with store.atomic(conn):
                for key, value in outcome.settings.items():
                    settings.put(conn, key, value)
            done.append({"source": outcome.source, "action": outcome.action, "detail": outcome.detail, "where": outcome.where})
    return {
        "url": base + rt.path_prefix,
        "registered": done,
        "stored_in_keyring": stored,
        "to_export": sorted(export),
        "export": export,  # values: the CLI prints them once; --json leaves them out
        "restart_receiver": bool(stored or export),
        "ok": not failed,
        "failed": words(failed),
    }


def _missing(
    conn: store.Connection, rt: Runtime, since: str, sources: list[str] | None
) -> tuple[dict[str, tuple[list[Missed], int]], dict[str, SynctoolError]]:
    """(source -> (missed deliveries, requests), source -> why it could not be read) for each platform in use
    that records its failed deliveries."""
    chosen = _chosen(rt, sources, lambda p: p.missed or p.webhook)

    def read(platform: Platform) -> tuple[list[Missed], int]:
        assert platform.missed is not None
        return platform.missed(conn, rt, since)

    return each([p for p in chosen if p.missed], read)


def last_heal(conn: store.Connection) -> dict[str, Any] | None:
    """The last `webhooks heal`: when, and per platform how many deliveries it reported failed and how many
    of those were replayed (each platform's record, as heal last read it)."""
    return settings.get(conn, LAST_HEAL)


def unrecorded(rt: Runtime, sources: list[str] | None = None) -> list[str]:
    """The webhook sources in use whose platform keeps no record of failed deliveries."""
    return [p.role for p in _chosen(rt, sources, lambda p: p.missed or p.webhook) if p.webhook and not p.missed]


def failed_deliveries(
    conn: store.Connection, rt: Runtime, hours: float = 24, sources: list[str] | None = None
) -> tuple[list[DeliveryCount], dict[str, str]]:
    """Per platform in use that records it: how many deliveries it reports failed in the last ``hours`` and how
    many of those synctool never received (a delivery that failed at first and arrived on a retry is counted
    once, as received); and the platforms whose record could not be read, with why."""
    since = store.iso(store.utcnow() - timedelta(hours=hours))
    rows: list[DeliveryCount] = []
    found, failed = _missing(conn, rt, since, sources)
    for source, exc in failed.items():
        rows.append({"source": source, "failed": None, "not_received": None, "detail": f"not read: {exc}"})
    for source, (missed, _) in found.items():
        absent = [m for m in missed if not received(conn, source, m.event_id)]
        rows.append({"source": source, "failed": len(missed), "not_received": len(absent),
                     "detail": f"{len(missed)} failed in {hours:g} h, {len(absent)} never received"})  # fmt: skip
    for source in unrecorded(rt, sources):
        rows.append({"source": source, "failed": None, "not_received": None,
                     "detail": "the platform keeps no record of failed deliveries (the backup poll and reconcile cover it)"})  # fmt: skip
    return rows, words(failed)


def heal(
    conn: store.Connection, rt: Runtime, *, since: str = "7d", sources: list[str] | None = None, dry_run: bool = False
) -> dict[str, Any]:
    """Replay each delivery a platform reports it failed to make, from its own record, through the receiver's
    path: parsed by the platform's adapter, stored with its job in one commit, deduplicated on the provider's
    event id (a delivery that did arrive is a duplicate and nothing else). Its origin is the platform's API,
    read with synctool's key (a delivery's signature is not in that record), and the delivery says so."""
    from synctool.ops.inbox import accept, store_inbound
    from synctool.timeutil import parse_moment

    moment = parse_moment(since)
    rows, replayed, duplicates, requests = [], 0, 0, 0
    secrets = platforms.webhook_secrets(rt)
    found, failed = _missing(conn, rt, store.iso(moment), sources)
    for source, exc in failed.items():
        rows.append({"source": source, "event_id": None, "event_type": None, "action": "not read", "detail": str(exc)})
    for source, (missed, spent) in found.items():
        requests += spent
        for m in missed:
            row = {"source": source, "event_id": m.event_id, "event_type": m.event_type, "at": m.at}
            if received(conn, source, m.event_id):
                duplicates += 1
                rows.append({**row, "action": "skipped", "detail": "received already (a later attempt arrived)"})
                continue
            if dry_run:
                rows.append({**row, "action": "would replay", "detail": m.why})
                continue
            try:
                inbound = accept(source, m.body, {}, {}, secrets, verify=False, claims=platforms.claimants(rt.config, source),
                                 note=f"replayed by `webhooks heal` from the platform's record of a failed delivery ({m.why})")  # fmt: skip
            except InvalidInput as exc:
                rows.append({**row, "action": "refused", "detail": str(exc)})
                continue
            job_id = store_inbound(conn, inbound, rt.config.queue.max_attempts)
            if job_id is None:
                duplicates += 1
                rows.append({**row, "action": "skipped", "detail": "received already"})
            else:
                replayed += 1
                rows.append({**row, "action": "replayed", "detail": f"job {job_id}"})
    if not dry_run:
        per_source = {
            source: {
                "failed": len(missed),
                "replayed": sum(1 for r in rows if r["source"] == source and r["action"] == "replayed"),
            }
            for source, (missed, _) in found.items()
        }
        settings.put(
            conn, LAST_HEAL, {"at": store.iso(), "since": store.iso(moment), "sources": per_source, "failed": words(failed)}
        )
    return {
        "since": store.iso(moment),
        "found": len([r for r in rows if r["event_id"]]),
        "replayed": replayed,
        "skipped": duplicates,
        "requests": requests,
        "dry_run": dry_run,
        "items": rows,
        "unrecorded": unrecorded(rt, sources),
        "ok": not failed,
        "failed": words(failed),
    }
