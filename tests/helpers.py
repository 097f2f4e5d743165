"""Starting synctool's own servers as real processes on 127.0.0.1 for tests that need a real socket."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx


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
    proc = subprocess.Popen([sys.executable, "-m", "synctool.cli.main", "serve", "--host", "127.0.0.1",
                             "--port", str(port)], env={**os.environ, **(env or {})})
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
