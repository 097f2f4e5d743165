"""Invariant 1: a 2xx means the delivery is on disk. Killing the receiver loses nothing acknowledged."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading

import httpx

from synctool.fakes import samples
from tests.conftest import POS_URL, TEST_SECRETS
from tests.helpers import free_port, start_receiver


def test_sigkill_loses_nothing_acknowledged(secrets_env, env):
    port = free_port()
    proc = start_receiver(port)
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def sender(n: int) -> None:
        with httpx.Client(timeout=5) as client:
            i = 0
            while not stop.is_set():
                body = samples.square_order_event(f"O-{n}-{i}")
                sig = samples.square_signature(TEST_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"], POS_URL, body)
                try:
                    r = client.post(
                        f"http://127.0.0.1:{port}/webhooks/pos", content=body, headers={"x-square-hmacsha256-signature": sig}
                    )
                except httpx.HTTPError:
                    return
                if r.status_code == 200:
                    with lock:
                        acknowledged.append(r.json()["job_id"])
                i += 1

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    while len(acknowledged) < 150:
        threading.Event().wait(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stop.set()
    for t in threads:
        t.join()

    conn = sqlite3.connect(env["SYNCTOOL_DB"])
    stored = {row[0] for row in conn.execute("SELECT id FROM jobs")}
    assert set(acknowledged) <= stored
    assert conn.execute("SELECT count(*) FROM deliveries").fetchone()[0] == len(stored)

    # a restarted receiver carries on with the same database
    proc = start_receiver(port)
    try:
        body = samples.square_order_event("after-restart")
        sig = samples.square_signature(TEST_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"], POS_URL, body)
        r = httpx.post(f"http://127.0.0.1:{port}/webhooks/pos", content=body, headers={"x-square-hmacsha256-signature": sig})
        assert r.json()["status"] == "accepted"
    finally:
        proc.terminate()
        proc.wait()
