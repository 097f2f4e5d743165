"""What the web benches share: a free loopback port, a uvicorn process serving an app from a checkout (started
and stopped), one timed first request to a fresh one, and a percentile. No synctool import: a bench may time
another checkout's code (``bench/overview.py``)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(target: list[str], port: int, env: dict[str, str], *, cwd: Path = ROOT) -> subprocess.Popen:
    """``uvicorn TARGET`` on loopback, one process, quiet (as ``serve`` runs it), once it takes connections."""
    cmd = [sys.executable, "-m", "uvicorn", *target, "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--log-level", "warning", "--no-access-log"], env=env, cwd=cwd)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"server on {port} did not start")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait()


def first_request(
    target: list[str], port: int, env: dict[str, str], path: str, cookies: dict[str, str], *, cwd: Path = ROOT
) -> float:
    """A fresh server process, then one request, timed (connection included) and checked to answer 200: ms."""
    proc = start(target, port, env, cwd=cwd)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120, cookies=cookies) as client:
            started = time.perf_counter()
            answer = client.get(path)
            answer.read()
            took = (time.perf_counter() - started) * 1000
            assert answer.status_code == 200, f"{path}: {answer.status_code}"
            return took
    finally:
        stop(proc)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]
