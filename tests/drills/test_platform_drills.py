"""Platforms, drilled with the real processes: the backup poll alone brings every lost sale and lost refund to the
CRM (before any reconcile), one platform whose API is down stops no other platform's poll, heal or reconcile, and an
installation that uses two platforms runs every line of crontab.example cleanly (README "Which platforms")."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from synctool.fakes import samples
from synctool.fakes.world import WEBHOOK_SECRETS
from tests.drills.conftest import POS_URL, ROOT, Site, crm_state
from tests.helpers import free_port

SALE_CENTS = 4000


def gift(site: Site, external_id: str) -> dict:
    found = [g for g in crm_state(site.world)["gifts"] if g["external_id"] == external_id]
    assert len(found) == 1, found  # one gift per sale, whatever was lost
    return found[0]


def pos(site: Site, body: bytes) -> None:
    sig = samples.square_signature(WEBHOOK_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"], POS_URL, body)
    r = site.post(None, "pos", body, {"x-square-hmacsha256-signature": sig})
    assert r.status_code == 200, r.text


def a_sale(site: Site, order_id: str) -> str:
    """A paid Square sale (its order and its card payment), as the register leaves it; returns the payment id."""
    square = site.world.square
    square.customers["CUSTD"] = {"id": "CUSTD", "given_name": "Ada", "family_name": "Drill", "email_address": "ada@example.org"}
    square.orders[order_id] = {
        "id": order_id, "location_id": "FPYCBCHYMXFK1", "state": "COMPLETED", "customer_id": "CUSTD",
        "created_at": "2026-11-20T18:30:00Z", "updated_at": "2026-11-20T18:30:00Z",
        "total_money": {"amount": SALE_CENTS, "currency": "USD"}, "tenders": [{"id": "t", "type": "CARD"}],
        "line_items": [{"name": "Tote bag", "quantity": "1"}],
    }  # fmt: skip
    payment_id = f"PAY{order_id}"
    square.payments[payment_id] = {"id": payment_id, "order_id": order_id, "status": "COMPLETED", "location_id": "FPYCBCHYMXFK1",
                                   "total_money": {"amount": SALE_CENTS, "currency": "USD"}}  # fmt: skip
    return payment_id


def givebutter_transaction(txn_id: str, email: str, amount: int = 30) -> dict:
    """A Givebutter transaction made a few minutes ago (inside the poll's first look back)."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    # a donor of their own (the sample's name and address under two e-mails would be one person held for review)
    txn.update(id=txn_id, email=email, amount=amount, transactions=[{**txn["transactions"][0], "amount": amount}],
               last_name=f"Donor{txn_id}", phone=None, address=None)  # fmt: skip
    txn.update(created_at=now, transacted_at=now, updated_at=now)
    return txn


def drain(site: Site) -> None:
    done = site.run("drain", "--max-seconds", "8")
    assert done.returncode == 0, done.stdout + done.stderr


def poll(site: Site) -> subprocess.CompletedProcess:
    polled = site.run("poll")
    assert polled.returncode == 0, polled.stdout + polled.stderr
    return polled


def test_a_refund_whose_completed_notice_was_lost_is_applied_by_the_poll(site: Site):
    site.serve()
    payment = a_sale(site, "SALEP")
    pos(site, samples.square_order_event("SALEP"))
    drain(site)
    assert gift(site, "pos_order_SALEP")["received_amount"] == 40.0
    pending = site.world.square.refund_payment(payment, 1500, refund_id="RFP", status="PENDING")
    pos(site, samples.square_refund_notice(pending))
    drain(site)  # a PENDING refund's job is skipped: it is applied once COMPLETED
    site.world.square.refunds["RFP"]["status"] = "COMPLETED"  # ... and that notice never arrives
    assert "1 queued" in poll(site).stdout
    drain(site)
    assert gift(site, "pos_order_SALEP")["received_amount"] == 25.0


def test_a_sale_whose_webhook_was_lost_is_polled_although_a_refund_job_names_it(site: Site):
    txn = givebutter_transaction("LOSTGB", "lost@example.org")
    site.world.givebutter.add_transaction(txn)  # its transaction.succeeded never arrives
    site.serve()
    refund = samples.givebutter(
        "refund.created", samples.givebutter_refund(txn, amount=10), event_id="refund-lostgb"
    )  # but its refund's does
    r = site.post(None, "donations", refund, {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]})
    assert r.status_code == 200, r.text
    drain(site)  # the refund waits for a gift synctool has never seen
    assert not [g for g in crm_state(site.world)["gifts"] if g["external_id"] == "donations_LOSTGB"]
    assert "1 queued" in poll(site).stdout
    drain(site)  # the gift, then the refund its job woke
    assert gift(site, "donations_LOSTGB")["received_amount"] == 20.0


def test_a_refund_that_arrives_before_its_sale_is_woken_when_the_gift_is_made(site: Site):
    site.serve()
    payment = a_sale(site, "SALEB")
    refund = site.world.square.refund_payment(payment, 1000, refund_id="RFB")  # names its return order, not the sale
    pos(site, samples.square_refund_notice(refund))
    drain(site)  # waits: the sale's gift is not made
    pos(site, samples.square_order_event("SALEB"))
    drain(site)  # the gift is made, and the waiting refund runs at once, not after refunds.recheck_s (300 s)
    assert gift(site, "pos_order_SALEB")["received_amount"] == 30.0


@pytest.mark.parametrize("outage", ["refused", "404"])
def test_one_platform_down_stops_no_other_platforms_poll_heal_or_reconcile(site: Site, outage: str):
    """Square's API and Stripe's are down; Givebutter's poll, heal and reconcile still run, and each command exits 1
    naming what failed, one line per platform."""
    down = f"http://127.0.0.1:{free_port()}" if outage == "refused" else site.world.url("crm") + "/no-such-api"
    site.world.givebutter.add_transaction(givebutter_transaction("POLLME", "pollme@example.org"))
    healed = givebutter_transaction("HEALME", "healme@example.org")
    registered = site.run("webhooks", "register", "--url", "https://sync.example.org", "--source", "donations")
    assert registered.returncode == 0, registered.stderr
    site.world.givebutter.record_delivery("transaction.succeeded", healed, failed=True)
    site.env.update(POS_API_BASE_URL=down, PAYMENTS_API_BASE_URL=down)

    polled = site.run("poll")
    assert polled.returncode == 1 and "poll donations: " in polled.stdout, polled
    failures = [line for line in polled.stderr.splitlines() if line.startswith("Error:")]
    assert len(failures) == 1 and failures[0].startswith("Error: poll pos failed: "), polled.stderr
    heal = site.run("webhooks", "heal", "--quiet")
    assert heal.returncode == 1 and heal.stderr.startswith("Error: webhooks heal payments failed: "), heal.stderr
    assert "1 replayed" in heal.stdout
    jobs = dict(site.rows("SELECT entity_id, status FROM jobs WHERE source = 'donations'"))
    assert set(jobs) == {"POLLME", "HEALME"}  # Givebutter's part of both ran to the end
    drain(site)
    reconciled = site.run("reconcile", "--from", "400d", "--quiet", "--json")
    assert reconciled.returncode == 1 and reconciled.stderr.startswith("Error: reconcile pos failed: "), reconciled.stderr
    report = json.loads(reconciled.stdout)
    assert report["sources"]["pos"]["status"] == "failed" and report["sources"]["donations"]["status"] == "ok"
    assert {r["external_id"]: r["status"] for r in report["items"]}["donations_POLLME"] == "matched"


CRONTAB = ROOT / "crontab.example"


def crontab_lines(folder: Path) -> list[str]:
    """crontab.example's commands, with its paths moved into ``folder``."""
    lines = [line for line in CRONTAB.read_text().splitlines() if re.match(r"^[\d*/]", line)]
    commands = [re.split(r"\s+", line, maxsplit=5)[5].replace(r"\%", "%") for line in lines]
    moved = {"/home/synctool/.synctool.env": folder / "synctool.env", "/var/log/synctool": folder / "log",
             "/var/backups/synctool": folder / "backups"}  # fmt: skip
    for old, new in moved.items():
        commands = [c.replace(old, str(new)) for c in commands]
    return commands


def test_an_installation_with_two_platforms_runs_every_cron_line_quietly(site: Site, tmp_path: Path):
    """Givebutter and Mailchimp in use, the others' secrets and addresses not set at all: every line of the crontab
    exits 0; drain, poll, heal and reconcile print nothing, and doctor says nothing of the platforms not in use."""
    from tests.test_admin import SmtpSink

    sink = SmtpSink()
    try:
        (tmp_path / "log").mkdir()
        (tmp_path / "backups").mkdir()
        (tmp_path / "config.yaml").write_text(
            f"database: {site.db_path}\nplatforms: [givebutter, mailchimp]\n"  # as `synctool init` writes them
            f"smtp: {{host: 127.0.0.1, port: {sink.server_address[1]}, security: none}}\n"
        )
        for name in list(site.env):
            if name.startswith(("POS_", "PAYMENTS_", "PORTAL_")):
                del site.env[name]
        env_file = tmp_path / "synctool.env"
        env_file.write_text(
            "".join(
                f"export {k}='{v}'\n"
                for k, v in site.env.items()
                if k.startswith(("CRM_", "DONATIONS_", "MAILING_", "SYNCTOOL_"))
            )
        )
        assert site.run("settings", "alert-recipients", "ops@example.org").returncode == 0
        bare = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"),
                "SYNCTOOL_CONFIG": site.env["SYNCTOOL_CONFIG"]}  # fmt: skip  # cron's environment is bare
        for command in crontab_lines(tmp_path):
            before = (tmp_path / "log" / "cron.log").read_text() if (tmp_path / "log" / "cron.log").exists() else ""
            done = subprocess.run(["bash", "-c", command], env=bare, cwd=tmp_path, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, (command, done.stdout, done.stderr, (tmp_path / "log" / "cron.log").read_text())
            printed = (tmp_path / "log" / "cron.log").read_text()[len(before) :]
            if " summary" in command:
                assert printed.startswith("summary sent to 1 recipient(s)"), printed
            elif " backup " in command:
                assert "crm_requests" in printed, printed  # its rows per table
            else:
                assert printed == "", (command, printed)
        doctor = site.run("doctor")
        assert not re.search(r"POS_|PAYMENTS_|PORTAL_|/webhooks/(pos|payments|portal)", doctor.stdout), doctor.stdout
        assert "in use: givebutter (donations), mailchimp (mailing)" in doctor.stdout
    finally:
        sink.shutdown()
        shutil.rmtree(tmp_path / "backups", ignore_errors=True)
