"""What the engines spell differently, asked for by the SQL outside ``store/`` (``store.dialect.NAME``).

Code above ``store/`` writes SQL both SQLite (3.35+) and PostgreSQL (14+) accept; where an engine's own words are
needed (the catalogue, an integrity check, reclaiming space, statistics, a date or JSON expression) it calls a
function here instead. Each answers for SQLite today; the PostgreSQL side comes with its connection. A function
returning SQL text names the engine's spelling of one expression; the others do the engine's own housekeeping.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

# -- the catalogue ---------------------------------------------------------------------------------------------


def table_names(conn: sqlite3.Connection) -> list[str]:
    """The tables of the database behind ``conn``, by name."""
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def has_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the database behind ``conn`` has the table ``name`` (a migration that makes it ran)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return found is not None


def integrity_check(conn: sqlite3.Connection) -> str:
    """The engine's own check of the database behind ``conn``: ``"ok"``, else its first complaint."""
    return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


# -- housekeeping (``prune``) ----------------------------------------------------------------------------------


@contextmanager
def secure_delete(conn: sqlite3.Connection) -> Iterator[None]:
    """For the block, what is deleted through ``conn`` is overwritten on disk, not left in free pages; the
    connection's setting is restored after."""
    was = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(was)}")


def rewrite(conn: sqlite3.Connection) -> None:
    """Rewrite the whole database (its free space given back), switching one made before 0.3.0 to giving free
    space back a step at a time (``give_back``)."""
    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # takes effect with the VACUUM
    conn.execute("VACUUM")


def give_back(conn: sqlite3.Connection, pages: int) -> None:
    """Give up to ``pages`` free pages back to the file system (inside the caller's transaction)."""
    conn.execute(f"PRAGMA incremental_vacuum({int(pages)})").fetchall()


def refresh_statistics(conn: sqlite3.Connection) -> None:
    """Refresh the query planner's statistics, the reading of a large table bounded."""
    conn.execute("PRAGMA analysis_limit = 1000")
    conn.execute("PRAGMA optimize")
