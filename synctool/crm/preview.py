"""Preview mode's CRM client: every rule runs, every read is real, no write leaves the machine.

``PreviewClient`` is the CRM client with its writes held back: a POST, PATCH or DELETE is recorded in the
job's plan (method, path, the exact body) and answered locally, as LGL would answer it, with a negative id
for what it would create (so nothing can mistake it for a CRM record, and the local database's integer
columns still take it). A later read of such a record (``GET /gifts/-3``) is answered from what was
recorded. Drain runs preview jobs against a copy of the database, so the ledger, the mirror and the links
the rules write are thrown away with the copy.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from synctool.crm.client import CrmClient, QueryParams
from synctool.crm.types import JsonObject
from synctool.store import iso


class PreviewClient(CrmClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ids = itertools.count(1)
        self._made: dict[str, JsonObject] = {}
        self.writes: list[JsonObject] = []  # each {method, path, body}: the plan, shown as JSON

    def start_plan(self) -> None:
        """A new job: its plan starts empty (what earlier jobs of the run made stays known, as it would live)."""
        self.writes = []

    def request(
        self, method: str, path: str, *, params: QueryParams | None = None, json: Mapping[str, object] | None = None
    ) -> JsonObject:
        if method == "GET":
            made = self._made.get(path.removesuffix(".json"))
            return dict(made) if made is not None else super().request(method, path, params=params, json=json)
        self.writes.append({"method": method, "path": path, "body": json})
        if method == "DELETE":
            self._made.pop(path, None)
            return {"api_version": "1.0", "result": "success"}
        now = iso()
        if method == "PATCH":
            found = self._made.setdefault(path, {"id": _id_in(path)})
            found.update(json or {}, updated_at=now)
            return {"api_version": "1.0", **found}
        made = {"id": -next(self._ids), **(json or {}), "created_at": now, "updated_at": now}
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "constituents":  # a record of a constituent: a gift, a membership, ...
            made["constituent_id"] = _id_in(f"/{parts[0]}/{parts[1]}")
            self._made[f"/{parts[2]}/{made['id']}"] = made
        elif len(parts) == 1:  # a top-level record: a constituent
            self._made[f"/{parts[0]}/{made['id']}"] = made
        return {"api_version": "1.0", **made}


def _id_in(path: str) -> int | str:
    last = path.rstrip("/").rsplit("/", 1)[-1]
    try:
        return int(last)
    except ValueError:
        return last


def summary(writes: Sequence[JsonObject]) -> str:
    """The constituent decision in words, from the writes a job would send."""
    for w in writes:
        if w["method"] == "POST" and w["path"] == "/constituents":
            body = w["body"] or {}
            emails = [e.get("address") for e in body.get("email_addresses") or [] if isinstance(e, dict)]
            name = (
                " ".join(str(body.get(k)) for k in ("first_name", "last_name") if body.get(k))
                or body.get("org_name")
                or "a constituent"
            )
            return f"would create {name}" + (f" <{emails[0]}>" if emails else "")
    for w in writes:
        matched = re.match(r"^/constituents/(\d+)/", w["path"])
        if matched:
            return f"matched #{matched.group(1)}"
    return "no constituent change"


def start_plan(client: CrmClient | None) -> None:
    """Preview mode: the next job's plan starts empty (``client`` is the drain's CRM client, when it has one)."""
    if isinstance(client, PreviewClient):
        client.start_plan()


def plan(client: CrmClient | None) -> list[JsonObject]:
    """Preview mode: the writes the current job would have sent to the CRM."""
    return list(client.writes) if isinstance(client, PreviewClient) else []
