"""The sign-in form's rate limit holds across machines: a request for an address is counted and recorded alone
(``store.exclusive``), so another machine's request for it waits for the first to commit, then counts it. The other
machine is another process: within one process ``store.atomic`` already takes turns."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from synctool import store
from synctool.ops import sign_in

ADDRESS, CLIENT = "donor@example.org", "203.0.113.9"

OTHER_MACHINE = """
import sys
from synctool import store
from synctool.ops import sign_in

conn = store.connect(sys.argv[1], migrate=False)
with store.atomic(conn):  # the last request allowed, not yet committed (a slow machine)
    print(sign_in.request_link(conn, sys.argv[2], sys.argv[3]), flush=True)
    sys.stdin.readline()
conn.close()
"""


def test_the_limit_per_address_holds_across_two_machines(pg_url: str, tmp_path: Path) -> None:
    import psycopg

    ours = store.connect(pg_url, migrate=False)
    said: list[str] = []
    script = tmp_path / "other_machine.py"
    script.write_text(OTHER_MACHINE)
    try:
        for _ in range(sign_in.PER_ADDRESS[0] - 1):
            assert sign_in.request_link(ours, ADDRESS, CLIENT) == "unknown"
        other = subprocess.Popen(
            [sys.executable, str(script), pg_url, ADDRESS, CLIENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert other.stdout is not None and other.stdin is not None
            assert other.stdout.readline().strip() == "unknown"  # counted, inside its open transaction
            asking = threading.Thread(target=lambda: said.append(sign_in.request_link(ours, ADDRESS, CLIENT)))
            asking.start()
            with psycopg.connect(pg_url, autocommit=True) as raw:
                waits = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                deadline = time.monotonic() + 10
                while raw.execute(waits).fetchone() != (1,) and asking.is_alive() and time.monotonic() < deadline:
                    time.sleep(0.01)
            assert asking.is_alive(), f"this machine's request did not wait for the other's: {said}"
            other.stdin.write("commit\n")
            other.stdin.flush()
            other.communicate(timeout=30)
            assert other.returncode == 0
            asking.join(timeout=10)
        finally:
            if other.poll() is None:
                other.kill()
        assert said == ["limited"]
        assert ours.execute("SELECT count(*) FROM sign_in_requests").fetchone()[0] == sign_in.PER_ADDRESS[0]
    finally:
        ours.close()
