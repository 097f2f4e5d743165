"""Where the platforms register their job handlers, and what the queue needs of the job it runs.

A handler is ``handler(event, job) -> Outcome | None``, found by ``(source, entity_type)``: the event its
job was queued for (``platforms.webhook.Event``: parsed once from the stored delivery, or the job's payload)
and the running job (``platforms.job.Job``: its row, its connection, its unit of work, the config and the clients). It
returns an ``Outcome`` or raises: ``Skip`` ends the job as skipped, ``TransientError`` retries it later,
``PermanentError`` fails it at once.

The queue knows neither the CRM nor the platforms: what it runs a job with comes from a ``JobRunner`` (the
platforms' ``platforms.runner.Runner``), so nothing here imports above the queue's floor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from synctool.config import Config
from synctool.queue import jobs
from synctool.queue.unit import Unit
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool import store

Handler = Callable[[Any, Any], "jobs.Outcome | None"]
HANDLERS: dict[tuple[str, str], Handler] = {}
#: the source a handler registers under when it runs one entity type's jobs whatever their source (a
#: donor pushed to the mailing list comes from donations and from the POS alike)
ANY_SOURCE = "*"


def handler(source: str, entity_type: str) -> Callable[[Handler], Handler]:
    """Register ``fn`` for the jobs of ``entity_type`` from ``source`` (or ``ANY_SOURCE``). A second function
    for the same pair is refused: one platform's handler must never silently replace another's."""

    def register(fn: Handler) -> Handler:
        existing = HANDLERS.get((source, entity_type))
        if existing is not None and _named(existing) != _named(fn):
            raise RuntimeError(f"two handlers for {source} jobs of type {entity_type!r}: {_named(existing)} and {_named(fn)}")
        HANDLERS[(source, entity_type)] = fn
        return fn

    return register


def _named(fn: Handler) -> str:
    """``module:function``: a platform's reference (``Hook``) names its function as the function does itself."""
    ref = getattr(fn, "ref", None)
    return ref if isinstance(ref, str) else f"{fn.__module__}:{fn.__qualname__}"


def find(source: str, entity_type: str) -> Handler | None:
    """The handler of this source's jobs of this type, else the one for any source, else None."""
    return HANDLERS.get((source, entity_type)) or HANDLERS.get((ANY_SOURCE, entity_type))


class RunningJob(Protocol):
    """What the queue reads of a job while it runs it (``platforms.job.Job`` is one): its row, its connection, its
    unit of work."""

    row: store.Row
    conn: store.Connection
    owner: str
    crm_requests: int
    unit: Unit

    @property
    def config(self) -> Config: ...


class JobRunner(Protocol):
    """What drain runs jobs with: the handlers' context and event for each job, their clients (closed at
    the end), and, in preview mode, the CRM writes a job would have sent."""

    rt: Runtime
    preview: bool
    #: the targets drain runs, in order (those whose jobs make CRM jobs first), and those run one at a time
    targets: tuple[str, ...]
    serial: tuple[str, ...]

    def ready(self) -> None: ...

    def context(self, job: store.Row, conn: store.Connection, owner: str, run_started: str) -> RunningJob: ...

    def event(self, running: RunningJob) -> object: ...  # (the platform's ``Event``, which the queue does not read)

    def start_plan(self) -> None: ...

    def plan(self) -> list[dict[str, object]]: ...

    def decision(self, writes: list[dict[str, object]]) -> str: ...

    def close(self) -> None: ...
