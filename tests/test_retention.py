"""`synctool prune` (invariant 10): raw webhook bodies go ``retention.raw_bodies_days`` after they arrived, unless a
job still needs them; their deliveries and jobs stay; ended sign-in links and sessions, old mail and sign-in
requests go; a reader of a dropped body is told so."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from synctool import store
from synctool.fakes import samples
from synctool.ops.deliveries import inject
from synctool.queue import jobs
from tests.conftest import ON_POSTGRES
from tests.helpers import runtime

DAYS = 730 / 19  # 20 deliveries, one every 38 days or so over two years


@pytest.fixture
def seeded(db) -> dict[str, dict]:
    """20 deliveries through the receiver's path (inject), aged over two years, their jobs succeeded but for a
    few old ones still needed (queued, running, failed, review, previewed) or not (failed and resolved, skipped).
    Returns delivery id -> {age, status, job}."""
    rt = runtime()
    now = store.utcnow()
    wanted = {19: "queued", 18: "failed", 17: "review", 16: "previewed", 15: "running", 14: "resolved", 13: "skipped"}
    seeded = {}
    for i in range(20):
        txn = {**samples.GIVEBUTTER_TRANSACTION, "id": f"txn-{i:02d}", "first_name": f"Donor{i}"}
        job_id = inject(db, rt, "donations", samples.givebutter("transaction.succeeded", txn, event_id=f"ev-{i:02d}"))["job_id"]
        delivery_id = jobs.get(db, job_id)["delivery_id"]
        age = round(i * DAYS)
        status = wanted.get(i, "succeeded")
        with store.atomic(db):
            db.execute(
                "UPDATE deliveries SET received_at = ?, headers = ? WHERE id = ?",
                (store.iso(now - timedelta(days=age)), json.dumps({"user-agent": "Givebutter"}), delivery_id),
            )
            db.execute(
                "UPDATE jobs SET status = ?, resolved_at = ?, amount = '25.00' WHERE id = ?",
                ("failed" if status == "resolved" else status, store.iso() if status == "resolved" else None, job_id),
            )
        seeded[delivery_id] = {"age": age, "status": status, "job": job_id, "event_id": f"ev-{i:02d}", "txn": txn["id"]}
    return seeded


def deliveries(db) -> dict[int, dict]:
    return {r["id"]: dict(r) for r in db.execute("SELECT * FROM deliveries")}


def droppable(seeded: dict[str, dict]) -> set[int]:
    """Older than 400 days, and no job that will read it."""
    return {d for d, s in seeded.items() if s["age"] > 400 and s["status"] in ("succeeded", "resolved", "skipped")}


def test_a_dry_run_names_what_would_go_and_changes_nothing(cli, db, seeded):
    before = deliveries(db)
    result = cli("prune", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "would drop (dry run)" in result.stdout and "dry run: nothing was changed" in result.stdout
    assert "kept 5 older raw bodies for the jobs that still need them" in result.stdout

    found = json.loads(cli("prune", "--dry-run", "--json").stdout)
    gone = droppable(seeded)
    assert found["dry_run"] is True and found["raw_bodies_days"] == 400
    assert found["counts"]["raw_bodies"] == len(gone) == 4 and found["kept_for_jobs"] == 5
    received = sorted(before[d]["received_at"] for d in gone)
    assert found["raw_bodies_received"] == {"from": received[0], "to": received[-1]}
    assert received[0][:10] in result.stdout and received[-1][:10] in result.stdout  # the date range, for people
    assert deliveries(db) == before


def test_prune_drops_only_the_old_bodies_no_job_needs_and_keeps_rows_and_jobs(cli, db, seeded, env):
    before = deliveries(db)
    jobs_before = [dict(r) for r in db.execute("SELECT * FROM jobs ORDER BY id")]
    result = cli("prune", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["counts"]["raw_bodies"] == 4

    after, gone = deliveries(db), droppable(seeded)
    assert after.keys() == before.keys()
    for delivery_id, row in after.items():
        kept = {k: row[k] for k in ("source", "event_id", "event_type", "received_at", "verified", "note")}
        assert kept == {k: before[delivery_id][k] for k in kept}
        if delivery_id in gone:
            assert row["body"] == b"" and row["headers"] == "{}" and row["body_pruned_at"], delivery_id
        else:  # younger than 400 days, or a job still needs it
            assert row["body"] == before[delivery_id]["body"] and row["body_pruned_at"] is None, seeded[delivery_id]
            assert json.loads(row["headers"]) == {"user-agent": "Givebutter"}
    needed = {s["status"] for d, s in seeded.items() if s["age"] > 400 and d not in gone}
    assert needed == {"queued", "running", "failed", "review", "previewed"}
    assert [dict(r) for r in db.execute("SELECT * FROM jobs ORDER BY id")] == jobs_before  # the sync log, whole
    if (
        not ON_POSTGRES
    ):  # SQLite's file as a backup would copy it: no trace of a dropped body (PostgreSQL's files are its server's)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        on_disk = Path(env["SYNCTOOL_DB"]).read_bytes()
        assert [d for d, s in seeded.items() if f'"id": "{s["txn"]}"'.encode() in on_disk] == sorted(set(seeded) - gone)

    again = json.loads(cli("prune", "--json").stdout)  # nothing more to drop
    assert again["counts"]["raw_bodies"] == 0 and again["kept_for_jobs"] == 5
    assert deliveries(db) == after


def test_retention_raw_bodies_days_is_read_from_config(cli, db, seeded, isolated):
    (isolated / "config.yaml").write_text("retention:\n  raw_bodies_days: 100\n")
    found = json.loads(cli("prune", "--dry-run", "--json").stdout)
    assert found["raw_bodies_days"] == 100
    assert found["counts"]["raw_bodies"] == sum(
        1 for s in seeded.values() if s["age"] > 100 and s["status"] in ("succeeded", "resolved", "skipped")
    )
    (isolated / "config.yaml").write_text("retention:\n  raw_bodies_days: 0\n")
    result = cli("prune", "--dry-run")
    assert result.exit_code != 0 and "retention.raw_bodies_days" in result.output


def test_prune_deletes_ended_sign_in_links_and_sessions_old_mail_and_requests(cli, db):
    now = store.utcnow()

    def ago(**kwargs) -> str:
        return store.iso(now - timedelta(**kwargs))

    def later(**kwargs) -> str:
        return store.iso(now + timedelta(**kwargs))

    with store.atomic(db):
        db.execute("INSERT INTO users (id, email, role, invited_at, updated_at) VALUES (1, 'sam@example.org', 'admin', ?, ?)",
                   (ago(days=90), ago(days=90)))  # fmt: skip
        links = {
            "expired-long-ago": (ago(days=3), ago(days=3), None, None),
            "used-long-ago": (ago(days=2), later(days=1), ago(days=2), None),
            "revoked-long-ago": (ago(days=2), later(days=1), None, ago(days=2)),
            "expired-just-now": (ago(minutes=20), ago(minutes=5), None, None),
            "fresh": (ago(minutes=1), later(minutes=14), None, None),
        }  # fmt: skip
        for token, (created, expires, used, revoked) in links.items():
            db.execute("INSERT INTO login_links (token_hash, user_id, created_at, expires_at, used_at, revoked_at)"
                       " VALUES (?, 1, ?, ?, ?, ?)", (token, created, expires, used, revoked))  # fmt: skip
        sessions = {
            "ended-long-ago": (ago(days=5), later(days=2), ago(days=3), None),
            "expired-long-ago": (ago(days=9), ago(days=2), None, None),
            "revoked-long-ago": (ago(days=5), later(days=2), ago(days=2), ago(days=2)),
            "ended-today": (ago(hours=3), later(days=2), ago(hours=1), None),
            "open": (ago(hours=3), later(days=2), None, None),
        }  # fmt: skip
        for session, (created, expires, ended, revoked) in sessions.items():
            db.execute("INSERT INTO staff_sessions (id_hash, user_id, csrf, created_at, expires_at, ended_at, revoked_at)"
                       " VALUES (?, 1, 'c', ?, ?, ?, ?)", (session, created, expires, ended, revoked))  # fmt: skip
        mail = {
            "sent-long-ago": (ago(days=40), ago(days=40), 1),
            "given-up-long-ago": (ago(days=40), None, 5),
            "sent-last-week": (ago(days=7), ago(days=7), 1),
            "waiting": (ago(days=40), None, 2),
        }
        for subject, (created, sent, attempts) in mail.items():
            db.execute("INSERT INTO outbox (kind, recipients, subject, created_at, send_after, attempts, sent_at)"
                       " VALUES ('sign_in', 'sam@example.org', ?, ?, ?, ?, ?)", (subject, created, created, attempts, sent))  # fmt: skip
        for at in (ago(days=2), ago(hours=30), ago(hours=2), ago(minutes=1)):
            db.execute("INSERT INTO sign_in_requests (at, email_hash, client_hash) VALUES (?, 'e', 'c')", (at,))

    found = json.loads(cli("prune", "--dry-run", "--json").stdout)["counts"]
    assert found == {"raw_bodies": 0, "login_links": 3, "staff_sessions": 3, "outbox": 2, "sign_in_requests": 2}
    assert db.execute("SELECT count(*) FROM login_links").fetchone()[0] == 5

    assert json.loads(cli("prune", "--json").stdout)["counts"] == found
    assert {r[0] for r in db.execute("SELECT token_hash FROM login_links")} == {"expired-just-now", "fresh"}
    assert {r[0] for r in db.execute("SELECT id_hash FROM staff_sessions")} == {"ended-today", "open"}
    assert {r[0] for r in db.execute("SELECT subject FROM outbox")} == {"sent-last-week", "waiting"}
    assert db.execute("SELECT count(*) FROM sign_in_requests").fetchone()[0] == 2
    assert json.loads(cli("prune", "--json").stdout)["counts"] == dict.fromkeys(found, 0)


@pytest.fixture
def log_file(tmp_path) -> Iterator[Path]:
    yield tmp_path / "synctool.log"
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, logging.FileHandler)]:
        root.removeHandler(handler)
        handler.close()


def test_a_dropped_body_is_named_as_such_wherever_it_is_read(cli, db, seeded, log_file):
    assert cli("--log-file", str(log_file), "prune", "--quiet").stdout == ""  # cron's: nothing on stdout
    assert "prune: dropped 4 raw bodies, 0 sign-in links" in log_file.read_text()  # one line in the log file
    resolved = next(d for d, s in seeded.items() if s["status"] == "resolved")
    job_id = seeded[resolved]["job"]
    day = db.execute("SELECT body_pruned_at FROM deliveries WHERE id = ?", (resolved,)).fetchone()[0][:10]
    said = f"the raw body of delivery {resolved} was dropped by retention on {day}"

    shown = cli("deliveries", "show", str(resolved))
    assert shown.exit_code == 0 and said in shown.stdout and seeded[resolved]["event_id"] in shown.stdout
    data = json.loads(cli("deliveries", "show", str(resolved), "--json").stdout)
    assert data["body"] == "" and data["body_pruned_at"] and said in data["body_dropped"]
    assert data["jobs"][0]["id"] == job_id
    kept = json.loads(cli("deliveries", "show", str(next(iter(seeded))), "--json").stdout)
    assert kept["body_dropped"] is None and "Donor0" in kept["body"]

    synced = cli("syncs", "show", job_id)
    assert synced.exit_code == 0 and said in synced.stdout and "25.00" in synced.stdout

    retried = cli("jobs", "retry", job_id)  # a resolved failure whose body went cannot be replayed from it
    assert retried.exit_code != 0 and said in retried.output and "afresh from the platform" in retried.output
    assert jobs.get(db, job_id)["status"] == "failed"


def test_a_job_whose_body_was_dropped_fails_saying_so(db, seeded):
    from synctool.ops.retention import prune
    from synctool.platforms.runner import runner
    from synctool.queue.worker import run_now

    prune(db, runtime())
    resolved = next(d for d, s in seeded.items() if s["status"] == "resolved")
    job_id = seeded[resolved]["job"]
    jobs.requeue_failed(db, job_id)  # as a retry that did not ask first would
    row = run_now(runner(runtime()), db, job_id)
    assert row is not None and row["status"] == "failed"
    assert f"the raw body of delivery {resolved} was dropped by retention" in row["last_error"]
