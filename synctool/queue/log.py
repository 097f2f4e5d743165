"""The sync log, read: every query on the ``jobs`` table that the operations need, in one place beside
``queue/jobs.py`` (which owns every change to a job). Nothing outside ``queue/`` writes SQL on ``jobs``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

from synctool import store
from synctool.queue.shapes import STATUSES
from synctool.timeutil import age_s

LIST_COLUMNS = (
    "id, source, target, entity_type, entity_id, external_id, status, attempts, email, name, amount,"
    " message, last_error, crm_constituent_id, crm_gift_id, created_at, updated_at, finished_at,"
    " resolved_at, resolved_by"
)
#: the one meaning of an open failure: failed, and no person has resolved it
OPEN_FAILURE = "status = 'failed' AND resolved_at IS NULL"
#: a job that would make (or made) a money item's gift, not one of its refunds
GIFT_JOB = "entity_type NOT LIKE '%refund'"
#: a job that will still read its delivery's raw body: one to run or running, an open failure (a retry runs it
#: again), one held for review or previewed (a decision, or live mode, runs it)
NEEDS_BODY = f"status IN ('queued', 'running', 'review', 'previewed') OR ({OPEN_FAILURE})"
#: the deliveries whose raw body a job still needs: ``id NOT IN (...)`` runs it once, not once per delivery
NEEDED_DELIVERIES = f"SELECT delivery_id FROM jobs WHERE delivery_id IS NOT NULL AND ({NEEDS_BODY})"


def body_dropped(delivery_id: int, pruned_at: str) -> str:
    """What a reader of a delivery whose raw body retention dropped is told (``synctool prune``)."""
    return f"the raw body of delivery {delivery_id} was dropped by retention on {pruned_at[:10]} (retention.raw_bodies_days)"


def page(
    conn: store.Connection,
    *,
    status: str | None = None,
    source: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    to_inclusive: bool = True,
    q: str | None = None,
    sort: str = "created_at",
    order: str = "desc",
    number: int = 1,
    limit: int = 50,
) -> tuple[int, list[dict[str, object]]]:
    """One page of the log, filtered, and how many rows match in all. ``sort`` and ``order`` are checked by
    the caller against its own lists (they are written into the SQL)."""
    where = store.Where()
    if status == "resolved":
        where.add("resolved_at IS NOT NULL")
    elif status:
        where.add("status = ?", status)
    if source:
        where.add("source = ?", source)
    if created_from:
        where.add("created_at >= ?", store.iso(created_from))
    if created_to:
        where.add("created_at <= ?" if to_inclusive else "created_at < ?", store.iso(created_to))
    if q:
        q = "".join(ch for ch in q if ch >= " " and ch != "\x7f").strip()  # a NUL ends SQLite's full-text query in an error
        if len(q) >= 3:  # the trigram index answers substrings of three characters or more
            where.add(*store.dialect.full_text("jobs_search", q))
        else:
            like = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            where.add(  # whatever the case, on either engine (PostgreSQL's LIKE minds it)
                "(lower(external_id) LIKE ? ESCAPE '\\' OR lower(email) LIKE ? ESCAPE '\\' OR lower(name) LIKE ? ESCAPE '\\'"
                " OR lower(last_error) LIKE ? ESCAPE '\\')",
                *[like.lower()] * 4,
            )
    if q or created_from or created_to or status == "resolved":
        total = conn.execute(f"SELECT count(*) FROM jobs {where}", where.params).fetchone()[0]
    else:  # by status and source alone: the counters the triggers keep (job_counts), not a million rows counted
        total = int(conn.execute(f"SELECT sum(n) FROM job_counts {where}", where.params).fetchone()[0] or 0)
    nulls = "FIRST" if order.lower() == "asc" else "LAST"
    rows = conn.execute(
        # where NULLs sort is said (SQLite's way: first ascending, last descending; PostgreSQL's is the other)
        f"SELECT {LIST_COLUMNS} FROM jobs {where} ORDER BY {sort} {order.upper()} NULLS {nulls},"
        f" {store.dialect.arrival()} {order.upper()} LIMIT ? OFFSET ?",
        (*where.params, limit, (number - 1) * limit),
    ).fetchall()
    return total, [dict(r) for r in rows]


def get(conn: store.Connection, job_id: str) -> store.Row | None:
    """A job's whole row (``jobs.get`` too, where the changes are read beside it)."""
    return conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()


def next_due_in(conn: store.Connection, targets: tuple[str, ...] = ("crm",)) -> float | None:
    """Seconds until the next queued job of ``targets`` is due (0 if one is due now), None if none is queued."""
    row = conn.execute(
        f"SELECT min(run_after) FROM jobs WHERE target IN ({','.join('?' * len(targets)) or 'NULL'}) AND status = 'queued'",
        targets,
    ).fetchone()
    if row[0] is None:
        return None
    return max(0.0, -(age_s(row[0]) or 0.0))


def ids_starting(conn: store.Connection, prefix: str, limit: int = 2) -> list[str]:
    like = prefix.replace("%", "").replace("_", "").lower() + "%"
    return [r[0] for r in conn.execute("SELECT id FROM jobs WHERE lower(id) LIKE ? LIMIT ?", (like, limit))]


def _window(conn: store.Connection, since: str) -> list[store.Row]:
    """The jobs created since ``since``, counted per source, status and origin (``polled``): the whole hours from
    ``job_counts`` (kept by triggers as jobs change), the first, partial hour from the jobs themselves, so the
    cost follows the window's hours, not the log's rows."""
    start = datetime.strptime(since, store.TIME_FORMAT).replace(tzinfo=UTC)
    next_hour = store.iso(start.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1))
    return conn.execute(
        "SELECT source, status, polled, sum(n) AS n FROM (SELECT source, status, polled, n FROM job_counts WHERE hour >= ?"
        f" UNION ALL SELECT source, status, {store.JOB_POLLED.format('jobs')}, 1 FROM jobs WHERE created_at >= ? AND created_at < ?)"
        " AS w GROUP BY source, status, polled",
        (next_hour[:13], since, next_hour),
    ).fetchall()


def counts_since(conn: store.Connection, since: str) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """Jobs created since ``since``: the total and one count per status, overall and per source."""
    empty = {"total": 0, **{s: 0 for s in STATUSES}}
    overall, per_source = dict(empty), dict[str, dict[str, int]]()
    for row in _window(conn, since):
        counts = per_source.setdefault(row["source"], dict(empty))
        for found in (overall, counts):
            found["total"] += row["n"]
            found[row["status"]] += row["n"]
    return overall, dict(sorted(per_source.items()))


def oldest_queued_at(conn: store.Connection) -> str | None:
    return conn.execute("SELECT min(created_at) FROM jobs WHERE status = 'queued'").fetchone()[0]


def due(conn: store.Connection, now: str) -> int:
    """How many queued jobs are due at ``now`` (`orgs list`)."""
    return conn.execute("SELECT count(*) FROM jobs WHERE status = 'queued' AND run_after <= ?", (now,)).fetchone()[0]


def open_failures(conn: store.Connection) -> int:
    return conn.execute(f"SELECT count(*) FROM jobs WHERE {OPEN_FAILURE}").fetchone()[0]


def open_failures_of(conn: store.Connection, source: str) -> list[store.Row]:
    return conn.execute(
        f"SELECT id, entity_type, entity_id, payload FROM jobs WHERE {OPEN_FAILURE} AND source = ?", (source,)
    ).fetchall()


def backlog(conn: store.Connection, targets: tuple[str, ...]) -> tuple[int, str | None]:
    """How many jobs of these targets are queued, and the earliest ``run_after`` among them."""
    marks = ",".join("?" * len(targets)) or "NULL"  # an empty IN () is SQLite's alone
    row = conn.execute(
        f"SELECT count(*), min(run_after) FROM jobs WHERE status = 'queued' AND target IN ({marks})", targets
    ).fetchone()
    return row[0], row[1]


def view(conn: store.Connection, *, statuses: tuple[str, ...] | None, target: str | None, limit: int) -> list[dict[str, object]]:
    """The queue as the admin screen lists it: these statuses (all when None), newest first."""
    where = store.Where()
    if statuses:
        where.add(f"status IN ({','.join('?' * len(statuses))})", *statuses)
    if target:
        where.add("target = ?", target)
    return [
        dict(r)
        for r in conn.execute(
            "SELECT id, target, entity_type, entity_id, status, attempts, last_error, run_after, created_at, updated_at"
            f" FROM jobs {where} ORDER BY created_at DESC LIMIT ?",
            (*where.params, limit),
        )
    ]


def gift_job(
    conn: store.Connection,
    external_id: str,
    *,
    entity_type: str | None = None,
    exclude: str | None = None,
    unfinished: bool = False,
    statuses: tuple[str, ...] = (),
) -> store.Row | None:
    """The newest job that would make (or made) the gift ``external_id`` (its refunds' jobs are not), or None.
    ``entity_type`` narrows it; ``exclude`` leaves one job out (the asking job itself); ``unfinished`` keeps
    the jobs still to run or open failures; ``statuses`` keeps those."""
    where = store.Where().add("external_id = ?", external_id)
    if entity_type:
        where.add("entity_type = ?", entity_type)
    else:
        where.add(GIFT_JOB)
    if exclude:
        where.add("id != ?", exclude)
    if unfinished:
        where.add(f"(status IN ('queued', 'running') OR ({OPEN_FAILURE}))")
    if statuses:
        where.add(f"status IN ({','.join('?' * len(statuses))})", *statuses)
    return conn.execute(
        f"SELECT id, status, message, last_error, resolved_at FROM jobs {where} ORDER BY created_at DESC LIMIT 1", where.params
    ).fetchone()


def has_entity_job(conn: store.Connection, source: str, entity_type: str, entity_id: str, *, unfinished: bool = False) -> bool:
    """Whether a job (an unfinished one, with ``unfinished``: still to run, or an open failure) exists for
    this platform item."""
    sql = "SELECT 1 FROM jobs WHERE source = ? AND entity_type = ? AND entity_id = ?"
    if unfinished:
        sql += f" AND (status IN ('queued', 'running') OR ({OPEN_FAILURE}))"
    return conn.execute(sql + " LIMIT 1", (source, entity_type, entity_id)).fetchone() is not None


def has_job(conn: store.Connection, external_id: str) -> bool:
    """Whether any job (a gift's or one of its refunds') names ``external_id``."""
    return conn.execute("SELECT 1 FROM jobs WHERE external_id = ? LIMIT 1", (external_id,)).fetchone() is not None


def for_delivery(conn: store.Connection, delivery_ids: list[int]) -> dict[int, list[dict[str, object]]]:
    """The jobs each delivery made: delivery id -> ``[{id, entity_type, entity_id, status}]``."""
    found: dict[int, list[dict[str, object]]] = {}
    for i in range(0, len(delivery_ids), 500):
        chunk = delivery_ids[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(
            f"SELECT delivery_id, id, entity_type, entity_id, status FROM jobs WHERE delivery_id IN ({marks})"
            f" ORDER BY {store.dialect.arrival()}",
            chunk,
        ):
            found.setdefault(r["delivery_id"], []).append({k: r[k] for k in ("id", "entity_type", "entity_id", "status")})
    return found


def previewed_count(conn: store.Connection) -> int:
    return conn.execute("SELECT count(*) FROM jobs WHERE status = 'previewed'").fetchone()[0]


def previewed(conn: store.Connection, limit: int) -> list[store.Row]:
    return conn.execute(
        "SELECT id, source, entity_type, entity_id, external_id, email, name, plan, updated_at FROM jobs"
        " WHERE status = 'previewed' ORDER BY created_at DESC LIMIT ?",
        (limit,),
    ).fetchall()


def by_ids(conn: store.Connection, job_ids: list[str]) -> list[store.Row]:
    marks = ",".join("?" * len(job_ids)) or "NULL"
    return conn.execute(
        f"SELECT id, source, entity_type, entity_id, external_id, email, name, status, last_error FROM jobs WHERE id IN ({marks})",
        job_ids,
    ).fetchall()


def summary_per_source(conn: store.Connection, since: str) -> dict[str, dict[str, Any]]:
    """Per source since ``since``: succeeded, skipped, failed, pending, and recovered by the backup poll."""
    found: dict[str, dict[str, Any]] = {}
    for row in _window(conn, since):
        counts = found.setdefault(
            row["source"],
            {"source": row["source"], "succeeded": 0, "skipped": 0, "failed": 0, "pending": 0, "recovered_by_poll": 0},
        )
        status = "pending" if row["status"] in ("queued", "running") else row["status"]
        if status in counts:
            counts[status] += row["n"]
        if row["status"] == "succeeded" and row["polled"]:
            counts["recovered_by_poll"] += row["n"]
    return dict(sorted(found.items()))


def open_failure_rows(conn: store.Connection, limit: int) -> list[dict[str, object]]:
    """The open failures, newest first."""
    return [
        dict(r)
        for r in conn.execute(
            "SELECT id, source, entity_type, entity_id, external_id, last_error, finished_at FROM jobs"
            f" WHERE {OPEN_FAILURE} ORDER BY finished_at DESC NULLS LAST LIMIT ?",
            (limit,),
        )
    ]


def succeeded_since(conn: store.Connection, entity_type: str, since: str, limit: int) -> list[dict[str, object]]:
    return [
        dict(r)
        for r in conn.execute(
            "SELECT id, source, entity_id, message, created_at FROM jobs WHERE entity_type = ?"
            " AND status = 'succeeded' AND created_at >= ? ORDER BY created_at DESC LIMIT ?",
            (entity_type, since, limit),
        )
    ]


def attempts(conn: store.Connection, job_id: str) -> list[dict[str, object]]:
    """A job's attempts, in order: when, by which worker, how each ended, the CRM requests it spent."""
    return [
        dict(a)
        for a in conn.execute(
            "SELECT number, worker, started_at, finished_at, outcome, error, crm_requests FROM job_attempts WHERE job_id = ? ORDER BY id",
            (job_id,),
        )
    ]


def crm_requests_since(conn: store.Connection, since: str) -> int:
    """The CRM requests the jobs' attempts spent since ``since``."""
    return conn.execute("SELECT coalesce(sum(crm_requests), 0) FROM job_attempts WHERE started_at >= ?", (since,)).fetchone()[0]


def clear(conn: store.Connection) -> dict[str, int]:
    """Delete every job and its attempts (the search index and the counters follow; ``dev reset-test-data``, sandbox only); the counts."""
    with store.atomic(conn):
        counts = {table: conn.execute(f"DELETE FROM {table}").rowcount for table in ("job_attempts", "jobs")}
    return counts


def gifts_written_between(conn: store.Connection, start: str, end: str) -> int:
    """How many jobs created in [start, end) wrote a CRM gift (``year-end check`` sizes its search with it)."""
    return int(
        conn.execute(
            "SELECT count(*) FROM jobs WHERE crm_gift_id IS NOT NULL AND created_at >= ? AND created_at < ?", (start, end)
        ).fetchone()[0]
    )


class CampaignGifts(TypedDict):
    """A campaign's gifts in a window (``gifts_by_campaign``)."""

    campaign_id: str
    gifts: int
    last_gift_at: str | None


def gifts_by_campaign(conn: store.Connection, source: str, since: str) -> list[CampaignGifts]:
    """A source's gift jobs (``transaction``) created since ``since``, per campaign named in their payload or
    delivery: ``campaign_id``, ``gifts`` and ``last_gift_at``, the latest first (the overview's campaigns with
    no mapping). The gifts of the whole hours come from ``campaign_hours`` (a gift counts in the hour of its latest
    job), those of the first, partial hour from ``job_campaigns`` (both kept by triggers as jobs change), so the
    cost follows the window's hours and campaigns, not its rows; the last gift is read in its campaign's last hour."""
    start = datetime.strptime(since, store.TIME_FORMAT).replace(tzinfo=UTC)
    next_hour = store.iso(start.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1))
    rows = conn.execute(
        "SELECT campaign_id, gifts, (SELECT max(created_at) FROM job_campaigns j WHERE j.source = :source"
        " AND j.campaign_id = c.campaign_id AND j.created_at >= CASE WHEN top > :since THEN top ELSE :since END"
        # before the hour after ``top`` (``2026-05-01T10`` -> every time of 10:MM sorts before ``2026-05-01T10:60``)
        " AND j.created_at < (top || ':60')) AS last_gift_at"
        " FROM (SELECT campaign_id, sum(gifts) AS gifts, max(CASE WHEN gifts > 0 THEN hour END) AS top FROM ("
        "   SELECT campaign_id, sum(gifts) AS gifts, hour FROM campaign_hours WHERE source = :source AND hour >= :hour"
        "   GROUP BY campaign_id, hour"  # an hour's count kept in several rows (PostgreSQL's shards) as one
        "   UNION ALL SELECT campaign_id, count(DISTINCT entity_id), substr(:since, 1, 13) FROM job_campaigns j"
        "   WHERE source = :source AND created_at >= :since AND created_at < :next AND NOT EXISTS (SELECT 1 FROM"
        "   job_campaigns l WHERE l.source = j.source AND l.campaign_id = j.campaign_id AND l.entity_id = j.entity_id"
        "   AND l.created_at >= :next) GROUP BY campaign_id"
        " ) AS h GROUP BY campaign_id HAVING sum(gifts) > 0) c ORDER BY last_gift_at DESC NULLS LAST",
        {"source": source, "since": since, "next": next_hour, "hour": next_hour[:13]},
    ).fetchall()
    return [{"campaign_id": str(r["campaign_id"]), "gifts": int(r["gifts"]), "last_gift_at": r["last_gift_at"]} for r in rows]
