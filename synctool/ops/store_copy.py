"""`synctool store copy --to URL|PATH`: the whole install moved to another engine's, nothing lost, checked row by row.

The source is the database the command runs on (the config's, or ``--org NAME``'s); the target a new SQLite file
(an existing one refused unless ``--overwrite``) or an empty PostgreSQL database (one holding synctool data refused,
nothing written). The target's schema is made first (a SQLite file is migrated, PostgreSQL's is written on its
first connection), every row is written in one transaction on the target (a row refused: nothing written), then
both sides are read again and compared row by row (``store/copy.py``). Run it with cron stopped: rows written to the
source after it starts are not in the copy, and the check then says which table differs.

``--org NAME`` copies that organisation's database, into its schema (``org_NAME``) of a PostgreSQL target. On a
host with organisations and none named, each part of the host is copied (``host``): each organisation into a
schema of its own in the PostgreSQL database (``org_NAME``, ``-`` written ``_``), the host's own database (its
operators) into ``host``, the single install beside them (when there is one) into the database's own
(``public``); to a folder, each to its place under it (``orgs/NAME/synctool.db``, ``host/synctool.db``,
``synctool.db``). Every target is looked at before any is written; each part is then copied in a transaction of
its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synctool import host, orgs, store
from synctool.config import is_database_url, shown_database_url
from synctool.errors import InvalidInput, StoreUnavailable
from synctool.runtime import Runtime

#: the schema (PostgreSQL) and the file under the folder (SQLite) of the host's own database
HOST_SCHEMA, HOST_FILE = "host", Path("host") / "synctool.db"


@dataclass
class Part:
    """One database of the install: what it is called, where it is (a file, or a URL), and where it goes in a host's
    target (its schema in a PostgreSQL database; its file under a folder). ``schema`` None: the database's own."""

    label: str
    where: str
    schema: str | None
    file: Path
    password: str | None = None
    #: ``where`` is a PostgreSQL host's database and the part is read from its ``schema`` there
    in_schema: bool = False


def shown(where: str, schema: str | None = None) -> str:
    place = shown_database_url(where) if is_database_url(where) else str(where)
    return f"{place} (schema {schema})" if schema else place


def schema_of(org: str) -> str:
    """Organisation ``org``'s schema in a PostgreSQL database: ``org_NAME``, a ``-`` written ``_`` (``orgs.schema``)."""
    return orgs.schema(org)


def single(rt: Runtime) -> Part:
    """The database the command runs on: an organisation's goes into its schema of a PostgreSQL target."""
    url = rt.config.database_url
    return Part(
        rt.org or "(single install)",
        url or str(rt.db_path),
        schema_of(rt.org) if rt.org else None,
        Path("synctool.db"),
        rt.secrets.get("DATABASE_PASSWORD") if url else None,
    )


def host_parts(environ: Mapping[str, str], single_install: Runtime | None) -> list[Part]:
    """A host's databases: each organisation's, the host's own (when made), the single install's (when there); on a
    host whose config names a PostgreSQL database, each organisation's schema and the host's there."""
    url = orgs.host_database_url(environ)
    if url:
        found = [
            Part(name, url, schema_of(name), Path("orgs") / name / "synctool.db", in_schema=True) for name in orgs.names(environ)
        ]
        found.append(Part("(host)", url, HOST_SCHEMA, HOST_FILE, in_schema=True))
        if single_install is not None:
            found.append(single(single_install))
        return found
    found = [
        Part(name, str(orgs.place(name, environ).database), schema_of(name), Path("orgs") / name / "synctool.db")
        for name in orgs.names(environ)
    ]
    if host.database(environ).exists():
        found.append(Part("(host)", str(host.database(environ)), HOST_SCHEMA, HOST_FILE))
    if single_install is not None:
        found.append(single(single_install))
    return found


def _open_target(part: Part, to: str, *, schema: str | None, overwrite: bool, sources: set[str], password: str | None):
    """The part's target, its schema made: its connection, where it is (as said), and the SQLite file made for it
    (None for PostgreSQL). InvalidInput (exit 2, nothing written) for a target that is a source, a file that
    exists (no ``--overwrite``), a folder, or a PostgreSQL database (schema) holding synctool data."""
    if is_database_url(to):
        where = shown(to, schema)
        if shown(part.where, part.schema) == where or (shown_database_url(to) in sources and schema is None):
            raise InvalidInput(f"{where} is the database this command runs on", "copy to another database")
        conn = store.connect(to, password=password, schema=schema)
        try:
            held = store.copy.holds_data(conn, store.copy.tables(conn))
        except BaseException:
            conn.close()
            raise
        if held:
            conn.close()
            more = ", ..." if len(held) > 3 else ""
            raise InvalidInput(
                f"{where} already holds synctool data ({', '.join(held[:3])}{more}); nothing was written",
                "copy into an empty database (CREATE DATABASE ...), or one that has only synctool's schema",
            )
        return conn, where, None
    path = Path(to).expanduser()
    if path.is_dir():
        raise InvalidInput(f"{path} is a folder", "give the new database file's path, e.g. /var/lib/synctool/synctool.db")
    if str(path.resolve()) in sources:
        raise InvalidInput(f"{path} is the database this command runs on", "copy to another file")
    if path.exists():
        if not overwrite:
            raise InvalidInput(f"{path} already exists", "choose a new file, or pass --overwrite to replace it")
        _remove(path)
    return store.connect(path), str(path), path


def _remove(path: Path) -> None:
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        file.unlink(missing_ok=True)


def _source_keys(parts: list[Part]) -> set[str]:
    return {shown_database_url(p.where) if is_database_url(p.where) else str(Path(p.where).resolve()) for p in parts}


def _copy_part(part: Part, source: store.Connection, target: store.Connection, where: str, made: Path | None) -> dict[str, Any]:
    try:
        copied = store.copy.copy_rows(source, target)
    except store.Error as exc:
        if made is not None:
            target.close()
            _remove(made)
        raise StoreUnavailable(f"copy of {part.label} to {where} failed, nothing of it was written: {exc}") from None
    checks = store.copy.compare(source, target)
    return {
        "from": shown(part.where),
        "to": where,
        "tables": [
            {
                "table": c.table,
                "rows": c.rows,
                "copied": "rebuilt by triggers" if c.table in store.copy.DERIVED else copied.get(c.table, 0),
                "digest": c.digest,
                "check": "same" if c.difference is None else c.difference,
            }
            for c in checks
        ],
        "rows": sum(c.rows for c in checks),
        "rebuilt": list(store.copy.REBUILT_NOTES),
        "differences": {c.table: c.difference for c in checks if c.difference is not None},
    }


def copy(rt: Runtime, source: store.Connection, to: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Copy the database behind ``source`` (``rt``'s) to ``to`` and check it: where from and to, each table's rows and
    digest, what was rebuilt rather than copied, and the differences the check found (none: the copy is whole)."""
    part = single(rt)
    target, where, made = _open_target(
        part,
        to,
        schema=part.schema,
        overwrite=overwrite,
        sources=_source_keys([part]),
        password=rt.secrets.get("DATABASE_PASSWORD"),
    )
    try:
        return _copy_part(part, source, target, where, made)
    finally:
        target.close()


def copy_host(environ: Mapping[str, str], single_install: Runtime | None, to: str, *, overwrite: bool = False) -> dict[str, Any]:
    """A host's every database copied (see the module's docstring): each part's result by its label. Every target is
    looked at (and refused, nothing written) before any part is copied."""
    parts = host_parts(environ, single_install)
    password = None if single_install is None else single_install.secrets.get("DATABASE_PASSWORD")
    sources = _source_keys(parts)
    if not is_database_url(to):
        folder = Path(to).expanduser()
        if folder.exists() and not folder.is_dir():
            raise InvalidInput(f"{folder} is a file", "on a host, give a folder: each organisation's database goes under it")
    targets = []
    try:
        try:
            for part in parts:
                goes = to if is_database_url(to) else str(Path(to).expanduser() / part.file)
                targets.append(
                    (part, *_open_target(part, goes, schema=part.schema, overwrite=overwrite, sources=sources, password=password))
                )
        except BaseException:  # a target refused: the files made for the others go too (nothing written)
            for _, target, _, made in targets:
                if made is not None:
                    target.close()
                    _remove(made)
            raise
        results = {}
        for part, target, where, made in targets:
            source = store.connect(part.where, password=part.password, schema=part.schema if part.in_schema else None)
            try:
                results[part.label] = _copy_part(part, source, target, where, made)
            finally:
                source.close()
        return results
    finally:
        for _, target, _, _ in targets:
            target.close()
