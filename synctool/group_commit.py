"""Group commit for the receiver: deliveries that arrive together share one durable commit.

``await writer.store(inbound)`` returns the job id (or None for a duplicate) only after the transaction
holding it has committed with ``synchronous=FULL``; if that fails, every delivery in the batch gets
StoreUnavailable and none is acknowledged.

The inserts and the commit run in a small child process that owns the database connection. The event
loop hands it one batch at a time over a pipe and keeps verifying and parsing the next deliveries
meanwhile; those form the next batch. A child process rather than a thread, because the SQLite work and
the web work then do not take turns at one interpreter lock: bench/receiver.py measured about 0.40 of a
bare Starlette app's throughput with a writer thread and about 0.6 with the child. If the child dies,
the batch in flight is answered 503 (the platforms retry) and the next delivery starts a new child.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import pickle
from multiprocessing.connection import Connection
from pathlib import Path

from synctool.errors import StoreUnavailable
from synctool.inbox import Inbound, JobSpec

logger = logging.getLogger("synctool.receiver")


def pack(inbound: Inbound) -> tuple:
    """Plain tuples cross the pipe several times faster than dataclasses."""
    job = inbound.job
    return (inbound.source, inbound.event_id, inbound.event_type, inbound.body, inbound.headers, inbound.verified,
            inbound.note, (job.entity_type, job.entity_id, job.target, job.external_id, job.email, job.name,
                           job.amount, job.status, job.message))


def unpack(item: tuple) -> Inbound:
    source, event_id, event_type, body, headers, verified, note, job = item
    return Inbound(source, event_id, event_type, body, JobSpec(*job), headers=headers, verified=verified, note=note)


def _child(db_path: str, max_attempts: int, pipe: Connection) -> None:
    """The writer process: receive a batch, store it, answer with the job ids or the error."""
    from synctool import store
    from synctool.inbox import prepare, write

    conn = None
    while True:
        try:
            batch = [unpack(item) for item in pickle.loads(pipe.recv_bytes())]
        except (EOFError, OSError):
            return  # the receiver is gone
        try:
            if conn is None:
                conn = store.connect(db_path)
            answer = ("ok", write(conn, [prepare(inbound, max_attempts) for inbound in batch]))
        except Exception as exc:
            answer = ("error", f"could not store the delivery: {exc}")
        pipe.send_bytes(pickle.dumps(answer))


class DeliveryWriter:
    def __init__(self, db_path: str | Path, *, max_attempts: int = 3):
        self._db_path = str(db_path)
        self._max_attempts = max_attempts
        self._pipe: Connection | None = None
        self._process = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[tuple[Inbound, asyncio.Future]] = []
        self._in_flight: list[tuple[Inbound, asyncio.Future]] | None = None

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipe, child_end = context.Pipe()
        self._process = context.Process(target=_child, args=(self._db_path, self._max_attempts, child_end),
                                        name="synctool-writer", daemon=True)
        self._process.start()
        child_end.close()
        self._loop = loop
        loop.add_reader(self._pipe.fileno(), self._on_answer)

    async def store(self, inbound: Inbound) -> str | None:
        loop = asyncio.get_running_loop()
        if self._pipe is None:
            self._start(loop)
        future = loop.create_future()
        self._pending.append((inbound, future))
        if self._in_flight is None:
            self._in_flight = []
            loop.call_soon(self._send)
        return await future

    def _send(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            self._in_flight = None
            return
        self._in_flight = batch
        try:
            self._pipe.send_bytes(pickle.dumps([pack(inbound) for inbound, _ in batch], protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, ValueError, AttributeError) as exc:
            self._child_lost(f"the database writer is gone ({exc})")

    def _on_answer(self) -> None:
        try:
            kind, value = pickle.loads(self._pipe.recv_bytes())
        except (EOFError, OSError) as exc:
            self._child_lost(f"the database writer stopped ({exc or 'end of pipe'})")
            return
        batch, self._in_flight = self._in_flight or [], None
        for index, (_, future) in enumerate(batch):
            if future.done():  # the client went away; its delivery was still committed (or not) with the rest
                continue
            if kind == "ok":
                future.set_result(value[index])
            else:
                future.set_exception(StoreUnavailable(value))
        if self._pending:
            self._in_flight = []
            self._send()

    def _child_lost(self, message: str) -> None:
        batch, self._in_flight = (self._in_flight or []) + self._pending, None
        if batch:
            logger.error("%s; answering 503 to the %d deliveries in flight", message, len(batch))
        else:  # e.g. the service is stopping; the next delivery starts a new writer
            logger.info("%s", message)
        self._pending = []
        self.close()
        for _, future in batch:
            if not future.done():
                future.set_exception(StoreUnavailable(message))

    def close(self) -> None:
        if self._pipe is not None:
            if self._loop is not None and not self._loop.is_closed():
                try:
                    self._loop.remove_reader(self._pipe.fileno())
                except (ValueError, OSError):
                    pass
            self._pipe.close()
            self._pipe = None
        if self._process is not None:
            self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.terminate()
            self._process = None
