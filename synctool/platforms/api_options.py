"""What the platforms' API clients share: the options each is built with (``Runtime.api_options(role)``: its
role's transport and the ``platform_api`` timeout and retries), passed on to ``synctool.http.ApiClient``."""

from __future__ import annotations

from typing import TypedDict

import httpx


class ApiOptions(TypedDict, total=False):
    """``ApiClient``'s options a platform's client passes on unchanged (``**rt.api_options(role)``)."""

    transport: httpx.BaseTransport | None
    timeout_s: float
    max_retries: int
    retry_base_s: float
