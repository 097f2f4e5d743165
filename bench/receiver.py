"""Receiver throughput vs a bare Starlette app, side by side in one run: the receiver commits each delivery
durably (one commit, ``synchronous=FULL``, before the 200); the goal is 1,000 deliveries/s with p99 under
50 ms at 32 clients, far above a giving day's peak.

Both run under uvicorn with the same settings (one process, --log-level warning, --no-access-log),
driven by the same keep-alive HTTP/1.1 client with CONCURRENCY connections posting signed Square
deliveries (each with its own event id, so every one is verified, committed durably and answered).

    python bench/receiver.py [--seconds 8] [--concurrency 32] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serving import free_port, start  # noqa: E402

from synctool.fakes import samples  # noqa: E402

KEY = "bench-signature-key"
URL = "https://sync.example.org/webhooks/pos"


def request_bytes(port: int, body: bytes) -> bytes:
    sig = samples.square_signature(KEY, URL, body)
    head = (
        f"POST /webhooks/pos HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"x-square-hmacsha256-signature: {sig}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
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

    # signed requests are built before the clock starts, so the client spends its time sending
    per_worker = int(seconds * 6000 / concurrency) + 50
    payloads = [
        [request_bytes(port, samples.square_order_event(f"{tag}-{n}-{i}", event_id=f"{tag}-{n}-{i}")) for i in range(per_worker)]
        for n in range(concurrency)
    ]
    deadline = time.perf_counter() + seconds

    async def worker(n: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        i = 0
        while time.perf_counter() < deadline and i < per_worker:
            payload = payloads[n][i]
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
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="synctool-bench-"))
    (tmp / "config.yaml").write_text("{}\n")
    env = {
        **os.environ,
        "SYNCTOOL_CONFIG": str(tmp / "config.yaml"),
        "SYNCTOOL_DB": str(tmp / "bench.db"),
        "SYNCTOOL_KEYRING": "off",
        "POS_WEBHOOK_SIGNATURE_KEY": KEY,
        "POS_WEBHOOK_NOTIFICATION_URL": URL,
        "PYTHONPATH": str(ROOT),
    }
    servers = {"bare starlette": ["bench.bare_app:app"], "synctool receiver": ["--factory", "synctool.web.receiver:app_from_env"]}
    procs, ports = {}, {}
    for name, target in servers.items():
        ports[name] = free_port()
        procs[name] = start(target, ports[name], env)
    rounds: list[dict] = []
    try:
        for name in servers:  # warm-up, not counted
            asyncio.run(drive(ports[name], 1.0, args.concurrency, f"warm-{ports[name]}"))
        for n in range(args.rounds):  # alternate, so drift on a shared machine hits both alike
            rounds.append(
                {name: asyncio.run(drive(ports[name], args.seconds, args.concurrency, f"r{n}-{ports[name]}")) for name in servers}
            )
    finally:
        for proc in procs.values():
            proc.terminate()
            proc.wait()
    print(
        f"concurrency {args.concurrency}, {args.rounds} alternating rounds of {args.seconds:.0f} s, "
        "one uvicorn process per server, same settings"
    )
    print(f"{'round':<7}{'server':<20}{'requests':>10}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}  statuses")
    ratios = []
    for n, results in enumerate(rounds, 1):
        for name, r in results.items():
            print(f"{n:<7}{name:<20}{r['requests']:>10}{r['rps']:>10.0f}{r['p50_ms']:>9.1f}{r['p99_ms']:>9.1f}  {r['statuses']}")
        ratios.append(results["synctool receiver"]["rps"] / results["bare starlette"]["rps"])
    import sqlite3

    stored = sqlite3.connect(tmp / "bench.db").execute("SELECT count(*) FROM deliveries").fetchone()[0]
    print(f"deliveries committed: {stored} (each 200 was sent after its commit with synchronous=FULL)")
    print(
        "throughput ratio receiver / bare per round: "
        + ", ".join(f"{r:.2f}" for r in ratios)
        + f"; median {statistics.median(ratios):.2f}"
    )
    durable = statistics.median(r["synctool receiver"]["rps"] for r in rounds)
    p99 = statistics.median(r["synctool receiver"]["p99_ms"] for r in rounds)
    print(
        f"receiver, median of rounds: {durable:.0f} durable deliveries/s (goal >= 1000), p99 {p99:.1f} ms "
        f"(goal < 50) at {args.concurrency} clients; a giving day's peak is tens a second"
    )


if __name__ == "__main__":
    main()
