"""Start-up of a command, measured against a bare Typer import in paired runs.

Each round runs ``python -c "import typer"`` and ``synctool syncs list --json`` back to back (on an
up-to-date database with a few rows), and the figure is the median of the per-pair ratios, so a noisy
moment on the machine shifts both sides of a pair alike. Also prints, in one process, what the big
imports cost: pydantic with the config models, and sqlite-utils (which an up-to-date database never
imports).

    python bench/startup.py [--pairs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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


def run_ms(args: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(args, env=env, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=15)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="synctool-startup-"))
    (tmp / "config.yaml").write_text("{}\n")
    env = {**os.environ, "SYNCTOOL_DB": str(tmp / "s.db"), "SYNCTOOL_CONFIG": str(tmp / "config.yaml"), "SYNCTOOL_KEYRING": "off"}
    exe = Path(sys.executable).parent / "synctool"
    synctool = [str(exe)] if exe.exists() else [sys.executable, "-m", "synctool.cli.main"]
    command = [*synctool, "syncs", "list", "--json"]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)  # creates and migrates the database
    bare, full, ratios = [], [], []
    for _ in range(args.pairs):
        b = run_ms([sys.executable, "-c", "import typer"], env)
        f = run_ms(command, env)
        bare.append(b)
        full.append(f)
        ratios.append(f / b)
    print(f"python -c 'import typer'     median {statistics.median(bare):6.0f} ms")
    print(f"synctool syncs list --json   median {statistics.median(full):6.0f} ms")
    print(f"ratio, median of {args.pairs} pairs: {statistics.median(ratios):.2f} (goal <= 2.5)")
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
