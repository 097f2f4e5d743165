"""`synctool backup PATH`: a consistent copy of the database while the receiver and drain write to it.

Everything synctool knows (deliveries, jobs, the gift ledger, mappings, the CRM mirror) is one SQLite
file. SQLite's online backup API copies it page by page and restarts if a writer changes a page it has
copied, so the copy is a snapshot of one moment, never a torn file (a plain `cp` of a WAL database can be).
The copy holds every donor's data: it is created 0600 (a file it replaces is made 0600 first), and a folder
made for it 0700.
"""

from __future__ import annotations

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
    if not Path(rt.db_path).exists():
        raise StoreUnavailable(f"no database at {rt.db_path}")
    try:
        store.private_to_write(target)
        with store.backup_to(rt.db_path, target) as copy:
            tables = store.dialect.table_names(copy)
            rows = {
                t: copy.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables if not t.startswith("jobs_search_")
            }
            check = store.dialect.integrity_check(copy)
    except (store.Error, OSError) as exc:
        raise StoreUnavailable(f"backup to {target} failed: {exc}") from None
    return {"path": str(target), "size_bytes": target.stat().st_size, "integrity": check, "rows": rows}
