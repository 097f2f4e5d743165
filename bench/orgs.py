"""Many organisations on one install (issue 58), measured side by side in one run:

- one cron `synctool drain` on a host of ORGS organisations, each with a few due jobs, against a fast fake CRM
  (no pacing): how long until every organisation has had a job done (goal: within a minute), and the drain's peak
  memory (goal: under 300 MB);
- `synctool serve` for ORGS organisations vs for one: deliveries acknowledged per second, each delivery to an
  organisation in turn (goal: within 20 % of one organisation's), and its peak memory with every organisation's
  receiver built (goal: under 300 MB);
- start-up of `synctool --org NAME syncs list --json` vs the single install's `synctool syncs list --json`, in
  paired runs (goal: within 10 %).

    python bench/orgs.py [--orgs 100] [--jobs 3] [--seconds 5] [--pairs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from serving import free_port  # noqa: E402

from synctool.fakes import samples  # noqa: E402

CRM_KEY = "bench-crm-key"


def synctool(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "synctool.cli.main", *args], env=env, cwd=ROOT, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"synctool {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}")
    return done


def secret_of(name: str) -> str:
    return f"gb-secret-{name}"


def make_host(home: Path, count: int, crm_url: str, env: dict[str, str]) -> list[str]:
    """``count`` organisations: one made by `orgs add` and set up as an operator would, the rest copies of its
    folder with secrets of their own."""
    import yaml

    first = "org000"
    synctool("orgs", "add", first, "--platforms", "givebutter", env=env)
    folder = home / "orgs" / first
    config = yaml.safe_load((folder / "config.yaml").read_text()) or {}
    config.setdefault("crm", {})["base_url"] = crm_url + "/api/v1"
    config.setdefault("donors", {})["matching"] = "email"  # the sample donors share one name and street
    config.pop("database", None)  # its folder's, whichever folder a copy is in
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    (folder / "secrets.env").write_text(f"CRM_API_KEY={CRM_KEY}\n")
    (folder / "secrets.env").chmod(0o600)
    for args in (
        ("crm", "refresh"),
        ("mappings", "types", "set", "donations:default", "--fund-id", "2398", "--campaign-id", "822"),
        ("mappings", "payments", "set", "donations:card", "--payment-type-id", "1509"),
        ("sync-mode", "live"),
    ):
        synctool("--org", first, *args, env=env)
    names = [f"org{n:03d}" for n in range(count)]
    for name in names:
        target = home / "orgs" / name
        if name != first:
            shutil.copytree(folder, target)
        (target / "secrets.env").write_text(f"CRM_API_KEY={CRM_KEY}\nDONATIONS_WEBHOOK_SECRET={secret_of(name)}\n")
    return names


def delivery(name: str, n: int) -> bytes:
    txn = {**samples.GIVEBUTTER_TRANSACTION, "id": f"{name}-T{n}", "email": f"{name}-{n}@example.org", "last_name": f"D{name}{n}"}
    return samples.givebutter("transaction.succeeded", txn, event_id=f"{name}-ev{n}")


def give_jobs(home: Path, names: list[str], jobs: int, env: dict[str, str]) -> None:
    """Each organisation's due jobs, as its receiver would have stored them (in this process: quicker)."""
    from typer.testing import CliRunner

    from synctool.cli.main import app
    from synctool.console import AppContext

    payload = home / "payload.json"
    for name in names:
        for n in range(jobs):
            payload.write_bytes(delivery(name, n))
            result = CliRunner().invoke(
                app, ["--org", name, "inject", str(payload), "--source", "donations"], obj=AppContext(environ=env)
            )
            if result.exit_code != 0:
                raise SystemExit(result.output)


def peak_rss_mb(pid: int, stop: threading.Event, found: list[float]) -> None:
    """The process's peak resident memory (VmHWM), read until it ends."""
    while not stop.is_set():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    found.append(int(line.split()[1]) / 1024)
        except OSError:
            return
        time.sleep(0.2)


def watched(proc: subprocess.Popen) -> tuple[threading.Event, list[float]]:
    stop, found = threading.Event(), [0.0]
    threading.Thread(target=peak_rss_mb, args=(proc.pid, stop, found), daemon=True).start()
    return stop, found


def drain_figures(home: Path, names: list[str], env: dict[str, str]) -> dict[str, float]:
    started = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "synctool.cli.main", "drain", "--max-seconds", "55"], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    stop, rss = watched(proc)
    _, err = proc.communicate(timeout=120)
    stop.set()
    took = time.time() - started
    firsts, undone = [], 0
    for name in names:
        conn = sqlite3.connect(home / "orgs" / name / "synctool.db")
        first = conn.execute("SELECT min(finished_at) FROM jobs WHERE status = 'succeeded'").fetchone()[0]
        undone += conn.execute("SELECT count(*) FROM jobs WHERE status != 'succeeded'").fetchone()[0]
        conn.close()
        if first is None:
            raise SystemExit(f"{name}: no job done by the drain (exit {proc.returncode}): {err.decode()[-2000:]}")
        firsts.append(datetime.fromisoformat(first.replace("Z", "+00:00")).timestamp() - started)
    return {"reached_all_s": max(firsts), "whole_s": took, "rss_mb": max(rss), "undone": undone, "exit": proc.returncode}


async def drive(port: int, names: list[str], seconds: float, concurrency: int, tag: str) -> float:
    """Signed Givebutter deliveries, each to the next organisation in turn, from ``concurrency`` keep-alive
    connections: acknowledged (200) per second."""
    per_worker = int(seconds * 3000 / concurrency) + 50
    payloads = []
    for w in range(concurrency):
        mine = []
        for i in range(per_worker):
            name = names[(w * per_worker + i) % len(names)]
            body = delivery(name, 10_000 + w * per_worker + i).replace(b"-ev", f"-{tag}-ev".encode())
            head = (f"POST /o/{name}/webhooks/donations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    f"Signature: {secret_of(name)}\r\nContent-Length: {len(body)}\r\n\r\n")  # fmt: skip
            mine.append(head.encode() + body)
        payloads.append(mine)
    acknowledged = 0
    deadline = time.perf_counter() + seconds

    async def worker(w: int) -> None:
        nonlocal acknowledged
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for payload in payloads[w]:
            if time.perf_counter() >= deadline:
                break
            writer.write(payload)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))
            await reader.readexactly(length)
            acknowledged += head.split(b" ", 2)[1] == b"200"
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return acknowledged / (time.perf_counter() - started)


def start_serve(env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    import httpx

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "synctool.cli.main", "serve", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, cwd=ROOT)  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc, port
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("serve did not start")


def startup_ratio(env_org: dict[str, str], env_single: dict[str, str], pairs: int) -> tuple[float, float, float]:
    def timed(args: list[str], env: dict[str, str]) -> float:
        started = time.perf_counter()
        synctool(*args, env=env)
        return time.perf_counter() - started

    ratios, orgs, singles = [], [], []
    for _ in range(pairs):
        single = timed(["syncs", "list", "--json"], env_single)
        org = timed(["--org", "org001", "syncs", "list", "--json"], env_org)
        singles.append(single)
        orgs.append(org)
        ratios.append(org / single)
    return statistics.median(ratios), statistics.median(orgs) * 1000, statistics.median(singles) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orgs", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=10)
    args = parser.parse_args()

    from synctool.fakes.crm import FakeCrm, create_app
    from synctool.fakes.server import BackgroundServer

    tmp = Path(tempfile.mkdtemp(prefix="synctool-bench-orgs-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCTOOL_", "CRM_", "DONATIONS_"))}
    tuning = {"SYNCTOOL_KEYRING": "off", "PYTHONPATH": str(ROOT), "CRM_RATE_LIMIT_REQUESTS": "1000000",
              "CRM_SHARE_REQUESTS": "1000000", "CRM_RATE_LIMIT_WINDOW_S": "1", "CRM_MIN_INTERVAL_MS": "0"}  # fmt: skip
    crm = FakeCrm(CRM_KEY, limit=1_000_000, window_s=1.0)
    with BackgroundServer(create_app(crm)) as server:
        crm.url = server.url
        many, one = tmp / "many", tmp / "one"
        env_many = {**base, **tuning, "SYNCTOOL_HOME": str(many)}
        env_one = {**base, **tuning, "SYNCTOOL_HOME": str(one)}
        t0 = time.perf_counter()
        names = make_host(many, args.orgs, server.url, env_many)
        make_host(one, 1, server.url, env_one)
        give_jobs(many, names, args.jobs, env_many)
        print(f"{args.orgs} organisations with {args.jobs} due jobs each, set up in {time.perf_counter() - t0:.1f} s")

        drained = drain_figures(many, names, env_many)
        print(f"cron drain over {args.orgs} organisations: every organisation had a job done within "
              f"{drained['reached_all_s']:.1f} s (goal <= 60), the whole run {drained['whole_s']:.1f} s, "
              f"{drained['undone']} jobs left, exit {drained['exit']}; peak memory {drained['rss_mb']:.0f} MB (goal < 300)")  # fmt: skip

        served_many, port_many = start_serve(env_many)
        served_one, port_one = start_serve(env_one)
        stop, rss = watched(served_many)
        rates: dict[str, list[float]] = {"many": [], "one": []}
        try:
            asyncio.run(drive(port_many, names, 1.0, args.concurrency, "warm"))  # every organisation's receiver built
            asyncio.run(drive(port_one, ["org000"], 1.0, args.concurrency, "warm"))
            for n in range(args.rounds):  # alternating, so drift on a shared machine hits both alike
                rates["many"].append(asyncio.run(drive(port_many, names, args.seconds, args.concurrency, f"r{n}")))
                rates["one"].append(asyncio.run(drive(port_one, ["org000"], args.seconds, args.concurrency, f"r{n}")))
        finally:
            stop.set()
            for proc in (served_many, served_one):
                proc.terminate()
                proc.wait()
        many_rate, one_rate = statistics.median(rates["many"]), statistics.median(rates["one"])
        print(f"serve, {args.concurrency} clients, {args.rounds} alternating rounds of {args.seconds:.0f} s: "
              f"{many_rate:.0f} acknowledged/s with {args.orgs} organisations (each delivery to the next) vs "
              f"{one_rate:.0f}/s with one: ratio {many_rate / one_rate:.2f} (goal >= 0.80); "
              f"peak memory with {args.orgs} receivers built {max(rss):.0f} MB (goal < 300)")  # fmt: skip

        single = tmp / "single"
        single.mkdir()
        (single / "config.yaml").write_text("{}\n")
        env_single = {
            **base,
            **tuning,
            "SYNCTOOL_CONFIG": str(single / "config.yaml"),
            "SYNCTOOL_DB": str(single / "synctool.db"),
        }
        synctool("init", env=env_single)
        ratio, org_ms, single_ms = startup_ratio(env_many, env_single, args.pairs)
        print(f"start-up, median of {args.pairs} pairs: `--org org001 syncs list --json` {org_ms:.0f} ms vs the single "
              f"install's {single_ms:.0f} ms: ratio {ratio:.2f} (goal <= 1.10)")  # fmt: skip
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
