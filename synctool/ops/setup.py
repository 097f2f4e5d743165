"""`synctool init`: a starter config and a migrated database."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from synctool import orgs, settings, store
from synctool import platforms as registry
from synctool.config import DEFAULT_DB, STARTER_CONFIG, OrganisationConfig, config_path, is_database_url, shown_database_url
from synctool.errors import InvalidInput
from synctool.runtime import Runtime


def init(
    explicit_config: str | None,
    environ: Mapping[str, str],
    *,
    force: bool = False,
    platforms: list[str] | None = None,
    currency: str | None = None,
    database: Path | str | None = None,
    org: str | None = None,
    schema: str | None = None,
) -> dict[str, Any]:
    """Write the starter config (unless one exists) and create the database; ``environ`` is read once. The config's
    ``platforms:`` key is always written in a new file: ``platforms`` (the names asked for), else the built-in
    platforms (a platform package installed beside synctool is in use only once ``platforms:`` names it). With
    ``platforms``, an existing file's key is replaced (the rest kept); with ``currency``, its
    ``organisation.currency`` (ISO 4217, the CRM's one currency) alike. ``database`` is the new file's
    ``database`` key (an organisation's, ``orgs.add``; else the default). With ``org`` (else ``$SYNCTOOL_ORG``), that
    organisation's config and database, which must exist (``synctool orgs add``).

    On PostgreSQL (``$SYNCTOOL_DB`` a ``postgresql://`` URL, or the host's database for an organisation, in its
    ``schema``) a new config names the URL, and the schema is written (or migrated) in the database."""
    org = org if org is not None else (environ.get("SYNCTOOL_ORG") or None)
    if org is not None:
        place = orgs.find(org, environ)
        orgs.refuse_disagreeing(place, explicit_config, environ)
        where, schema = orgs.store_of(place)
        explicit_config, environ = str(place.config), orgs.init_environ(place, environ)
        database = where if schema else place.database
    elif database is None and is_database_url(environ.get("SYNCTOOL_DB")):
        database = environ["SYNCTOOL_DB"]
    path, _ = config_path(explicit_config, environ)
    registry.registered()  # the platforms' config sections, before the config is read
    wrote = False
    if platforms is not None:
        _known_platforms(platforms)
    if currency is not None:
        try:
            currency = OrganisationConfig(currency=currency).currency
        except ValidationError as exc:
            raise InvalidInput(
                f"--currency {currency!r} is not a currency code", "three letters, ISO 4217: USD, CAD, EUR"
            ) from exc
    if force or not path.exists():
        _write(path, STARTER_CONFIG.format(database=database or DEFAULT_DB))
        wrote = True
        if platforms is None:  # named, so that a platform package installed later changes nothing until named too
            platforms = [p.name for p in registry.registered() if p.name in registry.DEFAULT_PLATFORMS]
    if platforms is not None:
        _write(path, with_platforms(path.read_text(encoding="utf-8"), platforms))
        wrote = True
    if currency is not None:
        _write(path, with_currency(path.read_text(encoding="utf-8"), currency))
        wrote = True
    rt = Runtime.from_environ(path, environ)
    rt.schema = schema
    new_database = _new_database(rt)
    conn = rt.open_database()
    try:
        migrations = store.applied_migrations(conn)
        if new_database:  # a new install writes nothing to the CRM until someone has seen what it would write
            with store.atomic(conn):
                settings.put(conn, settings.MODE_SETTING, "preview")
        mode = settings.sync_mode(conn)
    finally:
        conn.close()
    renamed = {"rename": "; ".join(rt.config.renamed_keys)} if rt.config.renamed_keys else {}
    return {
        "config": str(path),
        "config_written": wrote,
        **renamed,
        "platforms": ", ".join(p.name for p in registry.in_use(rt.config)),
        "currency": rt.config.organisation.currency,
        "database": shown_database_url(str(rt.database)) + (f" (schema {schema})" if schema else "")
        if rt.config.database_url
        else str(rt.db_path),
        "migrations": len(migrations),
        "keyring": rt.secrets.keyring_notice() or "available",
        "sync_mode": mode,
        "next": "preview mode: drain shows what it would write (`synctool preview`); `synctool sync-mode live` to write"
        if mode == "preview"
        else "",
    }


def _new_database(rt: Runtime) -> bool:
    """Whether the store holds no synctool schema yet: SQLite's file is not there; PostgreSQL's schema has no
    migrations recorded (looked at without writing)."""
    if not rt.config.database_url:
        return not rt.db_path.exists()
    conn = rt.open_database(migrate=False)
    try:
        return not store.applied_migrations(conn)
    finally:
        conn.close()


def _write(path: Path, text: str) -> None:
    """The config file, its user's alone (0600; a folder made for it 0700), as the database and the logs are."""
    store.private_to_write(path)
    path.write_text(text, encoding="utf-8")


def _known_platforms(names: list[str]) -> None:
    known = [p.name for p in registry.registered()]
    if not names:
        raise InvalidInput("--platforms names no platform", "one or more of: " + ", ".join(known))
    for name in names:
        if name not in known:
            raise InvalidInput(f"no platform is named {name!r}", "one of: " + ", ".join(known))


def with_platforms(text: str, names: list[str]) -> str:
    """The config file's text with its top-level ``platforms:`` key (and the lines under it) replaced by
    ``names`` in place, or added at the end; comments and every other key stay as they were."""
    comment = "# the platforms this organisation uses (`synctool platforms`); the others are absent everywhere"
    return _with_key(text, "platforms", [comment, f"platforms: [{', '.join(names)}]"], under=(" ", "\t", "-"))


def with_currency(text: str, currency: str) -> str:
    """The config file's text with its top-level ``organisation:`` section (and the lines under it) replaced by one
    naming ``currency``, in place, or added at the end; comments and every other key stay as they were."""
    comment = "# the CRM's one currency (ISO 4217): money in another is held for a person (`synctool jobs release`)"
    return _with_key(text, "organisation", [comment, "organisation:", f"  currency: {currency}"], under=(" ", "\t"), blank=True)


def with_database(text: str, database: Path | str) -> str:
    """The config file's text with its top-level ``database:`` key naming ``database`` (``orgs import``)."""
    comment = "# the database: an organisation's is its folder's (or its host's PostgreSQL database)"
    return _with_key(text, "database", [comment, f"database: {database}"], under=(" ", "\t"))


def _with_key(text: str, key: str, block: list[str], *, under: tuple[str, ...], blank: bool = False) -> str:
    """``text`` with the top-level ``key`` (its lines, those starting with ``under``, and blank ones when ``blank``)
    replaced by ``block`` (whose first line is its comment, dropped where it stood before), or ``block`` at the end."""
    kept: list[str] = []
    at = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if re.match(rf"{key}\s*:", lines[i]):
            if kept and kept[-1] == block[0]:
                kept.pop()
            at = len(kept)
            i += 1
            while i < len(lines) and (lines[i].startswith(under) or (blank and not lines[i].strip())):
                i += 1
            continue
        kept.append(lines[i])
        i += 1
    if at is None:
        at = len(kept)
    return "\n".join([*kept[:at], *block, *kept[at:]]) + "\n"
