"""The staff page's response times with 10,000 sync records, beside a bare Starlette app answering a fixed page,
in one run. Goal: every page under 100 ms at the 95th percentile.

Both run under uvicorn with the same settings (one process, --log-level warning, --no-access-log). One signed-in
client asks each page in turn (a person clicking), then CLIENTS clients ask at once (a team on Giving Tuesday);
each response is read in full.

    python bench/staff_page.py [--rows 10000] [--rounds 40] [--clients 4]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
from receiver import free_port, start  # noqa: E402
from synclog import seed  # noqa: E402

from synctool import platforms, store  # noqa: E402
from synctool.ops import sign_in, users  # noqa: E402
from synctool.runtime import Runtime  # noqa: E402


def pages(first_failed: str) -> dict[str, str]:
    return {
        "overview": "/admin/",
        "sync log": "/admin/syncs",
        "sync log, text search": "/admin/syncs?q=Donor+4321",
        "sync log, status + source + dates": "/admin/syncs?status=failed&source=donations&date_from=2026-01-01",
        "sync log, page 100": "/admin/syncs?page=100",
        "a record": f"/admin/syncs/{first_failed}",
        "failed": "/admin/failed",
        "reconcile": "/admin/reconcile",
        "actions": "/admin/actions",
        "team": "/admin/team",
    }


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="synctool-bench-page-"))
    port, bare_port = free_port(), free_port()
    config = folder / "config.yaml"
    config.write_text(f"receiver: {{admin_ui: true, public_url: 'http://127.0.0.1:{port}'}}\n")
    env = {**os.environ, "SYNCTOOL_CONFIG": str(config), "SYNCTOOL_DB": str(folder / "synctool.db"), "SYNCTOOL_KEYRING": "off"}
    platforms.registered()
    rt = Runtime.from_environ(None, env)
    conn = store.connect(rt.config.db_path)
    seed(conn, args.rows)
    users.invite(conn, users.InviteBody(email="admin@example.org", role="super_admin"))
    link = sign_in.login_link(conn, rt, "admin@example.org")
    first_failed = conn.execute("SELECT id FROM jobs WHERE status = 'failed' LIMIT 1").fetchone()[0]
    conn.close()

    procs = [
        start(["--factory", "synctool.web.receiver:app_from_env"], port, env),
        start(["bench.bare_app:app"], bare_port, env),
    ]
    try:
        page_client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
        signed = page_client.post(link["url"].split(str(port), 1)[1])
        assert signed.status_code == 303, signed.text
        cookies = dict(page_client.cookies)
        bare = httpx.Client(base_url=f"http://127.0.0.1:{bare_port}", timeout=30)
        paths = pages(first_failed)
        for path in paths.values():  # warm up, and every page answers 200
            assert page_client.get(path).status_code == 200, path
        bare.get("/admin/")

        times: dict[str, list[float]] = {name: [] for name in paths}
        bare_times: list[float] = []
        for _ in range(args.rounds):
            for name, path in paths.items():
                started = time.perf_counter()
                page_client.get(path).read()
                times[name].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                bare.get("/admin/").read()
                bare_times.append((time.perf_counter() - started) * 1000)

        print(f"staff page, {args.rows:,} sync records, one client, {args.rounds} rounds (ms)")
        print(f"{'page':<36} {'p50':>7} {'p95':>7} {'max':>7}")
        for name, found in times.items():
            print(f"{name:<36} {statistics.median(found):7.1f} {percentile(found, 0.95):7.1f} {max(found):7.1f}")
        everything = [t for found in times.values() for t in found]
        bare_p95 = percentile(bare_times, 0.95)
        print(f"{'bare Starlette page':<36} {statistics.median(bare_times):7.1f} {bare_p95:7.1f} {max(bare_times):7.1f}")
        print(
            f"all staff pages: p95 {percentile(everything, 0.95):.1f} ms ({percentile(everything, 0.95) / bare_p95:.1f}x the bare app's p95)"
        )

        together: list[float] = []
        lock = threading.Lock()

        def person() -> None:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, cookies=cookies) as client:
                for _ in range(max(1, args.rounds // 4)):
                    for path in paths.values():
                        started = time.perf_counter()
                        client.get(path).read()
                        with lock:
                            together.append((time.perf_counter() - started) * 1000)

        threads = [threading.Thread(target=person) for _ in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(
            f"{args.clients} clients at once: p50 {statistics.median(together):.1f} ms, p95 {percentile(together, 0.95):.1f} ms over {len(together)} pages"
        )
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
