"""Rows and tables: sqlite-utils' view of a connection, a row put by its key, a WHERE clause built a condition at
a time, a new row's id."""

from __future__ import annotations

import sqlite3
import uuid
from typing import TYPE_CHECKING, Any, cast

from synctool.store.engine import Connection
from synctool.store.transactions import atomic, exclusive

if TYPE_CHECKING:
    from sqlite_utils import Database


def database(conn: Connection) -> Database:
    """sqlite-utils' view of a connection, for table upserts, listings and schema changes. Write through
    it inside ``atomic(conn)``: sqlite-utils then uses savepoints within synctool's transaction."""
    from sqlite_utils import Database

    return Database(cast(sqlite3.Connection, conn), recursive_triggers=False, execute_plugins=False)


def put_row(conn: Connection, table: str, key: dict[str, Any], values: dict[str, Any]) -> None:
    """The row of ``table`` whose columns equal ``key`` gets ``values``, its other columns left as they were; a row of
    ``key`` and ``values`` is made when there is none. ``table`` and the column names come from code, never input."""
    where = " AND ".join(f"{name} = ?" for name in key)
    with atomic(conn):
        exclusive(conn, f"row:{table}:{sorted(key.items())!r}")  # PostgreSQL: no two makers of the same row
        if conn.execute(f"SELECT 1 FROM {table} WHERE {where}", tuple(key.values())).fetchone() is None:
            row = key | values
            conn.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", tuple(row.values()))
        elif values:
            conn.execute(
                f"UPDATE {table} SET {', '.join(f'{name} = ?' for name in values)} WHERE {where}",
                (*values.values(), *key.values()),
            )


class Where:
    """A WHERE clause built one condition at a time, with its parameters (for the list queries)."""

    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, *params: Any) -> Where:
        self.clauses.append(clause)
        self.params.extend(params)
        return self

    def __str__(self) -> str:
        return ("WHERE " + " AND ".join(self.clauses)) if self.clauses else ""


def new_id() -> str:
    return str(uuid.uuid4())
