"""A job's attempts (``job_attempts``): one row each time a drain takes the job, opened when it is claimed and
closed with how it ended (``succeeded``, ``failed``, ``waiting``, ...; ``abandoned`` when the drain running it
died and another reclaimed it), and how long a failed one waits for the next. ``queue/jobs.py`` calls these
inside the transaction that changes the job; ``queue/log.py`` reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from synctool import store


def open_attempt(conn: store.Connection, job_id: str, number: int, worker: str, now: str) -> None:
    conn.execute(
        "INSERT INTO job_attempts (job_id, number, worker, started_at) VALUES (?, ?, ?, ?)", (job_id, number, worker, now)
    )


def close_attempt(conn: store.Connection, job_id: str, outcome: str, error: str | None, crm_requests: int, now: str) -> None:
    conn.execute(
        "UPDATE job_attempts SET finished_at = ?, outcome = ?, error = ?, crm_requests = ?"
        " WHERE job_id = ? AND finished_at IS NULL",
        (now, outcome, error, crm_requests, job_id),
    )


def abandon_attempt(conn: store.Connection, job_id: str, now: str) -> None:
    """An attempt left open by a drain that died is closed as abandoned."""
    conn.execute(
        "UPDATE job_attempts SET finished_at = ?, outcome = 'abandoned',"
        " error = 'the drain running it stopped before it finished (lease expired)'"
        " WHERE job_id = ? AND finished_at IS NULL",
        (now, job_id),
    )


def retry_delay_s(attempts: int, retry_delay_ms: float, retry_after_s: float | None = None) -> float:
    """How long a job that failed its ``attempts``-th attempt waits for the next: 5 s, 10 s, 20 s ... (the spec's
    5000 ms, doubling per attempt); a remote Retry-After wins if longer."""
    delay = retry_delay_ms / 1000 * (2 ** (attempts - 1))
    return max(delay, retry_after_s) if retry_after_s else delay
