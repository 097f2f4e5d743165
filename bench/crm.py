"""The CRM client's pacer against the LGL fake, measured where it counts: at the CRM.

1. With every time scaled down 100x (300 requests / 3 s, 11 ms apart, the 20 ms send margin 0.2 ms): the
   achieved request rate as a fraction of the allowed rate, from two processes sharing one database, and
   the fake's count of 429s.
2. Three processes sharing the budget at a 60 ms minimum interval and the real 20 ms send margin (jitter
   does not scale): the smallest gap between two requests as the fake receives them, against the setting
   (goal: at or above it).

CRM requests per gift are measured by ``bench/requests_per_gift.py``.

    python bench/crm.py [--requests 600] [--gap-requests 150]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synctool import store  # noqa: E402
from synctool.fakes.crm import FakeCrm, create_app  # noqa: E402
from synctool.fakes.server import BackgroundServer  # noqa: E402

LIMIT, WINDOW_S, INTERVAL_MS, MARGIN_MS = 300, 3.0, 11.0, 0.2
HAMMER = """
import sys
from synctool import store
from synctool.crm import environment as crm
from synctool import platforms
from synctool.runtime import Runtime
platforms.registered()
rt = Runtime.from_environ()
client = crm.open_client(store.connect(rt.db_path), rt)
for _ in range(int(sys.argv[1])):
    client.request("GET", "/funds", params={"limit": 1})
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--gap-requests", type=int, default=150)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="synctool-crm-"))
    (tmp / "config.yaml").write_text("{}\n")
    fake = FakeCrm("bench-key", limit=LIMIT, window_s=WINDOW_S)
    with BackgroundServer(create_app(fake)) as server:
        env = {
            "SYNCTOOL_CONFIG": str(tmp / "config.yaml"),
            "SYNCTOOL_DB": str(tmp / "bench.db"),
            "SYNCTOOL_KEYRING": "off",
            "CRM_API_BASE_URL": server.url + "/api/v1",
            "CRM_API_KEY": "bench-key",
            "CRM_RATE_LIMIT_REQUESTS": str(LIMIT),
            "CRM_SHARE_REQUESTS": str(LIMIT),
            "CRM_RATE_LIMIT_WINDOW_S": str(WINDOW_S),
            "CRM_MIN_INTERVAL_MS": str(INTERVAL_MS),
            "CRM_SEND_MARGIN_MS": str(MARGIN_MS),
            "PYTHONPATH": str(ROOT),
        }
        os.environ.update(env)
        store.connect(tmp / "bench.db").close()

        started = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", HAMMER, str(args.requests // 2)], env={**os.environ}) for _ in range(2)]
        for p in procs:
            p.wait()
        elapsed = time.perf_counter() - started
        stats = fake.stats()
        first = fake.requests[0]["at"]
        last = fake.requests[-1]["at"]
        allowed = min(LIMIT / WINDOW_S, 1000 / INTERVAL_MS)
        rate = (stats["served"] - 1) / (last - first)
        print(
            f"pacing: {stats['served']} requests from 2 processes in {elapsed:.1f} s; allowed {allowed:.1f}/s "
            f"(300 per 3 s, 11 ms apart; synctool's own send margin {MARGIN_MS} ms)"
        )
        print(
            f"  achieved {rate:.1f}/s = {rate / allowed:.3f} of the allowed rate (goal >= 0.95); "
            f"429s: {stats['rejected_429']} (goal 0); most in any window: {stats['max_in_any_window']}; "
            f"smallest gap {stats['min_gap_s'] * 1000:.1f} ms"
        )

        fake.reset()
        gap_ms = 60
        os.environ.update(
            {
                "CRM_RATE_LIMIT_REQUESTS": "100000",
                "CRM_SHARE_REQUESTS": "100000",
                "CRM_MIN_INTERVAL_MS": str(gap_ms),
                "CRM_SEND_MARGIN_MS": "20",
            }
        )
        procs = [
            subprocess.Popen([sys.executable, "-c", HAMMER, str(args.gap_requests // 3)], env={**os.environ}) for _ in range(3)
        ]
        for p in procs:
            p.wait()
        stats = fake.stats()
        times = sorted(r["at"] for r in fake.requests)
        gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
        print(
            f"gaps at the CRM: {stats['served']} requests from 3 processes at a {gap_ms} ms setting: smallest "
            f"{gaps[0] * 1000:.1f} ms, 1st percentile {gaps[len(gaps) // 100] * 1000:.1f} ms, median "
            f"{gaps[len(gaps) // 2] * 1000:.1f} ms; smallest / setting = {gaps[0] * 1000 / gap_ms:.3f} (goal >= 1)"
        )


if __name__ == "__main__":
    main()
