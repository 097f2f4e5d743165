"""KindDesk's API, through synctool's HTTP core (retries, errors in synctool's words)."""

from __future__ import annotations

from typing import Any

from synctool.http import ApiClient
from synctool.runtime import Runtime


class KindClient:
    def __init__(self, rt: Runtime) -> None:
        key = rt.secrets.require("KIND_API_KEY", "KindDesk")
        self.api = ApiClient(rt.config.section("kind").base_url, name="KindDesk", headers={"Authorization": f"Bearer {key}"},
                             **rt.api_options("kind"))  # fmt: skip

    def gifts(self, since: str | None = None) -> list[dict[str, Any]]:
        return self.api.request("GET", "/gifts", params={"since": since} if since else None)["gifts"]

    def close(self) -> None:
        self.api.close()
