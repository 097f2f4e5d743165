"""One dialect seam (docs/developers.md "The store seam"): ``store/`` alone knows the engine. Every other module
takes a ``store.Connection``, reads ``store.Row`` and catches ``store.Error`` / ``store.Busy``; none imports
``sqlite3`` or ``sqlite_utils``, and none opens a database file itself (``store.connect``, ``store.open_read_only``,
``store.backup_to`` do)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from synctool import settings, store

PACKAGE = Path(__file__).resolve().parents[1] / "synctool"
ENGINES = ("sqlite3", "sqlite_utils")

#: the known remainder, which may only shrink: sqlite-utils' ``Database`` still types the migrations a platform
#: declares in the older form (``Platform.migrations``, ``testing/references.py`` resolves those annotations); the
#: built-in platforms' migrations take a ``store.Connection`` (docs/platforms.md, migrations)
ENGINE_IMPORTS = {
    "platforms/contract.py": {"sqlite_utils"},
    "testing/references.py": {"sqlite_utils"},
}


def engine_imports(folder: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module outside ``store/`` that imports an engine's package (anywhere: at the top, in a function, for
    type checking alone) -> which."""
    found: dict[str, set[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder).as_posix()
        if rel.startswith("store/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.split(".")[0] in ENGINES:
                    found.setdefault(rel, set()).add(name.split(".")[0])
    return found


def sqlite_utils_views(folder: Path = PACKAGE) -> set[str]:
    """The modules outside ``store/`` that call ``store.database`` (sqlite-utils' view of a connection)."""
    return {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*.py")
        if not path.relative_to(folder).as_posix().startswith("store/") and "store.database(" in path.read_text(encoding="utf-8")
    }


def test_no_module_outside_the_store_imports_the_engine():
    found = engine_imports()
    beyond = {module: names - ENGINE_IMPORTS.get(module, set()) for module, names in found.items()}
    assert {module: names for module, names in beyond.items() if names} == {}


def test_no_module_outside_the_store_writes_through_sqlite_utils():
    """``store.database(conn)`` (sqlite-utils' view of a connection: ``.table(...).upsert``, ``.insert``'s
    ``last_pk``, ``rows_where``) is SQLite's alone: above ``store/`` rows are written in portable SQL."""
    assert sqlite_utils_views() == set()


def test_the_walk_sees_every_way_of_importing_the_engine(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "engine.py").write_text("import sqlite3\n")  # the store's own: allowed
    (tmp_path / "top.py").write_text("import sqlite3\n")
    (tmp_path / "typed.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sqlite_utils import Database\n"
    )
    (tmp_path / "late.py").write_text(
        "def f():\n    from sqlite_utils.migrations import Migrations\n    import sqlite3 as engine\n"
    )
    (tmp_path / "views.py").write_text("from synctool import store\n\ndef f(conn):\n    store.database(conn).table('x')\n")
    assert engine_imports(tmp_path) == {
        "top.py": {"sqlite3"},
        "typed.py": {"sqlite_utils"},
        "late.py": {"sqlite3", "sqlite_utils"},
    }
    assert sqlite_utils_views(tmp_path) == {"views.py"}


def test_store_error_catches_what_the_database_refuses(db):
    with pytest.raises(store.Error), store.atomic(db):
        db.execute("INSERT INTO no_such_table VALUES (1)")
    assert not db.in_transaction


@pytest.mark.sqlite_only(reason="a SQLite file opened read-only")
def test_a_read_only_connection_reads_and_refuses_writes_as_busy(db, env):
    settings.put(db, "k", 1)
    conn = store.open_read_only(env["SYNCTOOL_DB"])
    try:
        row = conn.execute("SELECT key, value FROM settings WHERE key = 'k'").fetchone()
        assert (row["key"], row[0]) == ("k", "k")  # by name and by position
        with pytest.raises(store.Busy):
            conn.execute("DELETE FROM settings")
    finally:
        conn.close()
    assert settings.get(db, "k") == 1


def test_a_read_only_open_of_a_missing_file_is_a_store_error(tmp_path):
    with pytest.raises(store.Error):
        store.open_read_only(tmp_path / "missing.db").execute("SELECT 1")


@pytest.mark.sqlite_only(reason="SQLite's online backup to a file")
def test_backup_to_copies_the_database_and_reads_the_copy(db, env, tmp_path):
    settings.put(db, "kept", "yes")
    target = tmp_path / "copy.db"
    with store.backup_to(env["SYNCTOOL_DB"], target, read_only=True) as copy:
        assert copy.execute("SELECT value FROM settings WHERE key = 'kept'").fetchone()[0] == '"yes"'
    conn = store.open_read_only(target)
    try:
        assert conn.execute("SELECT count(*) FROM settings WHERE key = 'kept'").fetchone()[0] == 1
    finally:
        conn.close()
