"""One real `synctool serve` for a host: two organisations under /o/NAME/ beside the single install at the root,
each delivery verified with its own secret and stored in its own database, then a SIGTERM that finishes and
closes every receiver (docs/organisations.md, "One receiver for all")."""

from __future__ import annotations

import signal
import sqlite3

import httpx

from tests.drills.conftest import Site, givebutter_delivery


def stored(path) -> list[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return [r[0] for r in conn.execute("SELECT entity_id FROM jobs ORDER BY entity_id")]
    finally:
        conn.close()


def test_one_serve_answers_every_organisation_with_its_own_secret_and_stops_cleanly(site: Site):
    home = site.folder / "home"
    for name in ("riverside", "hillside"):
        added = site.run("orgs", "add", name, "--platforms", "givebutter")
        assert added.returncode == 0, added.stderr
        secrets = home / "orgs" / name / "secrets.env"
        secrets.write_text(f"DONATIONS_WEBHOOK_SECRET={name}-donations-secret\n")
        secrets.chmod(0o600)
    proc = site.serve()

    def post(path: str, n: int, secret: str) -> httpx.Response:
        body, headers = givebutter_delivery(n)
        return httpx.post(f"{site.url}{path}", content=body, headers={**headers, "Signature": secret}, timeout=30)

    assert post("/o/riverside/webhooks/donations", 1, "riverside-donations-secret").json()["status"] == "accepted"
    assert post("/o/hillside/webhooks/donations", 2, "riverside-donations-secret").status_code == 401
    assert post("/o/hillside/webhooks/donations", 3, "hillside-donations-secret").json()["status"] == "accepted"
    assert post("/o/nowhere/webhooks/donations", 4, "riverside-donations-secret").status_code == 404
    assert site.give(5).json()["status"] == "accepted"  # the single install, at the root as before
    health = httpx.get(f"{site.url}/health").json()
    assert health["status"] == "ok" and "riverside" not in str(health) and "hillside" not in str(health)

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has shut down
    # every receiver was closed on the way out: its last connection checkpointed and removed its WAL file
    for name in ("riverside", "hillside"):
        assert not (home / "orgs" / name / "synctool.db-wal").exists(), name
    assert "Traceback" not in "".join(p.read_text() for p in site.folder.glob("serve-*.log"))
    assert stored(home / "orgs" / "riverside" / "synctool.db") == ["T1"]
    assert stored(home / "orgs" / "hillside" / "synctool.db") == ["T3"]
    assert [r[0] for r in site.rows("SELECT entity_id FROM jobs")] == ["T5"]
    assert not list(home.rglob("nowhere*"))
