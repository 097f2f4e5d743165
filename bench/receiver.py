"""Receiver throughput vs a bare Starlette app, side by side in one run.

Both run under uvicorn with the same settings (one process, --log-level warning, --no-access-log),
driven by the same keep-alive HTTP/1.1 client with CONCURRENCY connections posting signed Square
deliveries (each with its own event id, so every one is verified, committed durably and answered).

    python bench/receiver.py [--seconds 8] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synctool.fakes import samples  # noqa: E402

KEY = "bench-signature-key"
URL = "https://sync.example.org/webhooks/pos"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(target: list[str], port: int, env: dict) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "uvicorn", *target, "--host", "127.0.0.1", "--port", str(port),
           "--log-level", "warning", "--no-access-log"]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT)
    deadline = time.monotonic() + 20
    import socket

    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"server on {port} did not start")


def request_bytes(port: int, body: bytes) -> bytes:
    sig = samples.square_signature(KEY, URL, body)
    head = (f"POST /webhooks/pos HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"x-square-hmacsha256-signature: {sig}\r\nContent-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


async def read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)
    return status


async def drive(port: int, seconds: float, concurrency: int, tag: str) -> dict:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    deadline = time.perf_counter() + seconds

    async def worker(n: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        i = 0
        while time.perf_counter() < deadline:
            payload = request_bytes(port, samples.square_order_event(f"{tag}-{n}-{i}", event_id=f"{tag}-{n}-{i}"))
            started = time.perf_counter()
            writer.write(payload)
            status = await read_response(reader)
            latencies.append(time.perf_counter() - started)
            statuses[status] = statuses.get(status, 0) + 1
            i += 1
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "statuses": statuses,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="synctool-bench-"))
    (tmp / "config.yaml").write_text("{}\n")
    env = {**os.environ, "SYNCTOOL_CONFIG": str(tmp / "config.yaml"), "SYNCTOOL_DB": str(tmp / "bench.db"),
           "SYNCTOOL_KEYRING": "off", "POS_WEBHOOK_SIGNATURE_KEY": KEY, "POS_WEBHOOK_NOTIFICATION_URL": URL,
           "PYTHONPATH": str(ROOT)}
    results = {}
    for name, target in (("bare starlette", ["bench.bare_app:app"]),
                         ("synctool receiver", ["--factory", "synctool.web.receiver:app_from_env"])):
        port = free_port()
        proc = start(target, port, env)
        try:
            asyncio.run(drive(port, 1.0, args.concurrency, f"warm-{port}"))  # warm-up, not counted
            results[name] = asyncio.run(drive(port, args.seconds, args.concurrency, f"run-{port}"))
        finally:
            proc.terminate()
            proc.wait()
    print(f"concurrency {args.concurrency}, {args.seconds:.0f} s each, one uvicorn process per server")
    print(f"{'server':<20}{'requests':>10}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}  statuses")
    for name, r in results.items():
        print(f"{name:<20}{r['requests']:>10}{r['rps']:>10.0f}{r['p50_ms']:>9.1f}{r['p99_ms']:>9.1f}  {r['statuses']}")
    import sqlite3

    stored = sqlite3.connect(tmp / "bench.db").execute("SELECT count(*) FROM deliveries").fetchone()[0]
    ratio = results["synctool receiver"]["rps"] / results["bare starlette"]["rps"]
    print(f"deliveries committed: {stored} (every 200 was committed with synchronous=FULL before it was sent)")
    print(f"throughput ratio receiver / bare: {ratio:.2f} (goal >= 0.60)")


if __name__ == "__main__":
    main()
