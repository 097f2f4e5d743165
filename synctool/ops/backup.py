"""`synctool backup PATH`: a consistent copy of the database while the receiver and drain write to it.

Everything synctool knows (deliveries, jobs, the gift ledger, mappings, the CRM mirror) is one SQLite
file. SQLite's online backup API copies it page by page and restarts if a writer changes a page it has
copied, so the copy is a snapshot of one moment, never a torn file (a plain `cp` of a WAL database can be).
The copy holds every donor's data: it is created 0600 (a file it replaces is made 0600 first), and a folder
made for it 0700.

On PostgreSQL the backup is a SQLite file too: every table read in one REPEATABLE READ transaction (one moment of
the database, or of an organisation's schema, while others write) and written into a new SQLite file of this
synctool's schema (``store.copy``), first as ``PATH.partial``, renamed once whole. It is restored with
``synctool store copy --to postgresql://...`` run on it (``SYNCTOOL_DB=PATH``), into an empty database.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from synctool import store
from synctool.errors import InvalidInput, StoreUnavailable
from synctool.runtime import Runtime


def backup(rt: Runtime, destination: str | Path, *, overwrite: bool = False) -> dict[str, Any]:
    """Copy the database to ``destination``; returns its path, size and rows per table."""
    target = Path(destination).expanduser()
    if target.is_dir():
        raise InvalidInput(f"{target} is a directory", "give the backup file's path, e.g. /var/backups/synctool.db")
    if target.exists() and not overwrite:
        raise InvalidInput(f"{target} already exists", "choose a new name (a dated one), or pass --overwrite")
    if rt.config.database_url:
        return _from_postgres(rt, target)
    if not Path(rt.db_path).exists():
        raise StoreUnavailable(f"no database at {rt.db_path}")
    try:
        store.private_to_write(target)
        with store.backup_to(rt.db_path, target) as copy:
            rows = _rows(copy)
            check = store.dialect.integrity_check(copy)
    except (store.Error, OSError) as exc:
        raise StoreUnavailable(f"backup to {target} failed: {exc}") from None
    return {"path": str(target), "size_bytes": target.stat().st_size, "integrity": check, "rows": rows}


def _from_postgres(rt: Runtime, target: Path) -> dict[str, Any]:
    """The PostgreSQL store copied into a new SQLite file at ``target`` (``store.copy.copy_rows``: one moment of the
    source, one transaction on the copy), written beside it first and renamed once whole."""
    partial = target.with_name(f"{target.name}.partial")
    _remove(partial)
    source = rt.open_database(migrate=False)
    try:
        store.private_file(partial)
        copy = store.connect(partial)
        try:
            store.copy.copy_rows(source, copy)
            rows = _rows(copy)
            check = store.dialect.integrity_check(copy)
        finally:
            copy.close()
        os.replace(partial, target)
        os.chmod(target, store.PRIVATE_FILE)
    except (store.Error, OSError) as exc:
        _remove(partial)
        raise StoreUnavailable(f"backup to {target} failed, nothing written: {exc}") from None
    finally:
        source.close()
    return {"path": str(target), "size_bytes": target.stat().st_size, "integrity": check, "rows": rows}


def _rows(copy: store.Connection) -> dict[str, int]:
    tables = store.dialect.table_names(copy)
    return {t: copy.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables if not t.startswith("jobs_search_")}


def _remove(path: Path) -> None:
    for file in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        file.unlink(missing_ok=True)
