"""Running it for real: a `synctool serve --log-file` keeps logging after logrotate moves its file away, and
systemd's `Restart=always` has something to restart: after `kill -9` a new receiver takes the same database
and port (README "Install on a server")."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx

from tests.drills.conftest import Site, givebutter_delivery


def test_the_log_file_keeps_writing_after_a_rotation(site: Site):
    log = site.folder / "synctool.log"
    proc = site.serve("--log-file", str(log))
    assert httpx.post(f"{site.url}/webhooks/donations", content=b"{}").status_code == 401  # logged as rejected
    wait_for_text(log, "rejected donations delivery")
    log.rename(site.folder / "synctool.log.1")  # what logrotate does (no copytruncate)
    assert httpx.post(f"{site.url}/webhooks/pos", content=b"{}").status_code == 401
    wait_for_text(log, "rejected pos delivery")  # a new file, by the same process
    assert "rejected pos delivery" not in (site.folder / "synctool.log.1").read_text()
    assert proc.poll() is None


def test_a_receiver_killed_with_sigkill_is_replaced_on_the_same_port_and_database(site: Site):
    first = site.serve()
    delivery = givebutter_delivery(1)
    assert site.post(None, "donations", *delivery).json()["status"] == "accepted"
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    site.serve()  # what systemd's Restart=always does, RestartSec later
    assert site.post(None, "donations", *delivery).json()["status"] == "duplicate"  # the platform's retry: stored once
    assert site.give(2).json()["status"] == "accepted"


def wait_for_text(path: Path, text: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never reached {path}")
