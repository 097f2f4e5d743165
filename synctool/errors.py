"""The few exceptions synctool raises, named for what went wrong, and what each becomes at the edges.

    SynctoolError                 base; its message is safe to show an operator (never a secret)
    ├── ConfigError               a bad or missing configuration value           exit 2 / 503
    ├── InvalidInput              bad arguments, body or payload                 exit 2 / 422 (webhooks: 400)
    │   ├── InvalidSignature      a webhook or token whose signature fails       401
    │   └── PayloadTooLarge       a webhook over the size limit                  413
    ├── NotFound                  an unknown id                                  exit 3 / 404
    ├── Conflict                  a state rule refused the operation             exit 4 / 409
    ├── StoreUnavailable          the database could not commit                  exit 5 / 503 (the platform retries)
    ├── DatabaseTooNew            a newer synctool migrated the database         exit 2 / 503
    └── SyncError                 a job's work failed                            exit 1 / 502
        ├── TransientError        worth retrying later: timeouts, 429, 5xx, a platform down (``status``,
        │   │                     ``retry_after`` when the platform gave them); the job retries
        │   └── UncertainWrite    a write whose outcome is unknown: look before writing again
        └── PermanentError        retrying will not help until someone fixes the cause; the job fails
            └── RemoteError       a platform refused the request (a 4xx, ``status``)

``exit_code`` and ``http_status`` are the one place these become exit codes and HTTP statuses.
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


def one_of(value: object, allowed, what: str) -> None:
    """InvalidInput listing the choices unless ``value`` is None or one of ``allowed``."""
    if value is not None and value not in allowed:
        raise InvalidInput(f"unknown {what} {value!r}", "one of: " + ", ".join(map(str, allowed)))


class InvalidSignature(InvalidInput):
    pass


class PayloadTooLarge(InvalidInput):
    pass


class NotFound(SynctoolError):
    """An unknown id; ``detail`` says where to find the known ones."""

    def __init__(self, message: str, detail: str = ""):
        self.detail = detail
        super().__init__(message)


class Conflict(SynctoolError):
    pass


class StoreUnavailable(SynctoolError):
    pass


class DatabaseTooNew(SynctoolError):
    """The database holds a migration this synctool does not know: a newer version wrote it (``store``)."""


class SyncError(SynctoolError):
    pass


class TransientError(SyncError):
    """Try again later. ``retry_after`` (seconds) is a hint from the remote side, if it gave one."""

    def __init__(self, message: str, retry_after: float | None = None, *, status: int | None = None):
        self.retry_after = retry_after
        self.status = status
        super().__init__(message)


class UncertainWrite(TransientError):
    """A write that may or may not have happened (a timeout, a dropped connection, a 5xx after sending);
    look for what it would have created before writing again."""


class Wait(TransientError):
    """Not a failure: the job cannot go on yet (another job is writing the same gift; a write whose answer
    was lost is not yet due to be confirmed). It is queued again ``retry_after`` seconds later, and the
    attempt does not count against its retries."""


class PermanentError(SyncError):
    pass


class RemoteError(PermanentError):
    """A platform refused the request; ``status`` is its HTTP status (a 4xx other than 429)."""

    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(message)


EXIT_CODES: list[tuple[type[SynctoolError], int]] = [
    (ConfigError, 2),
    (InvalidInput, 2),
    (DatabaseTooNew, 2),
    (NotFound, 3),
    (Conflict, 4),
    (StoreUnavailable, 5),
    (SynctoolError, 1),
]
HTTP_STATUSES: list[tuple[type[SynctoolError], int]] = [
    (PayloadTooLarge, 413),
    (InvalidSignature, 401),
    (InvalidInput, 422),
    (NotFound, 404),
    (Conflict, 409),
    (ConfigError, 503),
    (StoreUnavailable, 503),
    (DatabaseTooNew, 503),
    (SynctoolError, 502),
]


def exit_code(error: SynctoolError) -> int:
    return next(code for kind, code in EXIT_CODES if isinstance(error, kind))


def http_status(error: SynctoolError, *, webhook: bool = False) -> int:
    """The admin API's status for an error; a webhook's bad payload is a 400 (what platforms expect)."""
    if webhook and type(error) is InvalidInput:
        return 400
    return next(code for kind, code in HTTP_STATUSES if isinstance(error, kind))


class Skip(Exception):
    """Raised by a handler to end its job as ``skipped`` with a reason (not an error)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class NeedsReview(Exception):
    """Raised while a job runs when a person must decide: its donor may be a known constituent under a new e-mail
    (``donors.matching``), or its money is in another currency than the organisation's (``crm.currency``). The
    job waits as ``review``, neither failed nor retried."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)
