"""Transactions and named locks.

``atomic`` nests: outside a transaction it is ``BEGIN IMMEDIATE`` ... ``COMMIT``, inside one a savepoint, so a
data function works on its own or inside a caller's change. A named lock (``named_lock``) is a row of ``locks``
that every process sees: taken through a job's connection (``held_by``) it belongs to the job's lease owner and
lapses with it.

On SQLite ``BEGIN IMMEDIATE`` takes the database's one write lock, so no two transactions' read-then-write ever
interleave. On PostgreSQL a transaction that must be alone with something takes ``exclusive(conn, name)`` (an
advisory lock on the name, held to the transaction's end; nothing on SQLite, where the write lock already is), or
``try_exclusive`` where it would rather wait its turn outside the transaction (the named locks).
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

from synctool.errors import StoreUnavailable
from synctool.store import dialect
from synctool.store.engine import Busy, Connection, Error

# Threads of one process take turns at writing here, so they never meet in SQLite's busy handler, whose
# sleeps (1, 2, 5, 10 ... 100 ms) would idle drain's workers; other processes still wait on busy_timeout.
_WRITE_LOCK = threading.RLock()


@contextmanager
def atomic(conn: Connection, *, immediate: bool = True) -> Iterator[Connection]:
    """A transaction that nests: outside one, ``BEGIN IMMEDIATE`` ... ``COMMIT`` (the write lock taken up
    front, so two processes never deadlock upgrading a read); inside one, a savepoint, so a data function
    can be called on its own or as part of a caller's larger change. Rolls back on any exception."""
    with _WRITE_LOCK:
        if conn.in_transaction:
            name = f"sp_{uuid.uuid4().hex[:12]}"
            conn.execute(f"SAVEPOINT {name}")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:  # SQLite may already have rolled the whole transaction back (disk full, I/O)
                    conn.execute(f"ROLLBACK TO {name}")
                    conn.execute(f"RELEASE {name}")
                raise
            conn.execute(f"RELEASE {name}")
            return
        conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
        try:
            yield conn
            _commit(conn)
        except BaseException:
            # a failed COMMIT (disk full, read-only, busy) can leave the transaction open: never let the next
            # caller's work become a savepoint inside a transaction that will not commit
            _rollback(conn)
            raise


# --- what stands in for SQLite's one writer on PostgreSQL ---
# SQLite's ``BEGIN IMMEDIATE`` takes the whole database's write lock, so a transaction's read-then-write is never
# interleaved with another process's. PostgreSQL locks rows: where a transaction must be alone with a name (the
# pacer's ledger, a named lock, the queue's claim), it takes a transaction-level advisory lock on the name, in the
# current schema (an organisation's schema is its own), released when the transaction ends.

_ADVISORY_KEY = "hashtextextended(current_schema() || ':' || ?, 0)"


def _aborted(conn: Connection) -> bool:
    """Whether the open PostgreSQL transaction failed (a statement refused outside a savepoint): PostgreSQL then
    refuses every statement until it is rolled back, and answers COMMIT by rolling back."""
    from psycopg.pq import TransactionStatus

    raw = getattr(conn, "raw", None)
    return raw is not None and raw.info.transaction_status == TransactionStatus.INERROR


def _commit(conn: Connection) -> None:
    """COMMIT; on PostgreSQL a transaction a failed statement spoiled (its error caught inside the block, outside any
    savepoint) would be rolled back by the COMMIT without a word: it raises instead, as nothing was written."""
    if dialect.on_postgres(conn) and _aborted(conn):
        raise Busy("a statement failed inside the transaction: nothing of it was written")
    conn.execute("COMMIT")


def going_on(conn: Connection) -> bool:
    """Whether a transaction is open on ``conn`` and may still commit: SQLite rolls one back itself on some failures
    (disk full, I/O); PostgreSQL keeps one that a failed statement spoiled open, refusing all but a rollback."""
    if not conn.in_transaction:
        return False
    return not (dialect.on_postgres(conn) and _aborted(conn))


def exclusive(conn: Connection, name: str, *, shared: bool = False) -> None:
    """Inside the caller's transaction, be the only transaction working on ``name`` until it ends (every process,
    every machine): what SQLite's ``BEGIN IMMEDIATE`` gives every transaction. PostgreSQL: an advisory lock on the
    name in the current schema, waited for; SQLite: nothing more to do. ``shared``: alongside other shared holders
    of the name, never alongside an exclusive one (which waits for every shared holder to end, and they for it)."""
    if not conn.in_transaction:
        raise RuntimeError("exclusive needs a transaction (store.atomic)")
    if dialect.on_postgres(conn):
        lock = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
        conn.execute(f"SELECT {lock}({_ADVISORY_KEY})", (name,)).fetchone()


def writers_beside(conn: Connection) -> int:
    """The most transactions that may be writing at the same moment as this connection's, beside it: none on
    SQLite (one writer at a time); on PostgreSQL one for each other connection the server takes
    (``max_connections``), every one of which could be in the middle of a write this one cannot see yet."""
    if not dialect.on_postgres(conn):
        return 0
    return int(conn.execute("SELECT current_setting('max_connections')").fetchone()[0]) - 1


def try_exclusive(conn: Connection, names: list[str]) -> bool:
    """``exclusive`` for every name in ``names`` (in order) when no other transaction has one of them; False, at
    once, when another has (the caller waits outside its transaction and tries again). Always True on SQLite."""
    if not conn.in_transaction:
        raise RuntimeError("try_exclusive needs a transaction (store.atomic)")
    if not dialect.on_postgres(conn):
        return True
    for name in names:
        found = conn.execute(f"SELECT pg_try_advisory_xact_lock({_ADVISORY_KEY})", (f"lock:{name}",)).fetchone()
        if not (found and found[0]):
            return False
    return True


def _rollback(conn: Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except Error:
            pass  # the error being raised says what went wrong; this one would only hide it


def run_script(conn: Connection, sql: str) -> None:
    """Run statements one by one inside the caller's transaction (executescript would commit)."""
    pending = ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            conn.execute(pending)
            pending = ""
    if pending.strip():
        conn.execute(pending)


@dataclass(frozen=True)
class LockHolder:
    """Who the locks taken through a connection belong to: the running job's lease owner, so the drain's
    heartbeat renews them with the lease and they lapse with it when the drain dies."""

    owner: str
    ttl_s: float


class SqliteConnection(sqlite3.Connection):
    """synctool's SQLite connection (``connect`` makes every one): ``lock_holder`` is set while a job runs on it
    (``held_by``)."""

    engine = dialect.SQLITE
    lock_holder: LockHolder | None = None


@contextmanager
def held_by(conn: Connection, holder: LockHolder) -> Iterator[None]:
    """For the block, the locks taken through ``conn`` (a job's own connection) belong to ``holder``."""
    if not hasattr(type(conn), "lock_holder"):  # SqliteConnection, postgres.PostgresConnection
        raise TypeError("held_by needs a connection from store.connect")
    held = cast(SqliteConnection, conn)  # either: both have ``lock_holder``
    held.lock_holder = holder
    try:
        yield
    finally:
        held.lock_holder = None


def renew_locks(conn: Connection, owners: list[str], ttl_s: float) -> int:
    """Extend the locks of ``owners`` (a live drain's heartbeat); returns how many."""
    if not owners:
        return 0
    expires = time.time() + ttl_s
    with atomic(conn):
        return sum(conn.execute("UPDATE locks SET expires = ? WHERE owner LIKE ?", (expires, f"{o}#%")).rowcount for o in owners)


def lock_owner(conn: Connection, ttl_s: float | None) -> tuple[str, float]:
    """Who a lock taken through ``conn`` belongs to, and how long it lasts without renewal (``ttl_s`` when given):
    inside a job (``held_by``) the running job's lease owner, one lease past its last heartbeat; elsewhere a new
    owner, a minute."""
    holder: LockHolder | None = getattr(conn, "lock_holder", None)
    ttl_s = ttl_s or (holder.ttl_s if holder else None) or 60.0
    return (f"{holder.owner}#{uuid.uuid4()}" if holder else str(uuid.uuid4())), ttl_s


def wait_for_locks(names: list[str], deadline: float, wait_s: float) -> None:
    """A moment's wait while another holds ``names``; StoreUnavailable once ``deadline`` (``wait_s`` from the
    start) has passed."""
    if time.monotonic() > deadline:
        raise StoreUnavailable(f"waited {wait_s:.0f} s for {', '.join(names)}")
    time.sleep(0.05)


def locks_held(conn: Connection, names: list[str], now: float) -> bool:
    """Whether any lock in ``names`` is held at ``now`` (a lapsed one is not). Inside a transaction that goes on to
    take them, ``try_exclusive(conn, names)`` first: on PostgreSQL two transactions could otherwise both see them
    free."""
    marks = ",".join("?" * len(names))
    return bool(conn.execute(f"SELECT count(*) FROM locks WHERE name IN ({marks}) AND expires >= ?", (*names, now)).fetchone()[0])


def take_locks(conn: Connection, names: list[str], owner: str, expires: float) -> None:
    """Give every lock in ``names`` to ``owner`` until ``expires``, in the caller's transaction (which has seen
    that none is held)."""
    conn.executemany(
        "INSERT INTO locks (name, owner, expires) VALUES (?, ?, ?) ON CONFLICT (name)"
        " DO UPDATE SET owner = excluded.owner, expires = excluded.expires",
        [(name, owner, expires) for name in names],
    )


def release_locks(conn: Connection, owner: str) -> None:
    """Let go of every lock ``owner`` holds, in the caller's transaction."""
    conn.execute("DELETE FROM locks WHERE owner = ?", (owner,))


@contextmanager
def named_lock(conn: Connection, names: list[str], *, ttl_s: float | None = None, wait_s: float = 120) -> Iterator[None]:
    """Hold every lock in ``names`` (taken together, so two holders never deadlock) for the block.

    Taken through a job's connection (``held_by``) the lock belongs to the running job's lease owner and is renewed with its lease; a lock
    left by a process that died lapses after ``ttl_s`` without renewal. Waiting longer than ``wait_s``
    raises StoreUnavailable."""
    owner, ttl_s = lock_owner(conn, ttl_s)
    names = sorted(set(names))
    deadline = time.monotonic() + wait_s
    while True:
        now = time.time()
        with atomic(conn):
            if try_exclusive(conn, names) and not locks_held(conn, names, now):
                take_locks(conn, names, owner, now + ttl_s)
                break
        wait_for_locks(names, deadline, wait_s)
    try:
        yield
    finally:
        with atomic(conn):
            release_locks(conn, owner)
