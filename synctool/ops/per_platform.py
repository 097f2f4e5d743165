"""One operation run for each platform in use, where one platform's failure stops no other.

A platform that fails (no credentials, connection refused, a timeout, 401, 5xx, an answer synctool cannot
read) is reported, not raised: every other platform's part runs to the end. Operations put the failures in
their result as ``failed`` (role -> the error in words), which the CLI turns into one line per platform and
exit 1 (``console.exit_if_failed``), and the admin API answers with ``"ok": false``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from synctool.errors import SyncError, SynctoolError
from synctool.platforms import Platform

T = TypeVar("T")
logger = logging.getLogger("synctool")


def each(chosen: Iterable[Platform], run: Callable[[Platform], T]) -> tuple[dict[str, T], dict[str, SynctoolError]]:
    """``run`` for each platform: (role -> what it returned, role -> the error that stopped it)."""
    results: dict[str, T] = {}
    failed: dict[str, SynctoolError] = {}
    for platform in chosen:
        try:
            results[platform.role] = run(platform)
        except SynctoolError as exc:
            failed[platform.role] = exc
        except Exception as exc:  # a platform's unexpected answer or bug must not stop the others
            logger.exception("%s (%s) failed", platform.role, platform.name)
            failed[platform.role] = SyncError(f"unexpected error ({type(exc).__name__}: {exc}); the log has the details")
    return results, failed


def words(failed: dict[str, SynctoolError]) -> dict[str, str]:
    """role -> the error in words, for a result."""
    return {role: str(exc) for role, exc in failed.items()}


def by_source(
    chosen: Iterable[Platform], results: dict[str, dict[str, Any]], failed: dict[str, SynctoolError]
) -> dict[str, dict[str, Any]]:
    """Each source's own ``status`` (ok / failed) and ``error`` beside what it returned, in the platforms' order."""
    rows: dict[str, dict[str, Any]] = {}
    for role in (p.role for p in chosen):
        if role in failed:
            rows[role] = {"status": "failed", "error": str(failed[role])}
        elif role in results:
            rows[role] = {"status": "ok", "error": None, **results[role]}
    return rows


def requests_by_source(
    chosen: Iterable[Platform], requests: dict[str, int], failed: dict[str, SynctoolError]
) -> dict[str, dict[str, Any]]:
    """``by_source`` for an operation whose per-source result is the platform requests it spent."""
    return by_source(chosen, {role: {"requests": spent} for role, spent in requests.items()}, failed)
