""" "Send me a link" answers in the same time for a team member, a deactivated one and a stranger, measured side by
side in one run against the real `serve --admin-ui` under uvicorn (the mail leaves from drain's outbox, so no
mail server is in the request's path). A difference a stranger could time would tell who is on the team.

Each round asks once for each kind of address, in turn, each from its own client address (X-Forwarded-For from
loopback, as behind the proxy) and a fresh address, so no rate limit applies; then the same with the limits hit.

    python bench/sign_in.py [--rounds 150]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import httpx  # noqa: E402
from serving import free_port, percentile, start  # noqa: E402

from synctool import platforms, store  # noqa: E402
from synctool.ops import users  # noqa: E402
from synctool.runtime import Runtime  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=150)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="synctool-bench-sign-in-"))
    port = free_port()
    config = folder / "config.yaml"
    config.write_text(f"receiver: {{admin_ui: true, public_url: 'http://127.0.0.1:{port}'}}\n")
    env = {**os.environ, "SYNCTOOL_CONFIG": str(config), "SYNCTOOL_DB": str(folder / "synctool.db"), "SYNCTOOL_KEYRING": "off"}
    platforms.registered()
    rt = Runtime.from_environ(None, env)
    conn = store.connect(rt.config.db_path)
    for n in range(args.rounds):
        users.invite(conn, users.InviteBody(email=f"staff{n}@example.org", role="viewer"))
        gone = users.invite(conn, users.InviteBody(email=f"gone{n}@example.org", role="viewer"))
        users.update(conn, gone["id"], users.UserPatch(deactivate=True))
    conn.close()

    proc = start(["--factory", "synctool.web.receiver:app_from_env"], port, env)
    kinds = {"team member": "staff{n}@example.org", "deactivated": "gone{n}@example.org", "stranger": "who{n}@example.org"}
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    limited: list[float] = []
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            client.post("/admin/sign-in", data={"email": "warm@example.org"}, headers={"x-forwarded-for": "10.9.9.9"})
            for n in range(args.rounds):
                for i, (kind, address) in enumerate(kinds.items()):
                    started = time.perf_counter()
                    r = client.post("/admin/sign-in", data={"email": address.format(n=n)},
                                    headers={"x-forwarded-for": f"10.{i}.{n // 250}.{n % 250}"})  # fmt: skip
                    r.read()
                    times[kind].append((time.perf_counter() - started) * 1000)
                    assert r.status_code == 200, r.text
            for _ in range(args.rounds):  # one client over its limit
                started = time.perf_counter()
                client.post(
                    "/admin/sign-in", data={"email": "staff0@example.org"}, headers={"x-forwarded-for": "10.8.8.8"}
                ).read()
                limited.append((time.perf_counter() - started) * 1000)
    finally:
        proc.terminate()
        proc.wait()
    check = store.connect(rt.config.db_path, migrate=False)
    queued = check.execute("SELECT count(*) FROM outbox").fetchone()[0]
    check.close()

    print(f'"send me a link", {args.rounds} rounds, each kind in turn (ms); {queued} sign-in mails queued')
    print(f"{'address':<28} {'p50':>7} {'p95':>7} {'max':>7}")
    for kind, found in {**times, "over the rate limit": limited}.items():
        print(f"{kind:<28} {statistics.median(found):7.2f} {percentile(found, 0.95):7.2f} {max(found):7.2f}")
    base = statistics.median(times["stranger"])
    print("median vs a stranger's: " + ", ".join(f"{k} {statistics.median(v) / base:.2f}x" for k, v in times.items()))


if __name__ == "__main__":
    main()
