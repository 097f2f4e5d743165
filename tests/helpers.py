"""Test helpers: synctool's servers as real processes on 127.0.0.1, a mock transport, and the check that
requests to the CRM are what LGL documents."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from synctool.runtime import Runtime

#: the running test's environment (a dict) and transports, set by conftest's ``env`` fixture
CURRENT: dict[str, Any] = {}


def runtime(**kwargs: Any) -> Runtime:
    """A Runtime for the running test: its environment and the transports to its fakes."""
    from synctool import platforms

    platforms.registered()  # as every command does: the platforms' config sections before the config
    return Runtime.from_environ(None, CURRENT["env"], transports=CURRENT["transports"], **kwargs)


def database_text(conn: Any) -> str:
    """Everything the database behind ``conn`` holds, as text (a secret's absence is looked for in it): SQLite's
    own dump (``iterdump``, the schema and every row, the search index's too); on PostgreSQL every row of every
    table of its schema."""
    if hasattr(conn, "iterdump"):
        return "\n".join(conn.iterdump())
    from synctool import store

    return "\n".join(
        f"{table}: {tuple(row)!r}"
        for table in store.dialect.table_names(conn)
        for row in conn.execute(f'SELECT * FROM "{table}"')
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=0.5)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise TimeoutError(url)


def start_receiver(port: int, env: dict | None = None) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "synctool.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env={**os.environ, **CURRENT["env"], **(env or {})},
    )
    wait_for(f"http://127.0.0.1:{port}/health")
    return proc


def mock_transport(responses: list) -> httpx.MockTransport:
    """A transport answering each request with the next of ``responses`` (an exception is raised);
    ``transport.seen`` lists the requests."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        item = responses.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    transport = httpx.MockTransport(handler)
    transport.seen = seen  # type: ignore[attr-defined]
    return transport


def validate_against_openapi(requests: list[dict]) -> None:
    """Every request is a documented LGL path, method, query parameter and body field (lgl-openapi.json)."""
    spec = json.loads((Path(__file__).parent / "data/lgl-openapi.json").read_text())
    templates = []
    for path, ops in spec["paths"].items():
        pattern = "^/api/v1" + re.sub(r"\{[^}]+\}", r"[^/]+", path) + "$"
        templates.append((re.compile(pattern), ops))
    for req in requests:
        ops = next((ops for rx, ops in templates if rx.match(req["path"])), None)
        assert ops is not None, f"undocumented path {req['path']}"
        op = ops.get(req["method"].lower())
        assert op is not None, f"undocumented {req['method']} {req['path']}"
        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
        for name, _ in req["query"]:
            assert name in declared, f"{req['method']} {req['path']}: undocumented query parameter {name}"
        if isinstance(req["body"], dict):
            ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
            props = set(spec["components"]["schemas"][ref].get("properties", {}))
            assert set(req["body"]) <= props, f"{req['method']} {req['path']}: not in {ref}: {set(req['body']) - props}"
