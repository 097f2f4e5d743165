"""The few SQL spellings that differ between engines, as text a query above ``store/`` writes in: each function
returns SQLite's spelling today; PostgreSQL's comes with its connection (issue 59). A caller never names an engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from synctool.store.engine import Connection

# --- sql-b: the queue's, the CRM's and the platforms' spellings (synctool/queue, crm, platforms, *.py) ---


def arrival(table: str = "") -> str:
    """The order rows of a table arrived in (a tie-break after a time that may repeat under a stopped clock):
    SQLite's ``rowid``. ``table`` qualifies it (``jobs``, an alias) where a query reads the table twice."""
    return f"{table}.rowid" if table else "rowid"


def full_text(index: str, text: str) -> tuple[str, str]:
    """A condition on a table and its one parameter: the rows whose text its full-text ``index`` (SQLite: an FTS5
    trigram table named so, kept by triggers) holds ``text`` (three characters or more), whatever its case."""
    return f"rowid IN (SELECT rowid FROM {index} WHERE {index} MATCH ?)", '"' + text.replace('"', '""') + '"'


def last_chars(expr: str, n: int) -> str:
    """The last ``n`` characters of ``expr`` (all of it when shorter), spelt as the index on it is."""
    return f"substr({expr}, -{int(n)})"


# --- sql-a: the catalogue and the housekeeping (synctool/ops, web, cli, console, testing) ---
# Not SQL text: each does the engine's own work on the connection it is given.


def table_names(conn: Connection) -> list[str]:
    """The tables of the database behind ``conn``, by name."""
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def has_table(conn: Connection, name: str) -> bool:
    """Whether the database behind ``conn`` has the table ``name`` (a migration that makes it ran)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
    return found is not None


def integrity_check(conn: Connection) -> str:
    """The engine's own check of the database behind ``conn``: ``"ok"``, else its first complaint."""
    return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


@contextmanager
def secure_delete(conn: Connection) -> Iterator[None]:
    """For the block, what is deleted through ``conn`` is overwritten on disk, not left in free pages; the
    connection's setting is restored after."""
    was = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(was)}")


def rewrite(conn: Connection) -> None:
    """Rewrite the whole database (its free space given back), switching one made before 0.3.0 to giving free
    space back a step at a time (``give_back``)."""
    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # takes effect with the VACUUM
    conn.execute("VACUUM")


def give_back(conn: Connection, pages: int) -> None:
    """Give up to ``pages`` free pages back to the file system (inside the caller's transaction)."""
    conn.execute(f"PRAGMA incremental_vacuum({int(pages)})").fetchall()


def refresh_statistics(conn: Connection) -> None:
    """Refresh the query planner's statistics, the reading of a large table bounded."""
    conn.execute("PRAGMA analysis_limit = 1000")
    conn.execute("PRAGMA optimize")
