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


class ApiError(PermanentError):
    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(message)


class ApiClient:
    name = "platform"

    def __init__(self, base_url: str, *, headers: dict[str, str] | None = None, auth: Any = None,
                 timeout_s: float = 20.0, max_retries: int = 3, retry_base_s: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep, transport: httpx.BaseTransport | None = None):
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
            data = response.json()
        except ValueError:
            return " ".join(response.text.split())[:200]
        return str(data)[:300]

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
                retry_after = None
                if response.headers.get("retry-after", "").replace(".", "", 1).isdigit():
                    retry_after = float(response.headers["retry-after"])
                error = TransientError(message, retry_after)
            if attempt >= self.max_retries:
                raise error
            delay = self.retry_base_s * (2 ** attempt)
            if error.retry_after is not None:
                delay = max(delay, error.retry_after)
            self.sleep(delay)
            attempt += 1
