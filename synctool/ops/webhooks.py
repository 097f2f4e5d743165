"""`synctool webhooks status|register`: the webhooks synctool needs, checked against and registered with
each platform's API (each platform speaks its own: ``platforms/<p>/registration.py``).

``register`` is idempotent: it creates what is missing, repairs what is wrong in place, and never adds a
second registration for synctool's route. Secrets the platforms return go to the keyring; on a machine
without one they are handed back for the operator to put in the environment (never printed in ``--json``).
"""

from __future__ import annotations

import importlib
import sqlite3
from dataclasses import asdict
from typing import Any
from urllib.parse import urlsplit

from synctool import platforms, settings, store
from synctool.errors import ConfigError, InvalidInput, SynctoolError
from synctool.platforms.registration import Check

PUBLIC_URL = "receiver_public_url"
POS_URL = "pos_notification_url"


def registrations() -> dict[str, Any]:
    """Source -> its platform's registration module, in the platforms' order."""
    return {role: importlib.import_module(module) for role, module in platforms.registrations().items()}


def public_url(conn: sqlite3.Connection, rt: Any) -> str | None:
    """Where the platforms reach the receiver: what `webhooks register --url` saved, else ``receiver.public_url``."""
    return settings.get(conn, PUBLIC_URL) or rt.config.receiver.public_url


def verify_url(conn: sqlite3.Connection, rt: Any) -> str | None:
    """The URL the POS platform's signatures are checked with: what registration saved, else the config's."""
    return settings.get(conn, POS_URL) or rt.config.webhooks.pos_notification_url


def _chosen(sources: list[str] | None) -> dict[str, Any]:
    found = registrations()
    for source in sources or []:
        if source not in found:
            raise InvalidInput(f"unknown source {source!r}", f"one of: {', '.join(found)}")
    return {s: m for s, m in found.items() if not sources or s in sources}


def status(conn: sqlite3.Connection, rt: Any, sources: list[str] | None = None) -> dict[str, Any]:
    """One line per source (and per mapped mailing-list audience): ok, missing, wrong URL, missing events,
    disabled, no secret, not configured or error, with the fix."""
    base = public_url(conn, rt)
    checks: list[Check] = []
    for source, module in _chosen(sources).items():
        if not base:
            checks.append(
                Check(
                    source,
                    "not configured",
                    "no public URL for the receiver",
                    "synctool webhooks register --url https://YOUR.HOST",
                )
            )
            continue
        try:
            with platforms.using(rt, source) as client:
                checks += module.status(conn, rt, base.rstrip("/"), client, verify_url(conn, rt))
        except ConfigError as exc:
            checks.append(Check(source, "not configured", str(exc), f"set {exc.key}"))
        except SynctoolError as exc:
            checks.append(Check(source, "error", str(exc), "synctool test-connections"))
    return {"url": base, "ok": all(c.state == "ok" for c in checks), "sources": [asdict(c) for c in checks]}


def register(conn: sqlite3.Connection, rt: Any, url: str, sources: list[str] | None = None) -> dict[str, Any]:
    """Create or repair each source's registration at ``url`` and keep the secrets the platforms return.
    Returns what was done; ``export`` holds the secrets that could not be stored (no keyring)."""
    parts = urlsplit(url.strip())
    if parts.scheme != "https" or not parts.netloc or parts.path not in ("", "/") or parts.query:
        raise InvalidInput(f"not a base URL: {url!r}", "give the receiver's public address, e.g. https://sync.example.org")
    base = f"https://{parts.netloc}"
    chosen = _chosen(sources)
    with store.atomic(conn):
        settings.put(conn, PUBLIC_URL, base)
    done, stored, export = [], [], {}
    for source, module in chosen.items():
        try:
            with platforms.using(rt, source) as client:
                outcomes = module.register(conn, rt, base, client)
        except ConfigError as exc:
            done.append({"source": source, "action": "not configured", "detail": str(exc), "where": ""})
            continue
        for outcome in outcomes:
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
        "url": base,
        "registered": done,
        "stored_in_keyring": stored,
        "to_export": sorted(export),
        "export": export,  # values: the CLI prints them once; --json leaves them out
        "restart_receiver": bool(stored or export),
    }
