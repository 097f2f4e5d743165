"""`synctool store copy --to URL|PATH`: the whole database moved to another engine's, nothing lost, checked row by row.

The source is the database the command runs on (the config's, or ``--org NAME``'s); the target a new SQLite file
(an existing one refused unless ``--overwrite``) or an empty PostgreSQL database (one holding synctool data refused,
nothing written). The target's schema is made first (a SQLite file is migrated, PostgreSQL's is written on its
first connection), every row is written in one transaction on the target (a row refused: nothing written), then
both sides are read again and compared row by row (``store/copy.py``). Run it with cron stopped: rows written to the
source after it starts are not in the copy, and the check then says which table differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from synctool import orgs, store
from synctool.config import is_database_url, shown_database_url
from synctool.errors import InvalidInput, StoreUnavailable
from synctool.runtime import Runtime
from synctool.store import copy as copying


def _where(rt: Runtime) -> str:
    url = rt.config.database_url
    return shown_database_url(url) if url else str(rt.db_path)


def refuse_host(rt: Runtime) -> None:
    """A host with organisations and none named: each organisation's database is copied on its own (``--org``)."""
    if rt.org is None and orgs.names(rt.environ):
        raise InvalidInput(
            "store copy copies one database: on a host with organisations name one (synctool --org NAME store copy ...)",
            "a whole host into one PostgreSQL database (a schema per organisation) is not built yet (issue 59)",
        )


def open_target(rt: Runtime, to: str, *, overwrite: bool) -> tuple[store.Connection, str, Path | None]:
    """The target, its schema made: its connection, where it is (as said), and the SQLite file made for it (None for
    PostgreSQL). InvalidInput (exit 2, nothing written) for a target that is the source, a file that exists (no
    ``--overwrite``), a folder, or a PostgreSQL database holding synctool data."""
    source = _where(rt)
    if is_database_url(to):
        shown = shown_database_url(to)
        if shown == source:
            raise InvalidInput(f"{shown} is the database this command runs on", "copy to another database")
        conn = store.connect(to, password=rt.secrets.get("DATABASE_PASSWORD"))
        try:
            held = copying.holds_data(conn, copying.tables(conn))
        except BaseException:
            conn.close()
            raise
        if held:
            conn.close()
            raise InvalidInput(
                f"{shown} already holds synctool data ({', '.join(held[:3])}{', ...' if len(held) > 3 else ''}); nothing was written",
                "copy into an empty database (CREATE DATABASE ...), or one that has only synctool's schema",
            )
        return conn, shown, None
    path = Path(to).expanduser()
    if path.is_dir():
        raise InvalidInput(f"{path} is a folder", "give the new database file's path, e.g. /var/lib/synctool/synctool.db")
    if rt.config.database_url is None and path.resolve() == Path(rt.db_path).expanduser().resolve():
        raise InvalidInput(f"{path} is the database this command runs on", "copy to another file")
    if path.exists():
        if not overwrite:
            raise InvalidInput(f"{path} already exists", "choose a new file, or pass --overwrite to replace it")
        for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            file.unlink(missing_ok=True)
    return store.connect(path), str(path), path


def copy(rt: Runtime, source: store.Connection, to: str, *, overwrite: bool = False) -> dict[str, Any]:
    """Copy the database behind ``source`` to ``to`` and check it: where from and to, each table's rows and digest,
    what was rebuilt rather than copied, and the differences the check found (none: the copy is whole)."""
    refuse_host(rt)
    target, shown, made = open_target(rt, to, overwrite=overwrite)
    try:
        try:
            copied = copying.copy_rows(source, target)
        except store.Error as exc:
            if made is not None:
                target.close()
                for file in (made, Path(f"{made}-wal"), Path(f"{made}-shm")):
                    file.unlink(missing_ok=True)
            raise StoreUnavailable(f"copy to {shown} failed, nothing was written: {exc}") from None
        checks = copying.compare(source, target)
    finally:
        target.close()
    return {
        "from": _where(rt),
        "to": shown,
        "tables": [
            {
                "table": c.table,
                "rows": c.rows,
                "copied": "rebuilt by triggers" if c.table in copying.DERIVED else copied.get(c.table, 0),
                "digest": c.digest,
                "check": "same" if c.difference is None else c.difference,
            }
            for c in checks
        ],
        "rows": sum(c.rows for c in checks),
        "rebuilt": list(copying.REBUILT_NOTES),
        "differences": {c.table: c.difference for c in checks if c.difference is not None},
    }
