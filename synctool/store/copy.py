"""Copying a whole database to another engine's (``synctool store copy``): each table's rows read in the order they
arrived and written in one transaction on the target, then both sides read again and compared row by row.

What is copied is every table both schemas hold, in the order their foreign keys need. What is not copied is what
each engine keeps its own way, rebuilt on the target instead (``REBUILT``): the schema's own records (SQLite's
``_sqlite_migrations``, PostgreSQL's ``schema_migrations``, ``store_meta``'s schema version and who migrated it:
the target's are the ones its schema was written with), the sync log's search (SQLite's FTS5 ``jobs_search`` and its
shadow tables, PostgreSQL's ``tsvector`` table: filled by the target's triggers as the jobs arrive), SQLite's
``sqlite_sequence`` and statistics, and PostgreSQL's identity sequences (set past the largest id copied). The
overview's tables kept by triggers (``DERIVED``: ``job_counts``, ``job_campaigns``, ``campaign_hours``) are rebuilt
by the target's own triggers as jobs and deliveries are written, then compared with the source's like every table.
The order rows arrived in (SQLite's ``rowid``, PostgreSQL's ``seq`` identity: ``store.dialect.arrival()``) is not
copied either: rows are written in that order, and the target numbers them as they come.

Values are compared as text (``canonical``): an engine's types differ where SQLite keeps what it was given (a
campaign id 118722 in an untyped column is PostgreSQL's ``'118722'``; a body SQLite holds as text is ``BYTEA``).
Rows are read ordered by the table's key (every column when it has none), NULLs first and text by its bytes, on both
engines, so the two streams meet row by row.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from itertools import islice, zip_longest
from typing import Any

from synctool.store.engine import Connection
from synctool.store.postgres import PostgresConnection, failure, translated
from synctool.store.transactions import atomic

BATCH = 500

#: tables each engine keeps its own way: never copied, never compared (the target's own are made by its schema and
#: its triggers), by engine
REBUILT: dict[str, tuple[str, ...]] = {
    "SQLite": ("_sqlite_migrations", "sqlite_sequence", "sqlite_stat1", "sqlite_stat4", "jobs_search"),
    "PostgreSQL": ("schema_migrations", "jobs_search"),
}
#: what the notes say of them
REBUILT_NOTES = (
    "the schema's own records (_sqlite_migrations, schema_migrations, store_meta's schema version): the target's own",
    "the sync log's search (SQLite's FTS5 jobs_search, PostgreSQL's tsvector jobs_search): rebuilt by the target's triggers",
    "ids to come (SQLite's sqlite_sequence, PostgreSQL's identity sequences): set past the largest id copied",
    "the order rows arrived in (SQLite's rowid, PostgreSQL's seq): rows written in that order, numbered by the target",
)
#: tables the target's triggers fill as jobs and deliveries are written: not copied, compared
DERIVED = ("job_counts", "job_campaigns", "campaign_hours")
#: counters PostgreSQL spreads over rows (a ``shard`` in the key, ``schema/scale.py``'s m021): read as one row per
#: counter, its rows summed, on either engine (table: the counted column)
SHARDED = {"job_counts": "n", "campaign_hours": "gifts"}
#: ``store_meta``'s keys the target's schema writes for itself
SCHEMA_KEYS = ("migrated_by", "migrated_at", "schema_version")


def engine(conn: Connection) -> str:
    return "PostgreSQL" if isinstance(conn, PostgresConnection) else "SQLite"


@dataclass
class Column:
    name: str
    #: how it is typed: ``text``, ``integer``, ``real``, ``bytes``, or ``any`` (SQLite's untyped)
    kind: str


@dataclass
class Table:
    name: str
    columns: list[Column]
    key: list[str]
    #: tables this one's foreign keys name
    parents: set[str] = field(default_factory=set)
    #: identity columns (PostgreSQL), whose sequences are set after the copy
    identity: list[str] = field(default_factory=list)
    #: the order its rows arrived in, when it keeps one: SQLite's ``rowid``, PostgreSQL's identity that is not the key
    #: (``seq``, ``store.dialect.arrival()``); rows are copied in this order, so the target's own follows it
    arrival: str | None = None
    #: the counted column of a counter kept in shards (``SHARDED``): its rows summed per key, ``shard`` not read
    summed: str | None = None

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


def _sqlite_kind(declared: str) -> str:
    declared = declared.upper()
    if "INT" in declared:
        return "integer"
    if any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if "BLOB" in declared:
        return "bytes"
    if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "any"


_PG_KINDS = {"text": "text", "bigint": "integer", "integer": "integer", "smallint": "integer", "bytea": "bytes"}


def tables(conn: Connection) -> dict[str, Table]:
    """Every table of the database behind ``conn`` with its columns, key and parents (its engine's own records
    left out: ``REBUILT``)."""
    skip = REBUILT[engine(conn)]
    found: dict[str, Table] = {}
    if isinstance(conn, PostgresConnection):
        names = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
                " AND table_type = 'BASE TABLE' ORDER BY table_name"
            )
        ]
        for name in names:
            if name in skip:
                continue
            rows = conn.execute(
                "SELECT column_name, data_type, is_identity FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
                (name,),
            ).fetchall()
            key = [
                r[0]
                for r in conn.execute(
                    "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
                    " WHERE i.indrelid = to_regclass(quote_ident(?)) AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)",
                    (name,),
                )
            ]
            columns = [
                Column(r[0], _PG_KINDS.get(r[1], "real" if r[1] in ("double precision", "real", "numeric") else "text"))
                for r in rows
            ]
            identity = [r[0] for r in rows if r[2] == "YES"]
            arrival = next((c for c in identity if c not in key), None)
            table = Table(name, columns, key or [c.name for c in columns], identity=identity, arrival=arrival)
            if name in SHARDED and "shard" in table.names:  # one row per counter, as SQLite keeps it
                table.columns = [c for c in table.columns if c.name != "shard"]
                table.key, table.summed = [k for k in table.key if k != "shard"], SHARDED[name]
            found[name] = table
        for child, parent in conn.execute(
            "SELECT cl.relname, ref.relname FROM pg_constraint c JOIN pg_class cl ON cl.oid = c.conrelid"
            " JOIN pg_class ref ON ref.oid = c.confrelid WHERE c.contype = 'f' AND cl.relnamespace = to_regnamespace(current_schema())"
        ):
            if child in found and parent != child:
                found[child].parents.add(parent)
        return found
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    virtual = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'")}
    for name in names:
        if name in skip or name in virtual or any(name.startswith(f"{v}_") for v in virtual):
            continue
        info = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
        columns = [Column(r["name"], _sqlite_kind(r["type"] or "")) for r in info]
        key = [r["name"] for r in sorted((r for r in info if r["pk"]), key=lambda r: r["pk"])]
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()[0] or ""
        arrival = None if "WITHOUT ROWID" in sql.upper() else "rowid"
        table = Table(name, columns, key or [c.name for c in columns], arrival=arrival)
        table.parents = {r["table"] for r in conn.execute(f'PRAGMA foreign_key_list("{name}")')} - {name}
        found[name] = table
    return found


def in_order(found: dict[str, Table]) -> list[Table]:
    """The tables, each after the tables its foreign keys name (then by name)."""
    done: list[Table] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name not in found:
            return
        seen.add(name)
        for parent in sorted(found[name].parents):
            visit(parent)
        done.append(found[name])

    for name in sorted(found):
        visit(name)
    return done


def _order(conn: Connection, table: Table) -> str:
    """ORDER BY the table's key, the same on both engines: NULLs first, text by its bytes (PostgreSQL's ``"C"``),
    SQLite's untyped values as text."""
    kinds = {c.name: c.kind for c in table.columns}
    parts = []
    for name in table.key:
        if isinstance(conn, PostgresConnection):
            parts.append(f'"{name}" COLLATE "C" NULLS FIRST' if kinds.get(name) == "text" else f'"{name}" NULLS FIRST')
        else:
            parts.append(f'CAST("{name}" AS TEXT)' if kinds.get(name) == "any" else f'"{name}"')
    return ", ".join(parts)


def _where(table: Table) -> str:
    listed = ", ".join(f"'{key}'" for key in SCHEMA_KEYS)
    return f" WHERE key NOT IN ({listed})" if table.name == "store_meta" else ""


def rows(conn: Connection, table: Table, columns: Sequence[str], *, arrived: bool = False) -> Iterator[Sequence[Any]]:
    """``columns`` of every row of ``table`` in key order (``_order``), or in the order they arrived when ``arrived``
    and the table keeps one, fetched a batch at a time."""
    listed = ", ".join(f'CAST(sum("{c}") AS BIGINT) AS "{c}"' if c == table.summed else f'"{c}"' for c in columns)
    order = table.arrival if arrived and table.arrival else _order(conn, table)
    keys = ", ".join(f'"{k}"' for k in table.key)
    grouped = f" GROUP BY {keys}" if table.summed else ""  # a counter's shards as its one row
    where = _where(table)
    counted = SHARDED.get(table.name)
    if table.summed:  # a counter at zero is no count: the copy's target rebuilds counters from the jobs, without them
        grouped += f' HAVING sum("{table.summed}") <> 0'
    elif counted is not None and counted in columns:
        where = f'{where} AND "{counted}" <> 0' if where else f' WHERE "{counted}" <> 0'
    sql = f'SELECT {listed} FROM "{table.name}"{where}{grouped} ORDER BY {order}'
    if isinstance(conn, PostgresConnection):
        import psycopg

        with conn.raw.cursor(name=f"copy_{table.name}") as cursor:
            cursor.itersize = BATCH
            try:
                cursor.execute(translated(sql, False))
                yield from cursor
            except psycopg.Error as exc:
                raise failure(exc) from exc
        return
    yield from conn.execute(sql)


def reading(conn: Connection) -> AbstractContextManager[Any]:
    """One moment's view of the database for the block (a read transaction; PostgreSQL's repeatable read)."""
    if isinstance(conn, PostgresConnection):
        return _pg_snapshot(conn)
    return atomic(conn, immediate=False)


class _pg_snapshot:
    def __init__(self, conn: PostgresConnection):
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def __exit__(self, *exc: object) -> None:
        self.conn.execute("ROLLBACK")


def _value(value: Any, kind: str) -> Any:
    """A value as the target's column of ``kind`` takes it (PostgreSQL's types are strict where SQLite's are not)."""
    if value is None:
        return None
    if kind == "bytes":
        return value.encode() if isinstance(value, str) else bytes(value)
    if kind == "text" and not isinstance(value, str):
        return bytes(value).decode() if isinstance(value, bytes | memoryview) else str(value)
    return value


def canonical(value: Any) -> bytes | None:
    """A value as the check compares it: None, else its text's bytes (a number as written, bytes as they are)."""
    if value is None:
        return None
    if isinstance(value, bytes | memoryview):
        return bytes(value)
    if isinstance(value, bool):
        value = int(value)
    return str(value).encode()


def _digest_row(digest: Any, row: Sequence[bytes | None]) -> None:
    for value in row:
        if value is None:
            digest.update(b"N")
        else:
            digest.update(b"V%d:" % len(value))
            digest.update(value)
    digest.update(b"\n")


@dataclass
class Check:
    """One table compared on both sides: its rows on the target, the target's digest, and where they differ."""

    table: str
    rows: int
    digest: str
    difference: str | None = None


def shared(source: Table, target: Table) -> list[str]:
    """The columns copied and compared: the source's that the target has (an engine's own arrival column, the
    other's rowid, is left to the target)."""
    return [c for c in source.names if c in target.names]


#: rows a new database's schema writes itself, as it writes them (the mirror's one state row, never refreshed): a
#: database holding only these holds no data
SEEDED = {"crm_mirror_state": "watermark IS NULL AND refreshed_at IS NULL AND full_loaded_at IS NULL AND last_requests = 0"}


def holds_data(conn: Connection, found: dict[str, Table]) -> list[str]:
    """The tables of the database behind ``conn`` that hold rows synctool wrote (its schema's own records and seed
    rows aside)."""
    held = []
    for t in in_order(found):
        where = _where(t) or (f" WHERE NOT ({SEEDED[t.name]})" if t.name in SEEDED else "")
        if conn.execute(f'SELECT 1 FROM "{t.name}"{where} LIMIT 1').fetchone() is not None:
            held.append(t.name)
    return held


def copy_rows(source: Connection, target: Connection) -> dict[str, int]:
    """Every row of ``source``'s tables written into ``target``'s, in one transaction on the target; the rows
    copied per table. ``target`` holds the schema and no data (seed rows a fresh SQLite file holds are replaced).
    Raises ``store.Error`` (nothing written) when a row is refused."""
    theirs, ours = tables(source), tables(target)
    missing = [
        f"{t.name}.{c}"
        for t in theirs.values()
        if t.name in ours
        for c in t.names
        if c not in shared(t, ours[t.name]) + [t.arrival]
    ] + [t for t in theirs if t not in ours]
    if missing:
        raise sqlite3.DatabaseError(f"the target's schema has no {', '.join(missing[:5])}: is it an older synctool's?")
    copied: dict[str, int] = {}
    with reading(source), atomic(target):
        for table in in_order(theirs):
            if table.name in DERIVED:
                continue
            kinds = {c.name: c.kind for c in ours[table.name].columns}
            columns = shared(table, ours[table.name])
            if table.name == "store_meta":
                insert = (
                    f"INSERT INTO store_meta ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
                )
            else:
                target.execute(f'DELETE FROM "{table.name}"')  # a new database's seed rows (``SEEDED``)
                listed = ", ".join(f'"{c}"' for c in columns)
                insert = f'INSERT INTO "{table.name}" ({listed}) VALUES ({", ".join("?" for _ in columns)})'
            n = 0
            stream = iter(rows(source, table, columns, arrived=True))
            while batch := list(islice(stream, BATCH)):
                target.executemany(insert, [[_value(v, kinds[c]) for v, c in zip(row, columns, strict=True)] for row in batch])
                n += len(batch)
            copied[table.name] = n
        if isinstance(target, PostgresConnection):
            for table in ours.values():
                for column in table.identity:
                    target.execute(
                        f'SELECT setval(pg_get_serial_sequence(quote_ident(?), ?), coalesce(max("{column}"), 1),'
                        f' max("{column}") IS NOT NULL) FROM "{table.name}"',
                        (table.name, column),
                    ).fetchall()
    return copied


def compare(source: Connection, target: Connection) -> list[Check]:
    """Each table both sides hold, read from both in key order and compared row by row: its rows on the target, the
    target's digest (SHA-256 of its rows as ``canonical`` writes them, the first 16 hex digits) and the first
    difference, if any."""
    theirs, ours = tables(source), tables(target)
    checks = []
    with reading(source), reading(target):
        for table in in_order(theirs):
            if table.name not in ours:
                checks.append(Check(table.name, 0, "", "missing on the target"))
                continue
            columns = shared(table, ours[table.name])
            left, right = rows(source, table, columns), rows(target, ours[table.name], columns)
            digest, n, difference = hashlib.sha256(), 0, None
            for a, b in zip_longest(left, right):
                if b is not None:
                    cb = [canonical(v) for v in b]
                    _digest_row(digest, cb)
                    n += 1
                if difference is None:
                    ca = None if a is None else [canonical(v) for v in a]
                    if ca != (None if b is None else cb):
                        difference = _said(table, columns, a, b)
            checks.append(Check(table.name, n, digest.hexdigest()[:16], difference))
    return checks


def _said(table: Table, columns: list[str], a: Sequence[Any] | None, b: Sequence[Any] | None) -> str:
    def key(row: Sequence[Any]) -> str:
        return ", ".join(f"{k}={row[columns.index(k)]!r}" for k in table.key[:3] if k in columns)

    if b is None:
        return f"the target lacks the row {key(a or ())} (and any after it)"
    if a is None:
        return f"the target has a row the source lacks: {key(b)}"
    if key(a) != key(b):
        return f"the rows part at {key(a)} (the target's: {key(b)})"
    differing = [c for c, x, y in zip(columns, a, b, strict=True) if canonical(x) != canonical(y)]
    return f"the row {key(a)} differs in {', '.join(differing)}"
