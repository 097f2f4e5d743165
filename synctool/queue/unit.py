"""A job's unit of work: its local writes gather in one transaction and commit at named points.

A handler's writes (the gift ledger, the mirror, links, locks, the job's own row) do not commit one by one. They
gather in the running job's ``Unit`` and commit at the points the job names around each outside write:

- **before** a CRM write: what the job is about to do (the lock that makes it the one writer, the ledger's
  ``pending``), so a job cut short looks before it writes again;
- **after** it: what the CRM answered (the ledger's ``done`` and the gift's id);
- the job's **end**: the rest, with the job's own row (``queue.worker.run_job``).

The transaction is opened by the first gathered write (``BEGIN IMMEDIATE``: nothing is read in it before it
holds the write lock, so it never fails to upgrade a stale read; on PostgreSQL, which locks rows, a named lock is
taken under ``transactions.try_exclusive``) and ends at the next point, so SQLite's write lock is held only
while the job works locally, never while it waits on the network: every outside request first
commits what is gathered (``before_request``; the job's clients call it before they send). Inside the unit,
``store.atomic`` is a savepoint: a helper's change stays whole, and a failed one is rolled back alone.

A helper that writes takes the unit as a parameter (``work: Unit``, or the job whose ``.unit`` it uses): inside a
running job, the job's (``Job.unit``, bound by ``queue.worker.run_job`` while the job runs); anywhere else (an
operator's command, a test) the caller makes an unbound ``Unit(conn)``, whose every ``gather`` is its own commit.
Nothing finds a unit through its connection.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from synctool import store
from synctool.errors import StoreUnavailable, Wait
from synctool.store import transactions

logger = logging.getLogger("synctool.unit")


class Unit:
    """One job's unit of work on its connection. ``points`` names the commits it made, in order. Unbound (outside
    a job: ``Unit(conn)``), each ``gather`` is its own transaction and commit, and ``commit`` has nothing to do."""

    def __init__(self, conn: store.Connection) -> None:
        self.conn = conn
        self.points: list[str] = []
        self.bound = False
        self._open: ExitStack | None = None  # the gathering transaction, while there is one
        self._depth = 0  # gather blocks being run now

    @property
    def gathering(self) -> bool:
        """Whether writes are gathered and not yet committed (the write lock is held)."""
        return self._open is not None

    @contextmanager
    def bind(self) -> Iterator[Unit]:
        """For the block, the unit gathers its job's writes until its points commit them. What no point committed
        when the block ends is rolled back (the job's end commits it first: ``run_job``)."""
        self.bound = True
        try:
            yield self
        finally:
            self.bound = False
            self.abandon()

    @contextmanager
    def gather(self) -> Iterator[store.Connection]:
        """A change that commits at the unit's next point (a savepoint in its transaction, opened by the first);
        outside a job, its own transaction and commit."""
        if not self.bound:
            with store.atomic(self.conn):
                yield self.conn
            return
        if self._open is not None and not transactions.going_on(self.conn):
            self._lost()
        if self._open is None and not self.conn.in_transaction:
            stack = ExitStack()
            stack.enter_context(store.atomic(self.conn))  # BEGIN IMMEDIATE, and the process's writer turn
            self._open = stack
        self._depth += 1
        try:
            with store.atomic(self.conn):  # a savepoint: this change stays whole
                yield self.conn
        finally:
            self._depth -= 1

    def commit(self, point: str) -> bool:
        """Commit what is gathered, as the point ``point``; False when nothing was."""
        if self._open is None:
            return False
        if self._depth:
            raise RuntimeError(f"the commit point {point!r} is inside a gathered change")
        if not transactions.going_on(self.conn):
            self._lost()
        stack, self._open = self._open, None
        stack.close()  # COMMIT; a failed one is rolled back and raised
        self.points.append(point)
        return True

    def before_request(self, what: str) -> None:
        """An outside request is about to be sent: commit what is gathered, so no lock is held while it waits."""
        if self._open is None:
            return
        if self._depth:  # a request inside a change: it cannot commit half of it; the change keeps the write lock
            logger.warning("%s sent inside a gathered change: the database stays locked while it waits", what)
            return
        self.commit(f"before {what}")

    def recover(self) -> None:
        """After a failed handler: when the database rolled back what was gathered (the failing statement raised
        already), forget it, so the job's end is recorded in a transaction of its own."""
        if self._open is not None and not transactions.going_on(self.conn):
            logger.warning("the job's uncommitted writes were rolled back by the database")
            self.abandon()

    def abandon(self) -> None:
        """Roll back what is gathered (a job cut short: nothing it did not commit at a point happened)."""
        stack, self._open = self._open, None
        if stack is not None:
            dropped = RuntimeError("the job's unit of work was abandoned")
            stack.__exit__(type(dropped), dropped, None)

    def _lost(self) -> None:
        """The database rolled the gathered transaction back under us (a failed write: disk full, I/O)."""
        stack, self._open = self._open, None
        lost = StoreUnavailable("the database rolled back the job's uncommitted writes")
        if stack is not None:
            stack.__exit__(type(lost), lost, None)
        raise lost

    # -- cross-process locks -------------------------------------------------------------------------------

    def _held(self, names: list[str]) -> bool:
        return transactions.locks_held(self.conn, names, time.time())

    @contextmanager
    def lock_or_wait(self, names: list[str], busy: str, *, wait_s: float = 5) -> Iterator[None]:
        """``lock``, where another job still holding it after ``wait_s`` is no failure: this job waits its turn
        (``Wait``, saying ``busy``, queued again 5 s later, the attempt not counted)."""
        try:
            with self.lock(names, wait_s=wait_s):
                yield
        except StoreUnavailable:
            raise Wait(busy, retry_after=5) from None

    @contextmanager
    def lock(self, names: list[str], *, ttl_s: float | None = None, wait_s: float = 120) -> Iterator[None]:
        """Hold every lock in ``names`` for the block, as ``store.named_lock`` does (taken together, owned by the
        running job's lease, lapsing with it), but inside the unit: taking it and letting it go are gathered, so
        the lock row commits at the next point, which is before the write it protects. While another holds it,
        what is gathered is committed first (the holder may need the write lock to finish)."""
        if not self.bound:
            with store.named_lock(self.conn, names, ttl_s=ttl_s, wait_s=wait_s):
                yield
            return
        owner, ttl = transactions.lock_owner(self.conn, ttl_s)
        names = sorted(set(names))
        deadline = time.monotonic() + wait_s
        taken = False
        while not taken:
            if not self._held(names):
                with self.gather():
                    if transactions.try_exclusive(self.conn, names) and not self._held(names):
                        transactions.take_locks(self.conn, names, owner, time.time() + ttl)
                        taken = True
            if not taken:
                self.before_request(f"waiting for {', '.join(names)}")
                transactions.wait_for_locks(names, deadline, wait_s)
        try:
            yield
        finally:
            with self.gather():
                transactions.release_locks(self.conn, owner)
