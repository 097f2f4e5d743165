"""The operator's day: the daily summary e-mail, drain --watch, tables that fit, a quiet keyring."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from synctool import store
from synctool.fakes import samples
from synctool.platforms.runner import runner
from synctool.queue import jobs
from tests.conftest import TEST_SECRETS
from tests.flow_helpers import give, job, run_drain
from tests.helpers import runtime


def test_summary_counts_failures_fixes_and_health(coded, receiver, db, cli):
    from tests.test_fidelity import transaction

    ok = give(receiver, transaction(id="S1"))
    bad = give(receiver, transaction(id="S2", custom_fields=[{"field_id": 77, "title": "How?", "value": "Billboard"}]))
    run_drain()
    assert job(db, ok["job_id"])["status"] == "succeeded" and job(db, bad["job_id"])["status"] == "failed"
    result = cli("alerts", "summary", "--dry-run")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "1 synced, 1 failed, 1 need attention" in text
    assert "donations  1 succeeded, 0 skipped, 1 failed" in text
    assert f"synctool jobs retry {bad['job_id']}" in text and "Billboard" in text
    assert "CRM requests spent by sync jobs:" in text and "cron drain" in text and "crm mirror" in text
    report = json.loads(cli("alerts", "summary", "--dry-run", "--json").stdout)
    assert report["open_failures"] == 1 and report["per_source"]["donations"]["succeeded"] == 1
    for secret in TEST_SECRETS.values():
        assert secret not in text
    # sending needs recipients, then SMTP
    refused = cli("alerts", "summary")
    assert refused.exit_code == 2 and "no alert recipients" in refused.output


def test_summary_is_sent_as_text_and_html(world, db, cli, isolated):
    from tests.test_admin import SmtpSink

    with SmtpSink() as sink:
        (isolated / "config.yaml").write_text(f"smtp:\n  host: 127.0.0.1\n  port: {sink.server_address[1]}\n  security: none\n")
        cli("settings", "alert-recipients", "ops@example.org")
        result = cli("alerts", "summary")
        assert result.exit_code == 0, result.output
        [message] = sink.messages
    assert "Subject: synctool daily summary" in message and "text/plain" in message and "text/html" in message


def test_watch_claims_jobs_as_they_come_and_stops_cleanly(coded, receiver, db):
    from synctool.queue.worker import watch
    from tests.test_fidelity import transaction

    stop = threading.Event()
    runs = []
    worker = threading.Thread(target=lambda: runs.append(watch(runner(runtime()), stop, interval_s=0.1, max_seconds=2)))
    worker.start()
    try:
        time.sleep(0.3)
        first = give(receiver, transaction(id="W1"))
        deadline = time.monotonic() + 15
        while job(db, first["job_id"])["status"] != "succeeded" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert job(db, first["job_id"])["status"] == "succeeded"
    finally:
        stop.set()
        worker.join(timeout=30)
    assert not worker.is_alive() and runs[0].succeeded == 1
    assert (
        db.execute(
            "SELECT count(*) FROM jobs WHERE status = 'running' OR lease_owner IS NOT NULL AND status = 'queued'"
        ).fetchone()[0]
        == 0
    )


@pytest.mark.drill  # real processes: the drill tier
def test_watch_process_stops_on_sigterm_with_nothing_leased(world, db, env):
    with store.atomic(db):
        jobs.enqueue(
            db, source="donations", entity_type="campaign", entity_id="C1", payload={"note": "no delivery: fails at once"}
        )
    proc = subprocess.Popen(
        [sys.executable, "-m", "synctool.cli.main", "drain", "--watch", "--interval", "0.2"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    deadline = time.monotonic() + 60  # the job claimed: the watch is at work, its SIGTERM handler set before it
    while db.execute("SELECT attempts FROM jobs WHERE entity_id = 'C1'").fetchone()[0] == 0:
        assert time.monotonic() < deadline and proc.poll() is None, "the watch never claimed the job"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "SIGTERM" in err and "stopped" in err
    assert db.execute("SELECT count(*) FROM jobs WHERE status = 'running'").fetchone()[0] == 0


def test_no_keyring_warning_on_every_command(cli):
    result = cli("syncs", "list", "--json")
    assert result.exit_code == 0 and "keyring" not in result.output.lower() and "WARNING" not in result.output
    assert "no keyring backend" in cli("init").output
    doctor = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert doctor["keyring"]["status"] == "warn"


def test_tables_fit_an_80_column_terminal(db, cli, env):
    with store.atomic(db):
        for n in range(3):
            job_id = jobs.enqueue(
                db,
                source="donations",
                entity_type="transaction",
                entity_id=f"QiN7blzUhiwXBV{n:02d}",
                external_id=f"donations_QiN7blzUhiwXBV{n:02d}",
                email=f"donor{n}@example.org",
                amount="25.00",
            )
        db.execute(
            "UPDATE jobs SET status = 'failed', last_error = ? WHERE id = ?",
            ("CRM answered 422: Validation Failed: received_amount can't be blank " * 2, job_id),
        )
        # the widest statuses and sources: a succeeded donations row once pushed the message out for attempts
        db.execute("UPDATE jobs SET status = 'succeeded', message = 'gift created' WHERE entity_id = 'QiN7blzUhiwXBV00'")
    env["COLUMNS"] = "80"
    out = cli("syncs", "list").stdout
    header = next(line for line in out.splitlines() if "source" in line)
    for name in ("id", "when", "source", "entity", "status", "amount", "message"):
        assert name in header, header
    assert "…" not in header and max(len(line) for line in out.splitlines()) <= 80
    assert "attempts" not in header
    failed = next(line for line in out.splitlines() if " failed " in line)
    assert "CRM answered" in failed  # a failed record's error can be read (`syncs show` has all of it)
    assert "donations_" not in out  # external_id is not among the columns that fit; --json has it
    # an 8-character id from the table is enough for `syncs show`
    short = next(line.split()[0] for line in out.splitlines() if " donations " in line)
    assert cli("syncs", "show", short, "--json").exit_code == 0
    chosen = cli("syncs", "list", "--columns", "external_id,email").stdout
    assert "donations_QiN7blzUhiwXBV00" in chosen and "entity" not in chosen
    assert cli("syncs", "list", "--columns", "nope").exit_code == 2
    assert "external_id" in json.loads(cli("syncs", "list", "--json").stdout)["items"][0]


def test_donors_who_consent_go_back_to_the_mailing_list(coded, receiver, db, cli):
    from synctool.platforms.mailchimp.client import subscriber_hash
    from tests.flow_helpers import CUSTOMER, add_order, pos_event
    from tests.test_fidelity import transaction

    assert cli("mailing", "mappings", "set", "b7e21c0d94", "--label", "Newsletter", "--push-donors").exit_code == 0
    assert cli("mailing", "mappings", "set", "c0ffee1234", "--label", "Volunteers").exit_code == 0  # not opted in
    mc = coded.mailchimp
    # an unsubscribed reader stays unsubscribed: the push updates, it never re-subscribes
    mc.members["b7e21c0d94"] = {
        subscriber_hash("ada.lovelace@example.org"): {
            "id": subscriber_hash("ada.lovelace@example.org"),
            "email_address": "ada.lovelace@example.org",
            "status": "unsubscribed",
            "merge_fields": {},
            "tags": [],
        }
    }
    ada = give(receiver, transaction(id="MC1", communication_opt_in=True))
    give(receiver, transaction(id="MC2", email="quiet@example.org", first_name="Q", last_name="Uiet", communication_opt_in=False))
    order = add_order(
        coded,
        "MCPOS",
        "COMPLETED",
        customer={**CUSTOMER, "preferences": {"email_unsubscribed": False}},
        tenders=[{"id": "t", "type": "CARD"}],
    )
    assert order["customer_id"] == "CUST1"
    pos_event(receiver, samples.square_order_event("MCPOS"))
    run_drain()
    assert "1 mailing list push(es) queued" in job(db, ada["job_id"])["message"]
    audience = mc.members["b7e21c0d94"]
    lovelace = audience[subscriber_hash("Ada.Lovelace@Example.org")]
    assert lovelace["status"] == "unsubscribed" and lovelace["merge_fields"] == {"FNAME": "Ada", "LNAME": "Lovelace"}
    assert {t["name"] for t in lovelace["tags"]} >= {"Givebutter donor"}
    grace = audience[subscriber_hash("grace@example.org")]
    assert grace["status"] == "subscribed" and {t["name"] for t in grace["tags"]} == {"Square customer", "Front Desk"}
    assert subscriber_hash("quiet@example.org") not in audience and "c0ffee1234" not in mc.members
    pushes = db.execute("SELECT status, message FROM jobs WHERE target = 'mailing' ORDER BY created_at").fetchall()
    assert [p["status"] for p in pushes] == ["succeeded", "succeeded"]
    assert "on list Newsletter" in pushes[0]["message"]
    # the same donor again: the same member, nothing doubled
    give(receiver, transaction(id="MC3", communication_opt_in=True))
    run_drain()
    again = mc.members["b7e21c0d94"][subscriber_hash("ada.lovelace@example.org")]
    assert len(mc.members["b7e21c0d94"]) == 2 and len(again["tags"]) == len({t["name"] for t in again["tags"]})
    assert again["status"] == "unsubscribed"
