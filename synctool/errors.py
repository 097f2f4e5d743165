"""The few exceptions synctool raises, named for what went wrong.

    SynctoolError                 base; its message is safe to show an operator (never a secret)
    ├── ConfigError               a bad or missing configuration value (CLI exit code 2)
    ├── InvalidInput              bad arguments or payload from a person or a platform (4xx / usage)
    │   └── InvalidSignature      a webhook whose signature does not verify (401)
    ├── NotFound                  an unknown id (404 / exit 1)
    ├── Conflict                  a state rule refused the operation (e.g. retrying a succeeded job)
    ├── StoreUnavailable          the database could not commit (503, the platform retries)
    └── SyncError                 a job's work failed
        ├── TransientError        worth retrying later (timeouts, 429, 5xx, CRM down)
        └── PermanentError        retrying will not help until someone fixes the cause
"""

from __future__ import annotations


class SynctoolError(Exception):
    """Base class. ``str(error)`` is the operator-facing message."""


class ConfigError(SynctoolError):
    def __init__(self, key: str, source: str, problem: str):
        self.key = key
        self.source = source
        self.problem = problem
        super().__init__(f"{key} ({source}): {problem}")


class InvalidInput(SynctoolError):
    """Input that cannot be accepted as given; ``detail`` says why."""

    def __init__(self, message: str, detail: str = ""):
        self.detail = detail
        super().__init__(message)


class InvalidSignature(InvalidInput):
    pass


class PayloadTooLarge(InvalidInput):
    pass


class NotFound(SynctoolError):
    pass


class Conflict(SynctoolError):
    pass


class StoreUnavailable(SynctoolError):
    pass


class SyncError(SynctoolError):
    pass


class TransientError(SyncError):
    """Try again later. ``retry_after`` (seconds) is a hint from the remote side, if it gave one."""

    def __init__(self, message: str, retry_after: float | None = None):
        self.retry_after = retry_after
        super().__init__(message)


class PermanentError(SyncError):
    pass


class Skip(Exception):
    """Raised by a handler to end its job as ``skipped`` with a reason (not an error)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)
