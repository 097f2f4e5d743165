"""The overview over many sync records (1,000,000 for the goal): the staff page's first request on a fresh server
process, and `synctool overview --json` beside `synctool syncs list --json`, for one checkout or several side by
side in one run. Goals: the overview's first request under --goal-ms (250) at 1,000,000 records on 2 cores, and
`overview --json` within --cli-goal-ms (300) of `syncs list --json`.

The database is seeded once (``bench/synclog.py``'s seed, a super_admin, a session) by the first checkout named,
then copied for each checkout, which migrates its copy before anything is timed; so name the oldest first. Each
round asks every checkout in turn, so a noisy moment on the machine shifts every side alike: a fresh server
process (uvicorn, as ``bench/staff_page.py`` runs it) and one signed-in request for the overview (its first
request, connection included, checked to answer 200), then the two commands back to back. The figures are
medians and maxima over the rounds.

    python bench/overview.py [--rows 1000000] [--rounds 5]
    python bench/overview.py --code before=/path/to/an/older/checkout --code after=.   # before and after, one run
    python bench/overview.py --campaigns 50   # the worst case: every Givebutter and Square gift names a campaign
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from serving import first_request, free_port, start, stop

ROOT = Path(__file__).resolve().parents[1]
APP = ["--factory", "synctool.web.receiver:app_from_env"]

#: run by the first checkout (its own bench/synclog.py and synctool): the database, a super_admin and their
#: one-time sign-in link's path
SEED = """
import os, sys, time
from pathlib import Path
from urllib.parse import urlsplit
tree, folder, rows, campaigns = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sys.path[:0] = [str(tree), str(tree / "bench")]
from synclog import seed
from synctool import platforms, store
from synctool.ops import sign_in, users
from synctool.runtime import Runtime
platforms.registered()
rt = Runtime.from_environ(None, dict(os.environ))
conn = store.connect(rt.config.db_path)
started = time.perf_counter()
seed(conn, rows)
if campaigns:  # as a poll keeps a transaction: none of them mapped, so the overview lists each
    with store.atomic(conn):
        conn.execute(
            "UPDATE jobs SET payload = json_object('transaction', json_object('campaign_id', CAST(entity_id AS INTEGER) % ?))"
            " WHERE source IN ('donations', 'pos')",
            (campaigns,),
        )
print(f"{time.perf_counter() - started:.1f}")
users.invite(conn, users.InviteBody(email="admin@example.org", role="super_admin"))
print(urlsplit(sign_in.login_link(conn, rt, "admin@example.org")["url"]).path)
conn.close()
"""


def environment(tree: Path, folder: Path, port: int) -> dict[str, str]:
    """A checkout's environment: its code first on the path, the copy of the database it migrated, the staff
    page on. Bytecode is written (the first run writes it, the timed ones read it, as ``bench/startup.py``)."""
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    config = folder / "config.yaml"
    config.write_text(f"receiver: {{admin_ui: true, public_url: 'http://127.0.0.1:{port}'}}\n")
    return {
        **inherited,
        "SYNCTOOL_CONFIG": str(config),
        "SYNCTOOL_DB": str(folder / "synctool.db"),
        "SYNCTOOL_KEYRING": "off",
        "PYTHONPATH": str(tree),
    }


def command_ms(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--campaigns", type=int, default=0, help="every gift of the two names one of this many campaigns")
    parser.add_argument("--code", action="append", default=[], metavar="NAME=DIR", help="a checkout to time (oldest first)")
    parser.add_argument("--goal-ms", type=float, default=250)
    parser.add_argument("--cli-goal-ms", type=float, default=300)
    args = parser.parse_args()
    trees = {name: Path(folder).resolve() for name, folder in (c.split("=", 1) for c in args.code)} or {"this": ROOT}
    exe = Path(sys.executable).parent / "synctool"
    synctool = [str(exe)] if exe.exists() else [sys.executable, "-m", "synctool.cli.main"]
    work = Path(tempfile.mkdtemp(prefix="synctool-bench-overview-"))
    try:
        folders = {name: work / name for name in trees}
        ports = {name: free_port() for name in trees}
        envs = {}
        for name, tree in trees.items():
            folders[name].mkdir()
            envs[name] = environment(tree, folders[name], ports[name])
        first, first_tree = next(iter(trees)), next(iter(trees.values()))
        print(f"seeding {args.rows:,} sync records with {first} ...", flush=True)
        seeded = subprocess.run(
            [sys.executable, "-c", SEED, str(first_tree), str(folders[first]), str(args.rows), str(args.campaigns)],
            env=envs[first],
            cwd=first_tree,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        print(f"seeded in {seeded[0]} s", flush=True)
        proc = start(APP, ports[first], envs[first], cwd=first_tree)
        try:  # the session is kept in the database: every copy holds it
            with httpx.Client(base_url=f"http://127.0.0.1:{ports[first]}", timeout=30) as client:
                assert client.post(seeded[1]).status_code == 303
                cookies = dict(client.cookies)
        finally:
            stop(proc)
        for name in trees:
            if name != first:
                shutil.copy(folders[first] / "synctool.db", folders[name] / "synctool.db")
            for _ in range(2):  # migrates the copy, writes the bytecode
                command_ms([*synctool, "overview", "--json"], envs[name])
        times: dict[str, dict[str, list[float]]] = {name: {"first": [], "overview": [], "list": []} for name in trees}
        for n in range(args.rounds):
            for name, tree in trees.items():
                found = times[name]
                found["first"].append(first_request(APP, ports[name], envs[name], "/admin/", cookies, cwd=tree))
                found["overview"].append(command_ms([*synctool, "overview", "--json"], envs[name]))
                found["list"].append(command_ms([*synctool, "syncs", "list", "--json"], envs[name]))
            print(f"  round {n + 1}: " + ", ".join(f"{name} {times[name]['first'][-1]:.0f} ms" for name in trees), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # about 800 MB a copy at 1,000,000 records

    named = f", every gift naming one of {args.campaigns} campaigns" if args.campaigns else ""
    print(f"the overview, {args.rows:,} sync records{named}, {args.rounds} rounds (ms: median / max)")
    print(f"{'':<10} {'first request':>16} {'overview --json':>18} {'syncs list --json':>19} {'difference':>12}")
    for name, found in times.items():
        gap = [o - s for o, s in zip(found["overview"], found["list"], strict=True)]
        cells = [found["first"], found["overview"], found["list"], gap]
        widths = [16, 18, 19, 12]
        print(
            f"{name:<10} "
            + " ".join(f"{f'{statistics.median(c):.0f} / {max(c):.0f}':>{w}}" for c, w in zip(cells, widths, strict=True))
        )
    for name, found in times.items():
        late = max(found["first"]) >= args.goal_ms
        gap = statistics.median(o - s for o, s in zip(found["overview"], found["list"], strict=True))
        print(
            f"{name}: first request {'GOAL NOT MET' if late else 'goal met'} (max {max(found['first']):.0f} ms,"
            f" goal < {args.goal_ms:.0f}); overview --json {'GOAL NOT MET' if gap >= args.cli_goal_ms else 'goal met'}"
            f" ({gap:.0f} ms over syncs list, goal < {args.cli_goal_ms:.0f})"
        )


if __name__ == "__main__":
    main()
