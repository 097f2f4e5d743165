"""Start-up of a command, measured against its peers in paired runs.

Each round runs ``python -c "import typer"``, ``sqlite-utils tables`` (the card's own CLI peer, on the
same database), ``synctool syncs list --json`` and cron's idle tick, ``synctool drain`` on an empty
queue, back to back (on an up-to-date database), and the figures are medians of the per-round ratios, so
a noisy moment on the machine shifts every side of a round alike; ``synctool overview --json`` runs in each round too
(what it imports beyond ``syncs list``: at 1,000,000 records, ``bench/overview.py``). Wall time for start-up; CPU seconds
(user + system, of the child) for the idle drain, which cron pays every minute. Also prints, in one
process, what the big imports cost: pydantic with the config models, and sqlite-utils (which an
up-to-date database never imports).

Run it in the project's virtualenv with the test extras installed, as CI has it: the goal is for that
environment (the registry reads the installed distributions' entry points only when one of them may declare a
platform, ``platforms.registry._may_declare_platforms``).

    python bench/startup.py [--pairs 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: `syncs list --json` against the bare Typer app below, in a virtualenv holding the test extras (``pip install -e
#: '.[test]'``: about 85 distributions, whose entry points the platform registry would read): the goal
GOAL_VS_BARE = 1.5

#: a bare Typer app with `syncs list`'s options, printing an empty page: the floor `syncs list --json` is held to
BARE_TYPER = """
import json
from typing import Optional

import typer

app = typer.Typer(add_completion=False)
syncs = typer.Typer()
app.add_typer(syncs, name="syncs")


@syncs.command("list")
def listing(status: Optional[str] = None, source: Optional[str] = None, q: Optional[str] = None, page: int = 1,
            limit: int = 50, sort: str = "created_at", order: str = "desc", as_json: bool = typer.Option(False, "--json"),
            columns: Optional[str] = None) -> None:
    print(json.dumps({"items": [], "page": page, "pages": 0, "total": 0}))


@app.callback()
def root(config: Optional[str] = None, verbose: bool = False) -> None:
    pass


app()
"""

PROBE = """
import time
t0 = time.perf_counter()
import typer, yaml
t1 = time.perf_counter()
import pydantic.main
t2 = time.perf_counter()
import synctool.config
t3 = time.perf_counter()
import sqlite_utils
t4 = time.perf_counter()
print(f"{(t1 - t0) * 1000:.0f} {(t2 - t1) * 1000:.0f} {(t3 - t2) * 1000:.0f} {(t4 - t3) * 1000:.0f}")
"""


def run_ms(args: list[str], env: dict) -> tuple[float, float]:
    """(wall ms, CPU ms of the child) for one run of ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=15)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="synctool-startup-"))
    (tmp / "config.yaml").write_text("{}\n")
    # with PYTHONDONTWRITEBYTECODE every run would compile the modules changed since their .pyc was written
    # (about 25 ms for a dozen): the figure is start-up, so the first run writes them and the others read them
    inherited = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env = {**inherited, "SYNCTOOL_DB": str(tmp / "s.db"), "SYNCTOOL_CONFIG": str(tmp / "config.yaml"), "SYNCTOOL_KEYRING": "off"}
    exe = Path(sys.executable).parent / "synctool"
    synctool = [str(exe)] if exe.exists() else [sys.executable, "-m", "synctool.cli.main"]
    command = [*synctool, "syncs", "list", "--json"]
    overview = [*synctool, "overview", "--json"]
    idle_drain = [*synctool, "drain", "--max-seconds", "1"]
    peer = Path(sys.executable).parent / "sqlite-utils"
    tables = [str(peer), "tables", str(tmp / "s.db")]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)  # creates and migrates the database
    bare = tmp / "bare_typer.py"
    bare.write_text(BARE_TYPER)
    bare_list = [sys.executable, str(bare), "syncs", "list", "--json"]
    rows: dict[str, list[float]] = {
        "typer": [],
        "adapters": [],
        "tables": [],
        "bare": [],
        "list": [],
        "list_cpu": [],
        "overview": [],
        "drain_cpu": [],
    }
    vs_tables, drain_vs_list, vs_bare, overview_gap = [], [], [], []
    for _ in range(args.pairs):
        rows["typer"].append(run_ms([sys.executable, "-c", "import typer"], env)[0])
        rows["adapters"].append(run_ms([sys.executable, "-c", "import typer._adapters"], env)[0])
        rows["tables"].append(run_ms(tables, env)[0])
        rows["bare"].append(run_ms(bare_list, env)[0])
        wall, cpu = run_ms(command, env)
        vs_bare.append(wall / rows["bare"][-1])
        rows["list"].append(wall)
        rows["list_cpu"].append(cpu)
        rows["drain_cpu"].append(run_ms(idle_drain, env)[1])
        rows["overview"].append(run_ms(overview, env)[0])
        overview_gap.append(rows["overview"][-1] - wall)
        vs_tables.append(wall / rows["tables"][-1])
        drain_vs_list.append(rows["drain_cpu"][-1] / cpu)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print(f"python -c 'import typer'          median {med['typer']:6.0f} ms")
    # typer 0.29 imports its pydantic adapters to parse any command's parameters: the floor of every command
    print(f"python -c 'import typer._adapters' median {med['adapters']:5.0f} ms  (what any typer command with options pays)")
    print(f"sqlite-utils tables               median {med['tables']:6.0f} ms")
    print(f"synctool syncs list --json        median {med['list']:6.0f} ms  ({med['list_cpu']:.0f} ms CPU)")
    print(f"synctool drain, empty queue (CPU) median {med['drain_cpu']:6.0f} ms")
    print(
        f"synctool overview --json           median {med['overview']:6.0f} ms  ({statistics.median(overview_gap):.0f} ms over"
        " syncs list, median of the rounds)"
    )
    print(f"bare typer app, same options      median {med['bare']:6.0f} ms")
    print(
        f"syncs list / bare typer app, median of {args.pairs} rounds: {statistics.median(vs_bare):.2f} (goal <= {GOAL_VS_BARE})"
    )
    print(f"syncs list / sqlite-utils tables, median of {args.pairs} rounds: {statistics.median(vs_tables):.2f} (goal <= 1.0)")
    print(f"idle drain CPU / syncs list CPU, median of {args.pairs} rounds: {statistics.median(drain_vs_list):.2f} (goal <= 1.0)")
    parts = [
        list(
            map(
                float,
                subprocess.run([sys.executable, "-c", PROBE], env=env, check=True, capture_output=True, text=True).stdout.split(),
            )
        )
        for _ in range(5)
    ]
    typer_ms, pydantic_ms, models_ms, sqlite_utils_ms = (statistics.median(p[i] for p in parts) for i in range(4))
    print(
        f"in one process: typer+yaml {typer_ms:.0f} ms, pydantic {pydantic_ms:.0f} ms, the config models "
        f"{models_ms:.0f} ms; sqlite-utils {sqlite_utils_ms:.0f} ms (not imported on an up-to-date database)"
    )


if __name__ == "__main__":
    main()
