"""Group commit for the receiver: deliveries that arrive together share one durable commit."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from synctool import store
from synctool.errors import StoreUnavailable
from synctool.inbox import Inbound, Prepared, prepare, write


class DeliveryWriter:
    """Group commit for the receiver: deliveries that arrive together share one durable commit.

    ``await writer.store(inbound)`` returns the job id (or None for a duplicate) only after the
    transaction holding it has committed with ``synchronous=FULL``; if that fails, every delivery in the
    batch gets StoreUnavailable and none is acknowledged. The rows are prepared on the event loop; one
    helper thread inserts and commits them (SQLite releases the GIL while it works), so the loop keeps
    parsing and verifying the next deliveries, which form the next batch. One batch is in flight at a time.
    """

    def __init__(self, db_path: str | Path, *, max_attempts: int = 3):
        self._db_path = db_path
        self._conn: sqlite3.Connection | None = None
        self._max_attempts = max_attempts
        self._pending: list[tuple[Prepared, asyncio.Future]] = []
        self._in_flight = False
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="synctool-writer")

    async def store(self, inbound: Inbound) -> str | None:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._pending.append((prepare(inbound, self._max_attempts), future))
        if not self._in_flight:
            self._in_flight = True
            loop.call_soon(self._flush, loop)
        return await future

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _write_batch(self, prepared: list[Prepared]) -> list[str | None]:
        if self._conn is None:
            self._conn = store.connect(self._db_path)
        return write(self._conn, prepared)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            self._in_flight = False
            return
        done = self._thread.submit(self._write_batch, [prepared for prepared, _ in batch])
        done.add_done_callback(lambda f: loop.call_soon_threadsafe(self._written, loop, batch, f))

    def _written(self, loop: asyncio.AbstractEventLoop, batch: list, done) -> None:
        exc = done.exception()
        if exc is not None:
            error = exc if isinstance(exc, StoreUnavailable) else StoreUnavailable(f"could not store the delivery: {exc}")
            for _, future in batch:
                if not future.done():
                    future.set_exception(error)
        else:
            for (_, future), result in zip(batch, done.result()):
                if not future.done():  # a client that went away still had its delivery committed
                    future.set_result(result)
        self._flush(loop)
