"""PostgreSQL behind the surface synctool uses on a SQLite connection (psycopg 3 and its pool).

``store.connect("postgresql://USER@HOST[:PORT]/DB")`` lands here (``connect``). The connection answers as a SQLite
one does: ``execute(sql, params)`` with ``?`` placeholders (``:name`` with a mapping), a cursor with
``fetchone``/``fetchall``/iteration and ``rowcount``, rows readable by name and by position (``Row``),
``in_transaction``, ``commit``/``rollback``/``close``. Statements run in autocommit, as SQLite's
``isolation_level=None`` does, so ``store.atomic``'s ``BEGIN`` ... ``COMMIT`` and savepoints mean the same on both.

- ``BEGIN IMMEDIATE`` (SQLite's write lock taken up front) is a plain ``BEGIN``: PostgreSQL locks rows, not the
  file. The callers that count on the whole database's one writer take an advisory lock (``store.exclusive``,
  store/transactions.py) or row locks (``store.dialect.locked``): the pacer's reservations
  (``crm/pacer.py``), the queue's claim and its one job per external id at a time, ``wake`` (``queue/jobs.py``),
  a job's named locks (``queue/unit.py``) and ``named_lock``'s look-then-take (``store/transactions.py``); the
  outgoing rows' claim is one conditional UPDATE, right on both.
- Its failures are SQLite's error classes (``IntegrityError``, ``OperationalError``: busy, ``DatabaseError``), so
  one ``except`` catches a failure on either engine; psycopg's own is the cause.
- One pool a URL a process (``psycopg_pool.ConnectionPool``); ``close`` gives the connection back to it.
- A URL that is wrong, a server out of reach (5 s), older than 14, or a database a newer synctool made: one line
  (``ConfigError`` for the database, ``DatabaseTooNew``), exit 2, nothing written. The password never comes from the
  URL: libpq's own ``PGPASSWORD`` or ``~/.pgpass``, or ``password`` (the keyring's ``DATABASE_PASSWORD``).
"""

from __future__ import annotations

import functools
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from synctool.config import database_url_problem as url_problem
from synctool.config import shown_database_url as shown
from synctool.errors import ConfigError
from synctool.store.transactions import LockHolder, exclusive

#: the oldest server synctool runs on (``server_version_num``)
OLDEST_SERVER = 140000
CONNECT_TIMEOUT_S = 5
POOL_SIZE = 10


class Row(tuple):
    """A row readable by position and by column name, with ``keys()`` (``dict(row)`` works), as ``sqlite3.Row``."""

    _index: dict[str, int]

    def __new__(cls, values: Sequence[Any], index: dict[str, int]) -> Row:
        row = super().__new__(cls, values)
        row._index = index
        return row

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


def row_factory(cursor: Any):
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: Row(values, index)


@functools.lru_cache(maxsize=2048)
def translated(sql: str, named: bool) -> str:
    """``sql`` with SQLite's placeholders as psycopg's: ``?`` is ``%s``, ``:name`` (for a mapping) ``%(name)s``,
    a ``%`` doubled; inside quoted literals and names nothing but the ``%`` changes. ``BEGIN IMMEDIATE`` is
    ``BEGIN`` (see the module's docstring)."""
    if re.fullmatch(r"\s*BEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED)\s*;?\s*", sql, re.IGNORECASE):
        return "BEGIN"
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(sql):
        char = sql[i]
        if char == "%":
            out.append("%%")
        elif quote:
            out.append(char)
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            out.append(char)
        elif char == "?":
            out.append("%s")
        elif named and char == ":" and i + 1 < len(sql) and (sql[i + 1].isalpha() or sql[i + 1] == "_") and sql[i - 1 : i] != ":":
            name = re.match(r"[A-Za-z_]\w*", sql[i + 1 :])
            assert name is not None
            out.append(f"%({name.group()})s")
            i += 1 + len(name.group())
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _params(params: Sequence[Any] | Mapping[str, Any] | None) -> tuple[Sequence[Any] | Mapping[str, Any], bool]:
    if params is None:
        return (), False
    if isinstance(params, Mapping):
        return params, True
    return tuple(params), False


class IntegrityError(sqlite3.IntegrityError):
    """A constraint refused the statement (a unique key taken, a foreign key missing), as SQLite's."""


class OperationalError(sqlite3.OperationalError):
    """The server could not do it now (a lock, a serialization failure, the connection lost), as SQLite's busy."""


class DatabaseError(sqlite3.DatabaseError):
    """Any other failure the server reported (a bad statement, a type, ...)."""


def failure(exc: Exception) -> sqlite3.Error:
    """psycopg's error as the SQLite error class callers catch (one ``except`` catches either engine's), its own
    kept as the cause."""
    import psycopg

    if isinstance(exc, psycopg.IntegrityError):
        return IntegrityError(str(exc))
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return OperationalError(str(exc))
    return DatabaseError(str(exc))


class Cursor:
    """What ``execute`` returns: the rows, ``rowcount``, and ``lastrowid`` (None: PostgreSQL has no rowid; use
    ``RETURNING``)."""

    lastrowid = None

    def __init__(self, cursor: Any):
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def description(self):
        return self._cursor.description

    def fetchone(self) -> Row | None:
        return self._cursor.fetchone() if self._cursor.description else None

    def fetchall(self) -> list[Row]:
        return self._cursor.fetchall() if self._cursor.description else []

    def fetchmany(self, size: int = 1) -> list[Row]:
        return self._cursor.fetchmany(size) if self._cursor.description else []

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())

    def close(self) -> None:
        self._cursor.close()


class PostgresConnection:
    """One pooled psycopg connection with the surface synctool uses on a SQLite connection."""

    engine = "postgresql"
    lock_holder: LockHolder | None = None
    _trace: Callable[[str], object] | None = None

    def __init__(self, raw: Any, pool: Any, url: str):
        self.raw = raw
        self.url = url
        self._pool = pool

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Cursor:
        import psycopg

        values, named = _params(params)
        if self._trace is not None:
            self._trace(sql)
        try:
            cursor = self.raw.cursor()  # (refused at once on a connection the server ended: a restart, a failover)
            cursor.execute(translated(sql, named), values)
        except psycopg.Error as exc:
            raise failure(exc) from exc
        return Cursor(cursor)

    def executemany(self, sql: str, rows) -> Cursor:
        import psycopg

        rows = list(rows)
        named = bool(rows) and isinstance(rows[0], Mapping)
        if self._trace is not None:
            self._trace(sql)
        try:
            cursor = self.raw.cursor()
            cursor.executemany(translated(sql, named), [r if named else tuple(r) for r in rows])
        except psycopg.Error as exc:
            raise failure(exc) from exc
        return Cursor(cursor)

    def set_trace_callback(self, trace: Callable[[str], object] | None) -> None:
        """Each statement's text is handed to ``trace`` before it runs (None: no longer), as SQLite's
        ``set_trace_callback`` does (the tests count a unit of work's commits with it)."""
        self._trace = trace

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def commit(self) -> None:
        if self.in_transaction:
            self.execute("COMMIT")

    def rollback(self) -> None:
        if self.in_transaction:
            self.execute("ROLLBACK")

    def close(self) -> None:
        if self.raw is None:
            return
        raw, self.raw = self.raw, None
        if self._pool is None:
            raw.close()
        else:
            self._pool.putconn(raw)  # the pool rolls back what was left open

    def __del__(self) -> None:
        # as a SQLite connection closes when nothing holds it any more, this one goes back to its pool (a pacer's
        # connection of a thread that ended, a command's left open): else the pool would count it lent for good
        try:
            self.close()
        except Exception:  # the pool closed, the interpreter ending: nothing left to give back
            pass

    def __enter__(self) -> PostgresConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Snapshot(PostgresConnection):
    """Preview mode's throwaway copy of the database (``store.snapshot``): a connection of the pool inside one
    repeatable-read transaction, opened as it is made and rolled back when it is closed. ``store.atomic`` nests in it
    as savepoints, so nothing written through it is ever committed (a ``COMMIT`` it is asked for is refused); it sees
    the database as it was when it was made, as SQLite's in-memory copy does."""

    def __init__(self, raw: Any, pool: Any, url: str):
        super().__init__(raw, pool, url)
        try:
            self.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        except BaseException:
            self.close()
            raise

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Cursor:
        if re.fullmatch(r"\s*(COMMIT|END)\b.*", sql, re.IGNORECASE | re.DOTALL):
            raise DatabaseError("a preview's copy of the database never commits")
        return super().execute(sql, params)

    def commit(self) -> None:
        raise DatabaseError("a preview's copy of the database never commits")

    def release(self) -> None:
        """What was written through the copy rolled back (its row locks let go), and a new snapshot begun."""
        self.execute("ROLLBACK")
        self.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")

    def close(self) -> None:
        if self.raw is not None and self.in_transaction:
            try:
                self.raw.execute("ROLLBACK")
            except Exception:  # the connection broke: the pool throws it away
                pass
        super().close()


def snapshot(conn: PostgresConnection) -> Snapshot:
    """A throwaway copy of the database behind ``conn`` for preview mode (``Snapshot``), from ``conn``'s pool."""
    from psycopg_pool import PoolTimeout

    if conn._pool is None:
        raise DatabaseError("a snapshot needs a pooled connection")
    try:
        return Snapshot(conn._pool.getconn(), conn._pool, conn.url)
    except PoolTimeout as exc:
        raise OperationalError(f"cannot connect: {first_line(exc)}") from None


def server_version(raw: Any) -> int:
    """The server's version as a number (150004 for 15.4): tests fake an older server here."""
    return int(raw.info.server_version)


def _unavailable(url: str, problem: str) -> ConfigError:
    return ConfigError("database", shown(url), problem)


def first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text.removeprefix("connection failed: ") or type(exc).__name__


def _numbers_as_sqlite_gives_them(raw: Any) -> None:
    """``numeric`` read as SQLite gives a number: an ``int`` when it is whole, else a ``float``. PostgreSQL's
    ``sum()`` and ``avg()`` of integers are ``numeric`` (psycopg's ``Decimal``), where SQLite's ``sum`` of integers is
    an integer: the counts a command prints or its JSON holds stay numbers, the same on both engines."""
    from psycopg.types.numeric import NumericLoader

    class Loader(NumericLoader):
        def load(self, data: Any) -> Any:
            value = super().load(data)
            return int(value) if value.is_finite() and value == value.to_integral_value() else float(value)

    raw.adapters.register_loader("numeric", Loader)


_POOLS: dict[str, Any] = {}
_POOLS_LOCK = threading.Lock()


def pool_of(conninfo: str, url: str):
    """The process's pool for ``conninfo`` (``url``, with the password when one was given), made on first use (its
    connections open as they are asked for)."""
    with _POOLS_LOCK:
        found = _POOLS.get(conninfo)
        if found is None:
            from psycopg_pool import ConnectionPool

            found = _POOLS[conninfo] = ConnectionPool(
                conninfo,
                min_size=0,
                max_size=POOL_SIZE,
                kwargs={"autocommit": True, "row_factory": row_factory, "connect_timeout": CONNECT_TIMEOUT_S},
                timeout=CONNECT_TIMEOUT_S * 6,
                configure=_numbers_as_sqlite_gives_them,
                # each connection checked as it is lent (an empty query): after the server restarted (or failed over)
                # the idle ones are dead, and each would fail its next statement once (psycopg_pool 3.2's ``check``)
                check=ConnectionPool.check_connection,
                open=True,
                name=_pool_name(url),
            )
        return found


def close_pools(url: str | None = None) -> None:
    """Close the process's pools (their idle connections ended, a connection still lent ended when it comes back):
    those for ``url`` (with or without a password), else every one. The next ``connect`` opens a new pool."""
    with _POOLS_LOCK:
        chosen = [key for key, pool in _POOLS.items() if url is None or key == url or pool.name == _pool_name(url)]
        closing = [_POOLS.pop(key) for key in chosen]
    for pool in closing:
        pool.close(timeout=1)


def _pool_name(url: str) -> str:
    return f"synctool {shown(url)}"


def pool_stats(conn: PostgresConnection) -> dict[str, int]:
    return dict(conn._pool.get_stats()) if conn._pool is not None else {}


def connect(url: str, *, migrate: bool = True, password: str | None = None, schema: str | None = None) -> PostgresConnection:
    """A pooled connection to the database at ``url``, its schema written when it is empty and ``migrate`` is set.
    ConfigError (one line) for a URL that is wrong, a server out of reach or older than 14; DatabaseTooNew for a
    schema a newer synctool wrote. Nothing is written in either case. With ``schema`` (an organisation's,
    ``org_NAME``: lowercase letters, digits and ``_``), the connection's ``search_path`` is that schema alone, set as
    the connection is made, and the schema is made when ``migrate`` is set and it is not there."""
    problem = url_problem(url)
    if problem:
        raise _unavailable(url, problem)
    if schema is not None and not re.fullmatch(r"[a-z][a-z0-9_]{0,62}", schema):
        raise _unavailable(url, f"{schema!r} is not a schema name synctool makes")
    try:
        import psycopg
    except ImportError:
        raise _unavailable(url, "PostgreSQL needs psycopg: pip install 'synctool[postgresql]'") from None
    extra = {"password": password} if password is not None else {}
    if schema is not None:
        extra["options"] = f"-c search_path={schema}"
    conninfo = psycopg.conninfo.make_conninfo(url, **extra) if extra else url
    pooled = _POOLS.get(conninfo)
    if pooled is None:  # the first connection, made directly: its errors are the server's own, in 5 s
        try:
            raw = psycopg.connect(conninfo, autocommit=True, row_factory=row_factory, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as exc:
            raise _unavailable(url, f"cannot connect: {first_line(exc)}") from None
        try:
            version = server_version(raw)
            if version < OLDEST_SERVER:
                raise _unavailable(url, f"PostgreSQL {version // 10000}.{version % 10000} is too old: synctool needs 14 or newer")
            prepare(PostgresConnection(raw, None, url), url, migrate=migrate, schema=schema)
        finally:
            raw.close()
        pooled = pool_of(conninfo, url)
    from psycopg_pool import PoolTimeout

    try:
        conn = PostgresConnection(pooled.getconn(), pooled, url)
    except (PoolTimeout, psycopg.Error) as exc:
        raise _unavailable(url, f"cannot connect: {first_line(exc)}") from None
    try:
        prepare(conn, url, migrate=migrate, schema=schema)  # a newer synctool may have written the schema since
    except BaseException:
        conn.close()
        raise
    return conn


def prepare(conn: PostgresConnection, url: str, *, migrate: bool, schema: str | None = None) -> None:
    """Refuse a database a newer synctool made; when ``migrate`` is set, make ``schema`` when it is not there, write
    the baseline into an empty database (schema) and apply the migrations made since (``schema_postgres.migrate``),
    one process at a time: the schema's migration lock, then a second look."""
    from synctool.store import schema_postgres

    try:
        recorded = schema_postgres.applied(conn)
        schema_postgres.refuse_newer(conn, shown(url), recorded)
    except sqlite3.Error as exc:  # not allowed to read it, say
        raise _unavailable(url, f"cannot read synctool's schema: {first_line(exc)}") from None
    if not migrate or (recorded and not schema_postgres.pending(recorded)):
        return
    import psycopg

    if schema is not None and not recorded:
        try:
            conn.raw.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        except psycopg.Error as exc:
            raise _unavailable(url, f"cannot make schema {schema}: {first_line(exc)}") from None
    try:
        if not recorded:
            with conn.raw.transaction():
                exclusive(conn, "migrations")
                if not schema_postgres.applied(conn):
                    with conn.raw.cursor() as cursor:
                        cursor.execute(schema_postgres.ddl())
                        schema_postgres.record(cursor)
        schema_postgres.migrate(conn)
    except (psycopg.Error, sqlite3.Error, schema_postgres.NotPortable) as exc:
        raise _unavailable(url, f"cannot write synctool's schema: {first_line(exc)}") from None


def describe(conn: PostgresConnection) -> dict[str, str]:
    """What ``doctor`` says of the engine: the server's version, the pool, the schema version."""
    from synctool.store import schema_postgres

    stats = pool_stats(conn)
    meta: dict[str, str] = dict(
        conn.execute("SELECT key, value FROM store_meta WHERE key IN ('schema_version', 'migrated_by')").fetchall()
    )
    version = conn.execute("SHOW server_version").fetchone()
    return {
        "engine": "PostgreSQL",
        "version": str(version[0] if version else "unknown"),
        "pool": f"pool {stats.get('pool_size', 0)} open of at most {POOL_SIZE}, {stats.get('pool_available', 0)} idle",
        "schema": f"{meta.get('schema_version', 'none')} ({len(schema_postgres.applied(conn))} migrations, by synctool"
        f" {meta.get('migrated_by', 'unknown')})",
        "where": shown(conn.url),
    }
