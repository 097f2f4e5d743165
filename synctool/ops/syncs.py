"""The sync log and the queue, as the operator sees them (spec: /api/syncs, /api/stats, retry)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, Optional, TypedDict

from pydantic import AfterValidator, Field, field_validator
from pydantic_core import PydanticCustomError

from synctool import store
from synctool.errors import Conflict, InvalidInput, NotFound, one_of
from synctool.queue import jobs, log
from synctool.runtime import Runtime
from synctool.timeutil import age_s, parse_moment
from synctool.validation import Body, Query

if TYPE_CHECKING:
    from synctool.crm.currency import Released
    from synctool.platforms import Platform

SORT_FIELDS = ("created_at", "updated_at", "finished_at", "status", "source", "attempts", "external_id", "amount")
MAX_LIMIT = 500
STATS_WINDOWS = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
STATUSES_WITH_RESOLVED = jobs.STATUSES + ("resolved",)


def _known_source(value: str) -> str:
    """A source filter names a registered platform's role (read when one is given: listing the sync log
    loads no platform)."""
    from synctool.platforms import sources  # here: listing the sync log loads no platform

    known = sources()
    if value not in known:
        expected = " or ".join(repr(s) for s in known)
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
    return value


Source = Annotated[str, AfterValidator(_known_source)]


class SyncQuery(Query):
    """Filters, paging and order of the sync log (spec: GET /api/syncs; `synctool syncs list`)."""

    status: Optional[Literal[STATUSES_WITH_RESOLVED]] = None  # type: ignore[valid-type]
    source: Optional[Source] = None
    date_from: Optional[str] = None
    date_to: Optional[str] = None
    q: Optional[str] = None
    page: int = Field(1, ge=1)
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    sort: Literal[SORT_FIELDS] = "created_at"  # type: ignore[valid-type]
    order: Literal["asc", "desc"] = "desc"

    @field_validator("order", mode="before")
    @classmethod
    def lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @field_validator("date_from", "date_to")
    @classmethod
    def moment(cls, value: Optional[str]) -> Optional[str]:
        if value:
            try:
                parse_moment(value)
            except InvalidInput as exc:
                raise ValueError(f"{exc} ({exc.detail})") from None
        return value or None


class StatsQuery(Query):
    window: Literal[tuple(STATS_WINDOWS)] = "24h"  # type: ignore[valid-type]


class SourceQuery(Query):
    """An optional source filter (spec: POST /api/retry-all?source=)."""

    source: Optional[Source] = None


class ResolveBody(Body):
    """Spec: PATCH /api/syncs/:id/resolve."""

    notes: Optional[str] = None
    resolvedBy: Optional[str] = None


class SyncPage(TypedDict):
    """One page of the sync log, and how many rows and pages match in all."""

    items: Sequence[Mapping[str, object]]
    total: int
    page: int
    limit: int
    pages: int


class Requeued(TypedDict):
    requeued: int
    source: str | None
    refetched: NotRequired[int]
    refetch_errors: NotRequired[list[str]]


def list_syncs(conn: store.Connection, query: SyncQuery | None = None) -> SyncPage:
    """One page of the sync log, filtered; ``total`` counts every matching row."""
    query = query or SyncQuery()
    status, source, date_from, date_to, q = query.status, query.source, query.date_from, query.date_to, query.q
    page, limit, sort, order = query.page, query.limit, query.sort, query.order
    created_to, inclusive = None, True
    if date_to:
        created_to = parse_moment(date_to)
        if len(date_to.strip()) == 10:  # a bare date means the whole of that day
            created_to, inclusive = created_to + timedelta(days=1), False
    total, rows = log.page(
        conn,
        status=status,
        source=source,
        created_from=parse_moment(date_from) if date_from else None,
        created_to=created_to,
        to_inclusive=inclusive,
        q=q,
        sort=sort,
        order=order,
        number=page,
        limit=limit,
    )
    return {"items": rows, "total": total, "page": page, "limit": limit, "pages": (total + limit - 1) // limit}


def _job(conn: store.Connection, job_id: str) -> store.Row:
    """The job with this id, or with this unique prefix of 6 or more characters (tables show 8)."""
    row = jobs.get(conn, job_id)
    if row is None and len(job_id) >= 6:
        found = log.ids_starting(conn, job_id)
        if len(found) > 1:
            raise InvalidInput(f"more than one sync record starts with {job_id}", "give more of the id")
        row = jobs.get(conn, found[0]) if found else None
    if row is None:
        raise NotFound(f"no sync record with id {job_id}")
    return row


def show_sync(conn: store.Connection, job_id: str) -> dict[str, Any]:
    row = _job(conn, job_id)
    job_id = row["id"]
    record = dict(row)
    record["payload"] = json.loads(row["payload"]) if row["payload"] else None
    record["crm_ids"] = json.loads(row["crm_ids"]) if row["crm_ids"] else None
    record["force"] = bool(row["force"])
    record["attempts_log"] = log.attempts(conn, job_id)
    record["crm_gift"] = None
    if row["external_id"]:
        from synctool.crm.gifts import recorded

        written = recorded(conn, row["external_id"])
        record["crm_gift"] = dict(written) if written is not None else None
    record["delivery"] = None
    if row["delivery_id"] is not None:
        from synctool.ops.deliveries import show_delivery

        record["delivery"] = show_delivery(conn, row["delivery_id"])
        record["delivery"].pop("jobs", None)
    return record


class ReleaseBody(Body):
    """POST /api/jobs/:id/release: the amount the bank credited, in the organisation's currency."""

    amount: str

    @field_validator("amount", mode="before")
    @classmethod
    def as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def release(conn: store.Connection, job_id: str, body: ReleaseBody, *, by: str) -> Released:
    """A job held because its money is in another currency (``crm.currency``) is queued again to write it at
    ``amount``, the amount the bank credited, once, through the normal path (``synctool jobs release``)."""
    from synctool.crm import currency

    row = _job(conn, job_id)
    return currency.release(conn, row["id"], body.amount, by=by)


def resolve(conn: store.Connection, job_id: str, body: ResolveBody | None = None) -> dict[str, Any]:
    """Mark a failed record resolved without running it (spec: PATCH /api/syncs/:id/resolve); a record held for
    money in another currency too (nothing is written; ``crm.currency``)."""
    from synctool.crm import currency

    body = body or ResolveBody()
    notes, by = body.notes, body.resolvedBy
    row = _job(conn, job_id)
    job_id = row["id"]
    if row["status"] == "review" and currency.pending_for_job(conn, job_id):
        with store.atomic(conn):
            currency.resolve(conn, job_id, by=by)
            jobs.resolve(conn, job_id, by=by, notes=notes, statuses=("review",))
        return show_sync(conn, job_id)
    if not jobs.resolve(conn, job_id, by=by, notes=notes):
        row = _job(conn, job_id)  # what it is now
        if row["status"] != "failed":
            raise Conflict(f"sync record {job_id} is {row['status']}; only a failed record can be resolved")
        raise Conflict(f"sync record {job_id} was already resolved at {row['resolved_at']} by {row['resolved_by'] or 'someone'}")
    return show_sync(conn, job_id)


def stats(conn: store.Connection, query: StatsQuery | None = None) -> dict[str, Any]:
    """Counters over a window (24h, 7d or 30d), overall and per source (spec: GET /api/stats)."""
    window = (query or StatsQuery()).window
    since = store.iso(store.utcnow() - STATS_WINDOWS[window])
    overall, per_source = log.counts_since(conn, since)
    age = age_s(log.oldest_queued_at(conn))
    age = None if age is None else round(age, 1)
    unresolved = log.open_failures(conn)
    from synctool.ops.refunds import since as refunds_since

    refunds = refunds_since(conn, since)
    refunds.pop("attention")
    return {
        "window": window,
        "since": since,
        **{k: v or 0 for k, v in overall.items()},
        "failed_unresolved": unresolved,
        "oldest_queued_age_s": age,
        "per_source": per_source,
        "refunds": refunds,
    }


JOB_VIEWS = {"all": None, "pending": ("queued", "running"), "failed": ("failed",)}


def job_targets() -> tuple[str, ...]:
    """Every job target: those drain runs (``platforms.drained_targets``), and those the spec leaves to processors
    of their own."""
    from synctool import platforms  # here: listing the sync log loads no platform

    return platforms.drained_targets() + tuple(t for t in jobs.TARGETS if t != "crm")


def list_jobs(
    conn: store.Connection, *, status: str = "all", target: str | None = None, limit: int = 100
) -> Sequence[Mapping[str, object]]:
    """The queue view of the admin interface: all, pending (queued or running) or failed."""
    one_of(status, tuple(JOB_VIEWS), "job status view")
    one_of(target, job_targets(), "target")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
    return log.view(conn, statuses=JOB_VIEWS[status], target=target, limit=limit)


def retry(conn: store.Connection, job_id: str) -> dict[str, Any]:
    """failed -> queued, with a fresh set of attempts (spec: POST /api/admin/sync/retry/:jobId)."""
    row = _job(conn, job_id)
    job_id = row["id"]
    if row["status"] == "failed" and row["delivery_id"] is not None and not row["payload"]:
        found = conn.execute("SELECT body_pruned_at FROM deliveries WHERE id = ?", (row["delivery_id"],)).fetchone()
        if found is not None and found["body_pruned_at"]:  # a resolved failure, older than retention.raw_bodies_days
            raise Conflict(
                f"job {job_id} cannot run again: {log.body_dropped(row['delivery_id'], found['body_pruned_at'])};"
                " queue the item afresh from the platform (its poll, a backfill or a resync)"
            )
    if not jobs.requeue_failed(conn, job_id):
        row = _job(conn, job_id)
        hint = {
            "succeeded": "it already succeeded; retrying would change nothing",
            "skipped": "it was skipped on purpose: " + (row["message"] or "see the sync log"),
            "queued": "it is already queued",
            "running": "it is running now",
            "review": "it waits for a person: who the donor is (synctool donors matches), or the amount the bank "
            "credited for money in another currency (synctool jobs release ID --amount ...)",
            "previewed": "it was previewed; `synctool sync-mode live` runs it",
        }.get(row["status"], "see the sync log")
        raise Conflict(f"job {job_id} is {row['status']}; only a failed job can be retried ({hint})")
    return dict(jobs.get(conn, job_id) or {})


def retry_all(
    conn: store.Connection, query: SourceQuery | None = None, *, fresh: bool = False, rt: Runtime | None = None
) -> Requeued:
    """Every unresolved failed job (of one source, if given) back to the queue. ``fresh`` first re-fetches
    each failed donation's transaction from the platform (POS orders are fetched afresh by every attempt
    anyway; mailing events have nothing to re-fetch); it needs ``rt`` (the Runtime) for the platform's client."""
    source = (query or SourceQuery()).source
    if fresh and rt is None:
        raise ValueError("retry_all(fresh=True) needs the Runtime")  # a caller's bug: the CLI and API pass it
    refetched = refetch(conn, rt, source) if fresh and rt is not None else None
    result: Requeued = {"requeued": jobs.requeue_failed(conn, source=source), "source": source}
    if refetched is not None:
        result["refetched"], result["refetch_errors"] = refetched
    return result


def refetch(conn: store.Connection, rt: Runtime, source: str | None) -> tuple[int, list[str]]:
    """Before ``retry-all --fresh``: each platform in use that can (``Platform.refetch``) puts the current state
    of its failed jobs' items, fetched from the platform, in their payloads; one that cannot be reached is an
    error in the list, and the others are refetched all the same."""
    from synctool import platforms
    from synctool.ops.per_platform import each

    def one(platform: Platform) -> tuple[int, list[str]]:
        failed = log.open_failures_of(conn, platform.role)
        assert platform.refetch is not None  # chosen below for having one
        return platform.refetch(conn, rt, failed) if failed else (0, [])

    chosen = [p for p in platforms.in_use(rt.config) if p.refetch and (not source or p.role == source)]
    found, unreached = each(chosen, one)
    errors = [problem for _, problems in found.values() for problem in problems]
    return sum(done for done, _ in found.values()), errors + [f"{role}: {exc}" for role, exc in unreached.items()]
