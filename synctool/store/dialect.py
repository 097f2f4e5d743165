"""The few SQL spellings that differ between engines, as text a query above ``store/`` writes in, and the catalogue
and housekeeping each engine does its own way. A caller never names an engine: a function taking a connection asks
it; a spelling without one (``arrival()``, ``full_text()``, ``last_chars()``) is the engine of the database this
process opened last through ``store.connect`` (``use``: one engine a process; ``store copy``, which holds two, reads
no spelling), or of ``conn`` when one is given.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from synctool.store.engine import Connection

SQLITE, POSTGRESQL = "sqlite", "postgresql"

#: the engine of the database ``store.connect`` opened last in this process
_engine = SQLITE


def use(engine: str) -> None:
    """``store.connect`` says which engine this process's database runs on (the spellings without a connection)."""
    global _engine
    _engine = engine


def on_postgres(conn: Connection | None = None) -> bool:
    """Whether ``conn`` (else the database this process opened last) is PostgreSQL: for store/'s own use."""
    if conn is None:
        return _engine == POSTGRESQL
    return getattr(conn, "engine", SQLITE) == POSTGRESQL


class Spelt:
    """SQL text with ``{0}`` for a row (``jobs``, ``new``), spelt for the engine of this process's database when it
    is formatted (``JOB_POLLED.format("jobs")``)."""

    def __init__(self, sqlite: str, postgresql: str):
        self.sqlite, self.postgresql = sqlite, postgresql

    def format(self, *args: object) -> str:
        return (self.postgresql if on_postgres() else self.sqlite).format(*args)


# --- spellings the queue, the CRM and the platforms write into their SQL ---


def arrival(table: str = "", conn: Connection | None = None) -> str:
    """The order rows of a table arrived in (a tie-break after a time that may repeat under a stopped clock):
    SQLite's ``rowid``; on PostgreSQL the ``seq`` column (an identity) the tables read in arrival order have
    (``jobs``, ``plan_events``, ``portal_payment_items``). ``table`` qualifies it (``jobs``, an alias) where a query
    reads the table twice."""
    column = "seq" if on_postgres(conn) else "rowid"
    return f"{table}.{column}" if table else column


def full_text(index: str, text: str, conn: Connection | None = None) -> tuple[str, str]:
    """A condition on a table and its one parameter: the rows whose text its full-text ``index`` holds ``text``,
    whatever its case. SQLite: an FTS5 trigram table named so, kept by triggers: ``text`` (three characters or more)
    anywhere in the external id, email, name or last error, inside a word too. PostgreSQL: the tsvector table
    ``jobs_search`` (one document a job, the ``simple`` configuration, kept by triggers): each word of ``text`` the
    start of a word of the job's (``ada`` finds ``Ada Lovelace`` and ``ada@example.org``, an e-mail being held whole and in its parts, so
    ``ada@example`` and ``example`` find it too; ``velace`` does not find ``Lovelace``)."""
    if on_postgres(conn):
        words = [w for w in text.split() if w]
        query = " & ".join("'" + w.replace("\\", "\\\\").replace("'", "''") + "':*" for w in words) or "''"
        return f"id IN (SELECT job_id FROM {index} WHERE document @@ to_tsquery('simple', ?))", query
    return f"rowid IN (SELECT rowid FROM {index} WHERE {index} MATCH ?)", '"' + text.replace('"', '""') + '"'


def last_chars(expr: str, n: int, conn: Connection | None = None) -> str:
    """The last ``n`` characters of ``expr`` (all of it when shorter), spelt as the index on it is: SQLite's
    ``substr(x, -n)``, PostgreSQL's ``right(x, n)``."""
    if on_postgres(conn):
        return f"right({expr}, {int(n)})"
    return f"substr({expr}, -{int(n)})"


def locked(conn: Connection | None = None, *, skip: bool = False) -> str:
    """Appended to a SELECT whose rows the transaction goes on to change: on PostgreSQL it locks them (``FOR
    UPDATE``: a row another transaction is changing is waited for and read again as it committed; with ``skip``, it
    is passed over, ``SKIP LOCKED``); nothing on SQLite, whose transaction holds the database's write lock."""
    if on_postgres(conn):
        return " FOR UPDATE SKIP LOCKED" if skip else " FOR UPDATE"
    return ""


# --- the catalogue and the housekeeping (prune, backup, the conformance kit) ---
# Not SQL text: each does the engine's own work on the connection it is given.


def table_names(conn: Connection) -> list[str]:
    """The tables of the database behind ``conn``, by name (PostgreSQL: its current schema's)."""
    if on_postgres(conn):
        sql = (
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            " AND table_type = 'BASE TABLE' ORDER BY table_name"
        )
        return [r[0] for r in conn.execute(sql)]
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def has_table(conn: Connection, name: str) -> bool:
    """Whether the database behind ``conn`` has the table ``name`` (a migration that makes it ran)."""
    if on_postgres(conn):
        sql = "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?"
    else:
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    return conn.execute(sql, (name,)).fetchone() is not None


def integrity_check(conn: Connection) -> str:
    """The engine's own check of the database behind ``conn``: ``"ok"``, else its first complaint. PostgreSQL has
    no whole-database check of its own (its pages are checksummed as they are read, where the cluster was made with
    checksums; amcheck is an extension): ``"ok"`` once the catalogue and synctool's schema record read back."""
    if on_postgres(conn):
        conn.execute("SELECT count(*) FROM pg_catalog.pg_class").fetchone()
        found = conn.execute("SELECT count(*) FROM store_meta WHERE key = 'schema_version'").fetchone()[0]
        return "ok" if found else "synctool's schema version is missing (store_meta)"
    return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


@contextmanager
def secure_delete(conn: Connection) -> Iterator[None]:
    """For the block, what is deleted through ``conn`` is overwritten on disk, not left in free pages; the
    connection's setting is restored after. PostgreSQL has no such setting (a deleted row's space is reused after
    VACUUM): nothing is done there."""
    if on_postgres(conn):
        yield
        return
    was = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(was)}")


def rewrite(conn: Connection) -> None:
    """Rewrite the whole database (its free space given back), switching one made before 0.3.0 to giving free
    space back a step at a time (``give_back``). PostgreSQL: ``VACUUM`` (outside a transaction; dead rows' space
    made reusable without locking the tables out)."""
    if on_postgres(conn):
        if conn.in_transaction:
            raise RuntimeError("VACUUM runs outside a transaction")
        conn.execute("VACUUM")
        return
    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")  # takes effect with the VACUUM
    conn.execute("VACUUM")


def give_back(conn: Connection, pages: int) -> None:
    """Give up to ``pages`` free pages back to the file system (inside the caller's transaction). PostgreSQL:
    nothing (its autovacuum makes space reusable as it goes)."""
    if on_postgres(conn):
        return
    conn.execute(f"PRAGMA incremental_vacuum({int(pages)})").fetchall()


def refresh_statistics(conn: Connection) -> None:
    """Refresh the query planner's statistics, the reading of a large table bounded (PostgreSQL: ``ANALYZE``,
    which samples)."""
    if on_postgres(conn):
        conn.execute("ANALYZE")
        return
    conn.execute("PRAGMA analysis_limit = 1000")
    conn.execute("PRAGMA optimize")
