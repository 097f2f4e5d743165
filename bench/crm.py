"""The CRM client against the LGL fake with limits scaled down 100x (300 requests / 3 s, 11 ms apart):

1. achieved request rate as a fraction of the allowed rate, from two processes sharing one database,
   and the fake's count of 429s;
2. CRM requests per gift for 70 % returning and 30 % new donors (matching + create-once gifts).

    python bench/crm.py [--requests 600] [--gifts 200]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from synctool import crm, store  # noqa: E402
from synctool.config import ProfileDefaults, load_config  # noqa: E402
from synctool.fakes.lgl import FakeCrm, create_app  # noqa: E402
from synctool.fakes.server import BackgroundServer  # noqa: E402
from synctool.sync import constituents, gifts  # noqa: E402

LIMIT, WINDOW_S, INTERVAL_MS = 300, 3.0, 11.0
HAMMER = """
import sys
from synctool import crm, store
from synctool.config import load_config
config = load_config()
client = crm.open_client(store.connect(config.db_path), config)
for _ in range(int(sys.argv[1])):
    client.request("GET", "/funds", params={"limit": 1})
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--gifts", type=int, default=200)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="synctool-crm-"))
    (tmp / "config.yaml").write_text("{}\n")
    fake = FakeCrm("bench-key", limit=LIMIT, window_s=WINDOW_S)
    with BackgroundServer(create_app(fake)) as server:
        env = {"SYNCTOOL_CONFIG": str(tmp / "config.yaml"), "SYNCTOOL_DB": str(tmp / "bench.db"),
               "SYNCTOOL_KEYRING": "off", "CRM_API_BASE_URL": server.url + "/api/v1", "CRM_API_KEY": "bench-key",
               "CRM_RATE_LIMIT_REQUESTS": str(LIMIT), "CRM_RATE_LIMIT_WINDOW_S": str(WINDOW_S),
               "CRM_MIN_INTERVAL_MS": str(INTERVAL_MS), "PYTHONPATH": str(ROOT)}
        os.environ.update(env)
        store.connect(tmp / "bench.db").close()

        started = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", HAMMER, str(args.requests // 2)], env={**os.environ})
                 for _ in range(2)]
        for p in procs:
            p.wait()
        elapsed = time.perf_counter() - started
        stats = fake.stats()
        first = fake.requests[0]["at"]
        last = fake.requests[-1]["at"]
        allowed = min(LIMIT / WINDOW_S, 1000 / INTERVAL_MS)
        rate = (stats["served"] - 1) / (last - first)
        print(f"pacing: {stats['served']} requests from 2 processes in {elapsed:.1f} s; allowed {allowed:.1f}/s "
              f"(300 per 3 s, 11 ms apart)")
        print(f"  achieved {rate:.1f}/s = {rate / allowed:.3f} of the allowed rate (goal >= 0.95); "
              f"429s: {stats['rejected_429']} (goal 0); most in any window: {stats['max_in_any_window']}; "
              f"smallest gap {stats['min_gap_s'] * 1000:.1f} ms")

        fake.reset()
        config = load_config()
        conn = store.connect(config.db_path)
        client = crm.open_client(conn, config)
        rng = random.Random(3)
        returning = [f"donor{n}@example.org" for n in range(int(args.gifts * 0.7))]
        for email in returning:  # these donors gave before: in the CRM and linked locally
            cid, _ = constituents.match_or_create(client, conn, constituents.Person("R", email.split("@")[0], email), ProfileDefaults())
        new = [f"new{n}@example.org" for n in range(args.gifts - len(returning))]
        donors = [(e, False) for e in returning] + [(e, True) for e in new]
        rng.shuffle(donors)
        before = fake.stats()["requests"]
        for n, (email, _) in enumerate(donors):
            person = constituents.Person("Pat", email.split("@")[0], email)
            cid, _ = constituents.match_or_create(client, conn, person, ProfileDefaults())
            gifts.create_once(client, conn, cid, {"external_id": f"donations_b{n}", "received_amount": 25.0,
                                                  "received_date": "2026-11-20"})
        spent = fake.stats()["requests"] - before
        print(f"requests per gift: {spent / len(donors):.2f} over {len(donors)} gifts "
              f"(70 % returning, 30 % new; goal <= 1.6); gifts in CRM: {len(fake.gifts)}, "
              f"constituents: {len(fake.constituents)}")


if __name__ == "__main__":
    main()
