"""The small JSON-over-HTTPS client the platform adapters share (the CRM has its own, with the pacer).

Reads are retried on 429 and 5xx and transport errors (``Retry-After`` honoured), a few times; anything
else becomes a TransientError or PermanentError whose message starts with the platform and status.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from synctool.errors import PermanentError, TransientError

RETRYABLE = {408, 429, 500, 502, 503, 504}


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
    delay = base_s * (2 ** attempt)
    return max(delay, retry_after) if retry_after is not None else delay


class ApiError(PermanentError):
    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(message)


class ApiClient:
    """``name`` starts every error message; ``error_text`` turns the platform's JSON error body into text."""

    def __init__(self, base_url: str, *, name: str, error_text: Callable[[Any], str] = str,
                 headers: dict[str, str] | None = None, auth: Any = None,
                 timeout_s: float = 20.0, max_retries: int = 3, retry_base_s: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep, transport: httpx.BaseTransport | None = None):
        self.name = name
        self.error_text = error_text
        self.max_retries = max_retries
        self.retry_base_s = retry_base_s
        self.sleep = sleep
        self.requests_sent = 0
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers={"Accept": "application/json",
                                  "User-Agent": "synctool/0.1", **(headers or {})}, auth=auth, timeout=timeout_s,
                                  transport=transport)

    def close(self) -> None:
        self._http.close()

    def describe_error(self, response: httpx.Response) -> str:
        try:
            return self.error_text(response.json())[:300]
        except (ValueError, AttributeError, TypeError):  # not JSON, or not the documented shape
            return " ".join(response.text.split())[:200]

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        attempt = 0
        while True:
            self.requests_sent += 1
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                error: TransientError = TransientError(f"{self.name} unreachable: {type(exc).__name__}: {exc}")
            else:
                if response.status_code < 400:
                    return response.json() if response.content else {}
                message = f"{self.name} answered {response.status_code}: {self.describe_error(response)}"
                if response.status_code not in RETRYABLE:
                    raise ApiError(response.status_code, message)
                error = TransientError(message, retry_after_seconds(response.headers.get("retry-after")))
            if attempt >= self.max_retries:
                raise error
            self.sleep(backoff_s(self.retry_base_s, attempt, error.retry_after))
            attempt += 1
