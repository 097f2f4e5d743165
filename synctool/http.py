"""The one HTTP client core every outside system is reached through (the CRM's client adds its pacer).

- Retries: only the ``retryable`` statuses (429 and 5xx by default) and transport errors, at most
  ``max_retries`` times, after ``retry_base_s`` doubling, or the server's ``Retry-After`` when longer.
- Errors: a refusal (another 4xx) is a ``RemoteError`` carrying the status; what is worth retrying later is
  a ``TransientError``; each message starts with the platform's name and the status.
- Uncertain writes (``uncertain_writes``): a POST whose outcome is unknown (a read timeout, a dropped
  connection, a 5xx after sending) is never resent here; ``UncertainWrite`` goes back to the caller, which
  first looks for what it would have created. A connection that was never made is safe to retry.
- ``before_send`` runs before every attempt (the CRM's pacer and request counting).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from synctool import __version__
from synctool.errors import RemoteError, TransientError, UncertainWrite

RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})
NEVER_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` header (seconds or an HTTP date) in seconds, or None."""
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
        except (TypeError, ValueError):
            return None


def backoff_s(base_s: float, attempt: int, retry_after: float | None) -> float:
    """The wait before retry number ``attempt + 1``: base doubling, or the server's Retry-After if longer."""
    delay = base_s * (2**attempt)
    return max(delay, retry_after) if retry_after is not None else delay


def json_error_text(body: Any) -> str:
    return str(body)


class ApiClient:
    """``name`` starts every error message; ``describe`` turns an error response into text (by default the
    JSON body through ``error_text``, else the body's first words)."""

    def __init__(
        self,
        base_url: str,
        *,
        name: str,
        error_text: Callable[[Any], str] = json_error_text,
        describe: Callable[[httpx.Response], str] | None = None,
        headers: dict[str, str] | None = None,
        auth: Any = None,
        timeout_s: float = 20.0,
        max_retries: int = 3,
        retry_base_s: float = 0.5,
        retryable: frozenset[int] = RETRYABLE,
        uncertain_writes: bool = False,
        before_send: Callable[[], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ):
        self.name = name
        self.error_text = error_text
        self.describe = describe or self.describe_error
        self.max_retries = max_retries
        self.retry_base_s = retry_base_s
        self.retryable = retryable
        self.uncertain_writes = uncertain_writes
        self.before_send = before_send
        self.sleep = sleep
        self.requests_sent = 0
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Accept": "application/json", "User-Agent": f"synctool/{__version__}", **(headers or {})},
            auth=auth,
            timeout=timeout_s,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def describe_error(self, response: httpx.Response) -> str:
        try:
            return self.error_text(response.json())[:300]
        except (ValueError, AttributeError, TypeError):  # not JSON, or not the documented shape
            return " ".join(response.text.split())[:200]

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        attempt = 0
        write = self.uncertain_writes and method == "POST"
        while True:
            if self.before_send is not None:
                self.before_send()
            self.requests_sent += 1
            try:
                response = self._http.request(method, path, **kwargs)
            except NEVER_SENT as exc:
                error = TransientError(f"{self.name} unreachable: {type(exc).__name__}: {exc}")
            except httpx.TransportError as exc:  # the request may have reached the platform
                message = f"no answer from {self.name} ({type(exc).__name__}) for {method} {path}"
                if write:
                    raise UncertainWrite(message) from None
                error = TransientError(message)
            else:
                if response.status_code < 400:
                    return response.json() if response.content else {}
                detail = self.describe(response)
                message = f"{self.name} answered {response.status_code}" + (f": {detail}" if detail else "")
                if response.status_code not in self.retryable:
                    raise RemoteError(response.status_code, message)
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
                if write and response.status_code != 429:  # a 429 was refused before any work was done
                    raise UncertainWrite(message, retry_after, status=response.status_code)
                error = TransientError(message, retry_after, status=response.status_code)
            if attempt >= self.max_retries:
                raise error
            self.sleep(backoff_s(self.retry_base_s, attempt, error.retry_after))
            attempt += 1
