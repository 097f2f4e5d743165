"""What a caller holds of the database, whatever the engine: ``Connection``, ``Cursor``, ``Row``, ``Error``, ``Busy``.

Outside ``store/`` no module names the engine (``sqlite3``): a function that takes a connection annotates
``store.Connection``, a protocol of exactly what synctool calls on one (SQLite's connection satisfies it as it is,
and so does ``postgres.PostgresConnection``), reads rows as ``store.Row`` (by column name and by position)
and catches ``store.Error`` / ``store.Busy``. Another engine's connection raises its failures as subclasses of these
two (``store/postgres.py``: psycopg's as SQLite's classes), so ``except store.Error`` stays one class. ``tests/test_store_seam.py`` holds every module to it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, TypeAlias

#: a statement's parameters: by position (``?``) or by name (``:name``)
Params: TypeAlias = Sequence[Any] | Mapping[str, Any]

#: any failure the database reports (a constraint, a lock waited for too long, a broken file, a bad statement)
Error = sqlite3.Error
#: the database could not do it now, through no fault of the statement: locked or busy past the busy timeout, a
#: read-only file, a full disk (what a best-effort write gives up on)
Busy = sqlite3.OperationalError


class Row(Protocol):
    """A row, read by column name (``row["email"]``) or position (``row[0]``); ``dict(row)`` has every column."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def keys(self) -> list[str]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...


class Cursor(Protocol):
    """What ``execute`` returns: its rows (``fetchone``, ``fetchall``, or iterated), how many rows a change touched
    (``rowcount``), and the id of the row an INSERT made (``lastrowid``)."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection to the database, as synctool uses one: statements (``execute``, ``executemany``), whether a
    transaction is open (``in_transaction``: ``store.atomic`` nests on it), and ``close``. Transactions are begun
    and ended by ``store.atomic``, never by the caller."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Params = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Params], /) -> Cursor: ...

    def close(self) -> None: ...
