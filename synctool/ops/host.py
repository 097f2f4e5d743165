"""A host's cron: the commands cron runs (drain, poll, webhooks heal, reconcile, alerts summary, prune, backup,
doctor), run with no organisation named on a host that has organisations, do their work for each organisation,
then for the single install when its config is there.

Each organisation is a part of its own: its own Runtime (``Runtime.from_environ(org=NAME)``), its own database
connection, closed after, and its own failure. A part that raises (a broken config, a wrong key, a CRM outage, a
bug) is recorded with the exit code today's command would have given it (``errors.exit_code``), and the next part
runs all the same: ``run_each``. The CLI (``console.host``) words each part under a header naming it.

``drain`` is fair between organisations (``drain_host``): a bounded pool of workers (``SYNCTOOL_HOST_WORKERS``)
takes organisations from a round-robin queue; a visit runs that organisation's drain (``ops.drain.drain``, with
its own pacer and concurrency) for at most a slice (``SYNCTOOL_HOST_SLICE_S``) or until nothing of it is due; an
organisation with more due goes back at the end of the queue. Every organisation is visited in the first round,
so with W workers and B busy organisations a due job waits at most about ceil(B / W) slices; while B <= W a busy
organisation is never waiting for a worker, so it keeps spending its own CRM allowance. Nothing here is Typer or
Rich.
"""

from __future__ import annotations

import logging
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from synctool import orgs
from synctool.config import config_path, host_tuning
from synctool.errors import SynctoolError, exit_code
from synctool.ops.alerts import Digest
from synctool.queue.worker import DrainSummary
from synctool.runtime import Runtime

if TYPE_CHECKING:
    from synctool import store

logger = logging.getLogger("synctool.host")

T = TypeVar("T")

#: the single install's name in a host's output and its key in ``--json`` (no organisation can be named so)
SINGLE = "(single install)"
#: the host's own part (`doctor`'s host lines): likewise no organisation's name
HOST = "(host)"


def parts(environ: Mapping[str, str], explicit_config: str | None) -> list[str | None]:
    """What a host-wide run covers: each organisation by name, then ``None`` for the single install when it is there:
    its config named (``--config``, ``$SYNCTOOL_CONFIG``) or found at the default path, or its database named
    (``$SYNCTOOL_DB``). Empty on a host without organisations (the caller then runs today's command)."""
    names: list[str | None] = list(orgs.names(environ))
    if not names:
        return []
    path, named = config_path(explicit_config, environ)
    if named or path.exists() or environ.get("SYNCTOOL_DB"):
        names.append(None)
    return names


def part_environ(environ: Mapping[str, str], name: str | None) -> Mapping[str, str]:
    """The environment part ``name`` runs with: an organisation's without ``$SYNCTOOL_CONFIG`` and ``$SYNCTOOL_DB``,
    which name the single install's files (crontab.example sets them), not its own."""
    if name is None:
        return environ
    return {key: value for key, value in environ.items() if key not in ("SYNCTOOL_CONFIG", "SYNCTOOL_DB")}


def label(name: str | None) -> str:
    """A part's name in the output: the organisation's, or ``SINGLE``."""
    return SINGLE if name is None else name


@dataclass
class Part(Generic[T]):
    """What one organisation's part of a host-wide run gave: its value, or the error that ended it and the exit code
    today's command gives for that error."""

    name: str | None
    value: T | None = None
    error: str | None = None
    code: int = 0


def run_each(names: Sequence[str | None], run: Callable[[str | None], T]) -> Iterator[Part[T]]:
    """``run(name)`` for each part in turn, each yielded as it ends; an error ends that part alone."""
    for name in names:
        try:
            part: Part[T] = Part(name, value=run(name))
        except SynctoolError as exc:
            detail = getattr(exc, "detail", "")
            part = Part(name, error=str(exc) + (f" ({detail})" if detail else ""), code=exit_code(exc))
        except Exception as exc:  # a bug in one organisation's part: logged whole, the others run
            logger.exception("%s: internal error", label(name))
            part = Part(name, error=f"internal error: {type(exc).__name__}: {exc}", code=1)
        yield part


def worst(codes: Sequence[int]) -> int:
    """The exit code of a host-wide run: the worst (highest) of its parts' codes."""
    return max(codes, default=0)


def backup_path(path: str, name: str | None) -> str:
    """Where a host-wide `backup PATH` writes a part's copy: the single install's is PATH itself; organisation NAME's
    is PATH with ``.NAME`` before its suffix (``synctool-2026-12-07.riverside.db``), beside it, so a crontab's
    date-stamped PATH and its clean-up (``find -name 'synctool-*.db'``) work unchanged. An organisation's name holds
    no dot, so no two parts' files can be the same."""
    if name is None:
        return path
    given = Path(path)
    suffix = given.suffix if given.suffix and given.stem else ""
    return str(given.with_name(f"{given.name[: len(given.name) - len(suffix)]}.{name}{suffix}"))


def host_checks(environ: Mapping[str, str]) -> list[dict[str, str]]:
    """`doctor`'s host lines, as its rows (check, status, detail, fix): the host data folder and its mode, how many
    organisations it holds, and the tuning of a host's drain."""
    folder = orgs.home(environ)
    names = orgs.names(environ)
    rows: list[dict[str, str]] = []
    try:
        mode = stat.S_IMODE(folder.stat().st_mode)
    except OSError as exc:
        rows.append({"check": "host data folder", "status": "fail", "detail": f"{folder}: {exc.strerror}", "fix": ""})
    else:
        private = not mode & 0o077
        rows.append(
            {
                "check": "host data folder",
                "status": "ok" if private else "fail",
                "detail": f"{folder} ({mode:04o})" + ("" if private else ": its group or others may read it"),
                "fix": "" if private else f"chmod 700 {folder}",
            }
        )
    rows.append({"check": "organisations", "status": "ok", "detail": f"{len(names)}: {', '.join(names)}", "fix": ""})
    try:
        tuning = host_tuning(environ)
    except SynctoolError as exc:
        rows.append({"check": "host drain", "status": "fail", "detail": str(exc), "fix": getattr(exc, "detail", "")})
    else:
        rows.append(
            {
                "check": "host drain",
                "status": "ok",
                "detail": f"{tuning.workers} workers, visits of up to {tuning.slice_s:g} s (SYNCTOOL_HOST_WORKERS, "
                "SYNCTOOL_HOST_SLICE_S)",
                "fix": "",
            }
        )
    return rows


def take_turns(
    names: Sequence[str | None],
    visit: Callable[[str | None, float], float | None],
    *,
    workers: int,
    slice_s: float,
    max_seconds: float,
    clock: Callable[[], float] = time.monotonic,
    stop: threading.Event | None = None,
) -> None:
    """Visit the parts in turn with ``workers`` threads until none has work or ``max_seconds`` passed (no visit
    starts after it). ``visit(name, seconds)`` works for at most ``seconds`` and returns in how many seconds that
    part has work again (0: now), or None (nothing queued, or it failed); a part with work goes back at the end of
    the queue, taken again once its work is due. One part is never visited by two workers at once. Once ``stop`` is
    set no visit starts (those under way end within their slice)."""
    deadline = clock() + max_seconds
    queue: deque[str | None] = deque(names)
    ready_at: dict[str | None, float] = {}
    visiting = 0
    turn = threading.Condition()

    def next_part() -> tuple[bool, str | None]:
        nonlocal visiting
        with turn:
            while True:
                now = clock()
                if now >= deadline or (not queue and not visiting) or (stop is not None and stop.is_set()):
                    return False, None
                for name in queue:
                    if ready_at.get(name, now) <= now:
                        queue.remove(name)
                        visiting += 1
                        return True, name
                soonest = min((ready_at[n] for n in queue), default=deadline)
                turn.wait(timeout=max(0.01, min(soonest, deadline) - now))

    def work() -> None:
        nonlocal visiting
        while True:
            found, name = next_part()
            if not found:
                return
            more: float | None = None
            try:
                more = visit(name, max(0.0, min(slice_s, deadline - clock())))
            finally:
                with turn:
                    visiting -= 1
                    if more is not None and clock() + more < deadline:
                        ready_at[name] = clock() + more
                        queue.append(name)
                    turn.notify_all()

    threads = [threading.Thread(target=work, name=f"host-drain-{n}") for n in range(max(1, min(workers, len(names))))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@dataclass
class OrgDrain:
    """One part's share of a host's drain: its visits' summaries added up, the alerts they sent, or what ended it."""

    name: str | None
    summary: DrainSummary = field(default_factory=DrainSummary)
    alerts: list[Digest] = field(default_factory=list)
    error: str | None = None
    code: int = 0
    visits: int = 0
    runtime: Runtime | None = None
    conn: store.Connection | None = None
    concurrency: int = 3


def _add(total: DrainSummary, one: DrainSummary) -> None:
    for name in ("claimed", "succeeded", "skipped", "retrying", "failed", "previewed", "review", "crm_requests", "elapsed_s"):
        setattr(total, name, getattr(total, name) + getattr(one, name))
    total.failed_jobs += one.failed_jobs
    total.mode = one.mode


def drain_host(
    names: Sequence[str | None],
    build: Callable[[str | None], Runtime],
    *,
    max_seconds: float = 55,
    max_jobs: int | None = None,
    concurrency: int | None = None,
    workers: int = 16,
    slice_s: float = 10.0,
    on_visit: Callable[[OrgDrain, DrainSummary], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    stop: threading.Event | None = None,
) -> list[OrgDrain]:
    """One fair drain of every part (``take_turns``): each part's Runtime is built once (``build(name)``), on its
    first visit, with its database connection, closed at the end; ``concurrency`` (default: each part's
    ``queue.concurrency``) and ``max_jobs`` hold per part. Returns each part's share, in ``names``' order."""
    from synctool import platforms, store
    from synctool.ops.drain import drain
    from synctool.queue.log import next_due_in

    shares = {name: OrgDrain(name) for name in names}
    started = store.iso()  # one run, however many visits: each CRM mirror is refreshed at most once in it
    targets = platforms.drained_targets()

    def visit(name: str | None, seconds: float) -> float | None:
        share = shares[name]
        try:
            if share.runtime is None:
                share.runtime = build(name)
                share.conn = share.runtime.open_database()
                share.concurrency = concurrency or share.runtime.config.queue.concurrency
            assert share.conn is not None
            left = None if max_jobs is None else max_jobs - share.summary.claimed
            one, alert = drain(
                share.conn,
                share.runtime,
                max_seconds=seconds,
                max_jobs=left,
                concurrency=share.concurrency,
                stop=stop,
                run_started=started,
            )
            share.visits += 1
            _add(share.summary, one)
            if alert is not None:
                share.alerts.append(alert)
            if on_visit is not None:
                on_visit(share, one)
            if max_jobs is not None and share.summary.claimed >= max_jobs:
                return None
            return next_due_in(share.conn, targets)
        except SynctoolError as exc:
            detail = getattr(exc, "detail", "")
            share.error, share.code = str(exc) + (f" ({detail})" if detail else ""), exit_code(exc)
        except Exception as exc:  # a bug in one organisation's drain: logged whole, the others drain
            logger.exception("%s: drain: internal error", label(name))
            share.error, share.code = f"internal error: {type(exc).__name__}: {exc}", 1
        return None

    try:
        take_turns(names, visit, workers=workers, slice_s=slice_s, max_seconds=max_seconds, clock=clock, stop=stop)
    finally:
        for share in shares.values():
            if share.conn is not None:
                share.conn.close()
                share.conn = None
    return list(shares.values())
