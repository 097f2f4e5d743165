"""`synctool orgs`: the operations on a host's organisations (``synctool/orgs.py`` says where one lives), one
function each: add, list, show, remove --erase, import of an existing single install."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from synctool import store
from synctool.errors import ConfigError, InvalidInput, SynctoolError
from synctool.orgs import (
    Org,
    config_environ,
    find,
    init_environ,
    keyring_wanted,
    names,
    open_store,
    place,
    secrets,
    shown,
    store_of,
)


def secret_names() -> dict[str, str]:
    """Every secret synctool reads, the core's and the platforms': name -> what it is for."""
    from synctool import platforms
    from synctool.secrets import CORE_SECRETS

    return {**CORE_SECRETS, **platforms.secret_names()}


def _secrets_used(org: Org) -> list[str]:
    """The secrets the organisation's config can use: the core's and those of its platforms in use."""
    from synctool import platforms
    from synctool.config import load_config
    from synctool.secrets import CORE_SECRETS

    platforms.registered()
    config = load_config(org.config, config_environ(org, {}))
    return [*CORE_SECRETS, *(name for p in platforms.in_use(config) for name in p.secrets)]


def add(
    name: str, environ: Mapping[str, str], *, platforms: list[str] | None = None, currency: str | None = None
) -> dict[str, Any]:
    """Create organisation ``name``: its folder (0700), its config (``synctool init``'s, with ``platforms`` and
    ``currency`` as init takes them) and its migrated database. A name already taken is refused."""
    from synctool.ops.setup import init
    from synctool.store import private_folder

    org = place(name, environ)
    if org.folder.exists():
        raise InvalidInput(f"organisation {name!r} exists already ({org.folder})", "`synctool orgs show NAME` shows it")
    where, schema = store_of(org)
    _refuse_taken_schema(org)
    private_folder(org.folder)
    try:
        result = init(
            str(org.config),
            init_environ(org, environ),
            platforms=platforms,
            currency=currency,
            database=where if schema else org.database,
            schema=schema,
        )
    except BaseException:
        shutil.rmtree(org.folder, ignore_errors=True)  # nothing half-made is left to be mistaken for an organisation
        if schema is not None:
            _drop_quietly(org)
        raise
    return {"organisation": name, "folder": str(org.folder), **result}


def _refuse_taken_schema(org: Org) -> None:
    """On a PostgreSQL host, InvalidInput (nothing made) when the organisation's schema is there already: another
    host's, or left by an organisation removed by hand. Never made an organisation's again without a word."""
    where, schema = store_of(org)
    if schema is None:
        return
    conn = store.connect(where, migrate=False)
    try:
        found = conn.execute("SELECT 1 FROM information_schema.schemata WHERE schema_name = ?", (schema,)).fetchone()
    finally:
        conn.close()
    if found:
        raise InvalidInput(
            f"schema {schema} is there already in {shown(org).rsplit(' (', 1)[0]}: nothing was made",
            f"another host's, or an organisation's removed by hand: drop it (DROP SCHEMA {schema} CASCADE) or choose another name",
        )


def _drop_quietly(org: Org) -> None:
    try:
        drop_schema(org)
    except (SynctoolError, store.Error):  # the failure being raised says what went wrong
        pass


def summary(name: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """One organisation's row: platforms in use, jobs due, failed, last drain and last poll, read from its own
    config and database (read-only). A broken organisation's row carries its error instead of raising."""
    from synctool import platforms
    from synctool.config import load_config
    from synctool.ops.health import cron_runs
    from synctool.queue import log

    platforms.registered()  # the platforms' config sections, before a config is read

    row: dict[str, Any] = {"name": name, "platforms": "", "due": None, "failed": None, "last_drain": None, "last_poll": None}
    try:
        org = find(name, environ)
        config = load_config(org.config, config_environ(org, {}))
        row["platforms"] = ", ".join(p.name for p in platforms.in_use(config))
        conn = open_store(org, read_only=True)
        try:
            row["due"] = log.due(conn, store.iso())
            row["failed"] = log.open_failures(conn)
            runs = cron_runs(conn, config)  # as doctor and the overview read them: the poll's is its stalest platform's
            row["last_drain"] = runs["drain"]["at"]
            row["last_poll"] = runs["poll"]["at"] if "poll" in runs else None
        finally:
            conn.close()
    except (SynctoolError, store.Error, OSError) as exc:
        row["error"] = str(exc)
    return row


def list_all(environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every organisation's row (``summary``), by name."""
    return [summary(name, environ) for name in names(environ)]


def show(name: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """One organisation's row, its paths, and each secret synctool reads that is missing, with where to set it."""
    from synctool.secrets import Secrets

    org = find(name, environ)
    found = summary(name, environ)
    try:
        held = secrets(org, environ)
    except ConfigError as exc:  # its secrets.env is open to others: shown in its row, every secret said missing
        held = Secrets({}, use_keyring=keyring_wanted(environ), service=org.service, file=str(org.secrets_file))
        found.setdefault("error", str(exc))
    keyring = f"keyring service {org.service}" if held.keyring_available() else None
    try:
        wanted = _secrets_used(org)
    except SynctoolError:  # a config that does not read (its row says why): every secret synctool knows
        wanted = list(secret_names())
    missing = {
        secret: " or ".join(w for w in (keyring, f"{secret}=... in {org.secrets_file}") if w)
        for secret in wanted
        if not held.source(secret)
    }
    return {
        **found,
        "folder": str(org.folder),
        "config": str(org.config),
        "database": shown(org),
        "secrets_file": str(org.secrets_file) + ("" if org.secrets_file.exists() else " (none)"),
        "keyring_service": org.service,
        "secrets_missing": missing,
    }


def remove(name: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """Erase organisation ``name``: its folder (config, database with its -wal and -shm, secrets.env, backups kept
    in it), its schema on a PostgreSQL host (``DROP SCHEMA org_NAME CASCADE``: every row of it) and its keyring
    service's entries. What was removed, by name."""
    from synctool.secrets import Secrets

    org = find(name, environ)
    files = sorted(str(p.relative_to(org.folder)) for p in org.folder.rglob("*") if p.is_file())
    schema = drop_schema(org)
    held = Secrets({}, use_keyring=keyring_wanted(environ), service=org.service)
    erased = held.erase(sorted(secret_names()))
    shutil.rmtree(org.folder)
    return {
        "organisation": name,
        "folder": str(org.folder),
        "files": files,
        "keyring": erased,
        "keyring_service": org.service,
        "keyring_read": held.keyring_available(),
        **({"schema": f"{schema} (dropped, with every row in it)"} if schema else {}),
    }


def drop_schema(org: Org) -> str | None:
    """On a PostgreSQL host, the organisation's schema dropped with everything in it (its name is ``orgs.schema``'s:
    lowercase letters, digits and ``_``, checked again by ``store.connect`` before any SQL); its name, or None on
    SQLite."""

    where, schema = store_of(org)
    if schema is None:
        return None
    conn = store.connect(where, migrate=False, schema=schema)
    try:
        with store.atomic(conn):
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        conn.close()
    return schema


def _copy_into_schema(source_db: Path, org: Org, url: str, schema: str) -> None:
    """A single install's SQLite file copied into the organisation's schema of the host's PostgreSQL database
    (``store copy``'s copy, then its check row by row). A schema there already: InvalidInput, nothing written; a row
    refused or a difference: StoreUnavailable, the schema made for it dropped again."""
    from synctool.errors import StoreUnavailable

    _refuse_taken_schema(org)
    source = store.open_read_only(source_db)  # left as it is: an older release's columns are a part of this one's
    try:
        target = store.connect(url, schema=schema)
        try:
            try:
                store.copy.copy_rows(source, target)
            except store.Error as exc:
                raise StoreUnavailable(f"copy of {source_db} into schema {schema} failed, nothing written: {exc}") from None
            differing = [c for c in store.copy.compare(source, target) if c.difference]
            if differing:
                raise StoreUnavailable(
                    f"the copy in schema {schema} differs from {source_db} in {differing[0].table}: {differing[0].difference}"
                    " (was the single install still running?)"
                )
        except BaseException:
            target.close()
            drop_schema(org)
            raise
        target.close()
    finally:
        source.close()


def import_existing(
    name: str, config: str | os.PathLike, database: str | os.PathLike, environ: Mapping[str, str]
) -> dict[str, Any]:
    """Make today's single-organisation config and database organisation ``name``: the config copied (its
    ``database`` key pointed at the organisation's), the database copied whole with SQLite's backup API (a live
    WAL's commits included) and migrated; on a PostgreSQL host, copied into its schema and checked row by row.
    Secrets are not copied: the names the operator must set again."""
    from synctool.ops.setup import with_database

    source_config, source_db = Path(config).expanduser(), Path(database).expanduser()
    org = place(name, environ)
    if org.folder.exists():
        raise InvalidInput(f"organisation {name!r} exists already ({org.folder})", "import into a new name")
    if not source_config.is_file():
        raise InvalidInput(f"--config {source_config}: no such file", "the single install's config.yaml")
    if not source_db.is_file():
        raise InvalidInput(f"--database {source_db}: no such file", "the single install's synctool.db")
    store.private_folder(org.folder)
    try:
        text = source_config.read_text(encoding="utf-8")
        if not yaml.safe_load(text):  # an empty file, or `{}`: all defaults
            text = ""
        where, schema = store_of(org)
        store.private_to_write(org.config)
        org.config.write_text(with_database(text, where if schema else org.database), encoding="utf-8")
        if schema is not None:
            _copy_into_schema(source_db, org, where, schema)
        else:
            store.private_file(org.database)
            with store.backup_to(source_db, org.database, read_only=True):
                pass  # the copy is whole here; nothing of it to read
            store.connect(org.database).close()  # migrated to this synctool's schema, and 0600
        wanted = _secrets_used(org)
    except BaseException:
        shutil.rmtree(org.folder, ignore_errors=True)
        raise
    return {
        "organisation": name,
        "config": str(org.config),
        "database": str(org.database),
        "secrets_to_set": wanted,
        "set_them": f"synctool --org {name} crm config --api-key (keyring service {org.service}), "
        f"or KEY=VALUE lines in {org.secrets_file} (chmod 600); `synctool --org {name} doctor` names what is missing",
    }
