"""Monthly donors (issue 53), drilled with the real processes: a year of Givebutter monthly donors through `synctool
serve`, `synctool drain` and `synctool poll`, against the served Givebutter and LGL fakes. Charges month by month,
failures (some retried and charged again, one donor failing twice), pauses and resumes, cancellations, changed
amounts; some plan webhooks lost (found by the poll) and some replayed; one drain killed (``kill -9``) after the CRM
stored a contact report and before synctool recorded it. At the end every giving donor holds one current membership
of the mapped group, every ended donor's membership is ended, there is exactly one contact report per failure, pause
and cancellation, `synctool plans list --json` and ``/api/plans`` agree with Givebutter's plans, and the chat
webhook (a real HTTPS server on loopback, with a trustme certificate the processes trust through ``SSL_CERT_FILE``)
heard each failure once.

``SYNCTOOL_PLANS_DONORS=500`` runs the issue's year of 500 donors by hand (36 in CI, to keep the drill short)."""

from __future__ import annotations

import json
import os
import signal
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import trustme

from synctool import store
from synctool.fakes.world import WEBHOOK_SECRETS
from tests.drills.conftest import Site, coded
from tests.drills.test_invitation_drills import run, settled, wait_for

DONORS = int(os.environ.get("SYNCTOOL_PLANS_DONORS", "36"))
GROUP, CALL, TEAM = 704, 2183, "tom@example.org"  # the LGL fake's "Monthly Donors", its "Call" type, Tom
JWT_SECRET = "drill-admin-jwt-secret-53-0123456789abcdef"
FOLLOWED = ("plan.failed", "plan.paused", "plan.canceled")
#: Givebutter's status words -> synctool's (the design's table)
STATUS = {"active": "active", "past_due": "failed", "paused": "paused", "cancelled": "canceled"}


class Chat:
    """A Slack-like incoming webhook over HTTPS on loopback: records each ``{"text": ...}`` it is posted."""

    def __init__(self, folder: Path):
        ca = trustme.CA()
        self.ca_file = folder / "chat-ca.pem"
        ca.cert_pem.write_to_path(str(self.ca_file))
        self.texts: list[str] = []
        heard = self.texts

        class Hook(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                heard.append(json.loads(body)["text"])
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"https://localhost:{self.server.server_address[1]}/services/T0DRILL/B0DRILL/not-a-real-secret"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Chat]:
    hook = Chat(tmp_path)
    yield hook
    hook.stop()


def in_process(site: Site, *args: str) -> str:
    """A synctool command through the CLI in this process (as ``coded`` runs its set-up)."""
    from typer.testing import CliRunner

    from synctool.cli.main import app
    from synctool.console import AppContext

    result = CliRunner().invoke(app, list(args), obj=AppContext(environ=site.env, transports={}), catch_exceptions=False)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


def drain_all(site: Site, env: dict[str, str] | None = None) -> None:
    """Drain until nothing is due, as cron's next minutes would (at 500 donors a month's work outlasts one drain)."""
    for _ in range(40):
        run(site, "drain", "--max-seconds", "25", env=env)
        if not site.rows("SELECT 1 FROM jobs WHERE status IN ('queued', 'running') AND run_after <= ? LIMIT 1", store.iso()):
            break
    settled(site)


def lease_lapses(site: Site) -> None:
    expires = max((e for (e,) in site.rows("SELECT lease_expires FROM jobs WHERE status = 'running'")), default=None)
    if expires:
        time.sleep(max(0.0, (datetime.fromisoformat(expires) - datetime.now(UTC)).total_seconds()) + 0.2)


def test_a_year_of_monthly_donors_with_a_killed_drain_ends_in_agreement(site: Site, chat: Chat):
    gb, crm = site.world.givebutter, site.world.crm
    site.env.update(SSL_CERT_FILE=str(chat.ca_file), ADMIN_JWT_SECRET=JWT_SECRET)
    # a chat host beyond Slack's and Teams' is named in the config file, as an operator names a self-hosted one
    (site.folder / "config.yaml").write_text("organisation:\n  chat_webhook_hosts: [127.0.0.1, localhost]\n")
    coded(site)
    in_process(site, "mappings", "types", "set", "donations:recurring", "--fund-id", "2398", "--gift-category-id", "5940")
    in_process(site, "mappings", "plans", "set", "--group", str(GROUP), "--report-type", str(CALL), "--team-member", TEAM)
    in_process(site, "settings", "plans-chat-webhook", chat.url)
    in_process(site, "users", "invite", "viewer@example.org", "--role", "viewer")
    said = in_process(site, "users", "token", "viewer@example.org")
    token = next(line.split()[1] for line in said.splitlines() if line.startswith("token"))
    site.serve(args=("--admin-api",))

    hook = httpx.Client(timeout=30)
    signature = {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"], "Content-Type": "application/json"}

    delivered: set[str] = set()

    def deliver(body: bytes) -> None:
        delivered.add(json.loads(body)["id"])
        r = hook.post(f"{site.url}/webhooks/donations", content=body, headers=signature)
        assert r.status_code == 200, r.text

    gb.deliver = deliver
    began = datetime.now(UTC).replace(microsecond=0) - timedelta(days=372)
    month = lambda m, n: began + timedelta(days=30 * m, hours=n % 20, minutes=n)  # noqa: E731

    # -- the year's script, by donor number: who fails (and when), pauses, resumes, cancels, changes amount ------
    n_fail = {n: 3 + n % 6 for n in range(DONORS) if n % 5 == 1}  # fails that month, charged again the next
    twice = {n for n in n_fail if n % 3 == 1}  # ...and fails again three months later
    paused = {n: 4 + n % 3 for n in range(DONORS) if n % 7 == 2}  # paused that month
    resumed = {n for n in paused if n % 2 == 0}  # resumed three months later
    canceled = {n: 5 + n % 5 for n in range(DONORS) if n % 6 == 3}  # canceled that month
    changed = {n: 2 + n % 4 for n in range(DONORS) if n % 8 in (0, 4)}  # a new amount that month
    lost = {n for n in range(DONORS) if n % 10 in (1, 3)}  # their failure or cancellation webhook never arrives
    plan_of: dict[int, dict] = {}

    for n in range(DONORS):
        plan_of[n] = gb.create_plan(f"donor{n}@example.org", "Donor", f"Monthly{n}", 10 + 5 * (n % 4), at=month(0, n))
    drain_all(site)

    killed = False
    for m in range(1, 12):
        lost_now = False
        for n, plan in plan_of.items():
            pid, status = plan["id"], gb.plans[plan["id"]]["status"]
            if status == "cancelled":
                continue
            if changed.get(n) == m:
                gb.change_plan(pid, at=month(m, n), amount=float(plan["amount"]) + 5)
            if canceled.get(n) == m:
                gb.cancel_plan(pid, at=month(m, n) + timedelta(hours=1), lost=n in lost)
                lost_now |= n in lost
            elif paused.get(n) == m:
                gb.pause_plan(pid, at=month(m, n) + timedelta(hours=1))
            elif n in resumed and paused[n] + 3 == m:
                gb.resume_plan(pid, at=month(m, n))
                gb.charge_plan(pid, at=month(m, n) + timedelta(hours=2))
            elif status in ("active", "past_due") and (n_fail.get(n) == m or (n in twice and n_fail[n] + 3 == m)):
                gb.fail_plan(pid, at=month(m, n) + timedelta(hours=1), lost=n in lost and m == n_fail[n])
                lost_now |= n in lost and m == n_fail[n]
            elif status in ("active", "past_due"):
                gb.charge_plan(pid, at=month(m, n) + timedelta(hours=2))  # a failed plan's retry takes
        if lost_now:  # the backup poll finds what the lost webhooks said (a plan with a job waiting: the next poll)
            polled = json.loads(run(site, "poll", "--json"))["sources"]["donations"]
            assert polled["plans_seen"] == DONORS, polled
            drain_all(site)  # as cron would: a poll job left waiting holds its plan from the next poll
        if m == 4:  # replays of every follow-up webhook so far (Givebutter retries a delivery it thinks failed)
            for envelope in [e for e in gb.announced if e["event"] in FOLLOWED and e["id"] in delivered]:
                deliver(json.dumps(envelope).encode())
        if m == 5 and not killed:
            killed = kill_a_drain_mid_report(site)
        elif m % 3 == 2 or m == 11:
            drain_all(site)
    assert killed
    # a last replay of everything followed up, and a last poll: nothing new
    for envelope in [e for e in gb.announced if e["event"] in FOLLOWED and e["id"] in delivered]:
        deliver(json.dumps(envelope).encode())
    run(site, "poll")  # the next charges' dates (no webhook carries them)
    drain_all(site)
    polled = json.loads(run(site, "poll", "--json"))["sources"]["donations"]
    hook.close()

    # -- what the CRM holds ------------------------------------------------------------------------------------
    cids = {r["address"]: str(r["item_id"]) for r in list(crm.contacts["email_addresses"].values())}
    assert len(crm.constituents) == DONORS
    members = [g for g in crm.group_memberships.values() if g["group_id"] == GROUP]
    for n, plan in plan_of.items():
        cid = cids[plan["email"]]
        theirs = [g for g in members if str(g["constituent_id"]) == cid]
        giving = gb.plans[plan["id"]]["status"] in ("active", "past_due")
        if giving:  # one current membership (a resumed donor's ended one beside it)
            assert [g["is_current"] for g in theirs].count(True) == 1, (n, theirs)
            assert all(g["date_end"] for g in theirs if not g["is_current"]), (n, theirs)
        else:
            assert theirs and not any(g["is_current"] for g in theirs) and all(g["date_end"] for g in theirs), (n, theirs)
    followed = Counter(e["data"]["id"] for e in gb.announced if e["event"] in FOLLOWED)
    reports: Counter[int] = Counter()
    for r in crm.contact_reports.values():
        assert r["contact_report_type_id"] == CALL, r
        reports[next(p for p, plan in plan_of.items() if plan["id"] in r["text"])] += 1
    assert {plan_of[n]["id"]: c for n, c in reports.items()} == dict(followed), (reports, followed)
    gifts = Counter(g["external_id"] for g in crm.gifts.values())
    assert gifts == Counter(f"donations_{t}" for t in gb.transactions), "one gift per charge"
    # the killed drain's report was taken after a read, not sent again
    posts = Counter(json.dumps(r["body"], sort_keys=True) for r in crm.requests if r["method"] == "POST" and r["path"].endswith("/contact_reports"))  # fmt: skip
    assert max(posts.values()) == 1 and sum(posts.values()) == len(crm.contact_reports), posts

    # -- what synctool says, and what the chat heard -------------------------------------------------------------
    wanted = {p["id"]: (STATUS[p["status"]], f"{float(p['amount']):.2f}") for p in gb.plans.values()}
    listed = json.loads(run(site, "plans", "list", "--json"))
    assert {p["plan_id"]: (p["status"], p["amount"]) for p in listed["items"]} == wanted
    api = httpx.get(f"{site.url}/api/plans", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert api.status_code == 200, api.text
    page = api.json()
    assert {p["plan_id"]: (p["status"], p["amount"]) for p in page["items"]} == wanted
    assert page["counts"] == listed["counts"]
    failures = Counter(e["data"]["id"] for e in gb.announced if e["event"] == "plan.failed")
    heard = Counter(next(pid for pid in gb.plans if pid in t) for t in chat.texts if "failed to charge" in t)
    assert heard == failures, (heard, failures)
    assert all(chat.url.split("/services/")[1] not in t for t in chat.texts)
    assert site.rows("SELECT count(*) FROM chat_notices WHERE sent_at IS NULL") == [(0,)]
    assert polled["plans_queued"] == 0, polled


def kill_a_drain_mid_report(site: Site) -> bool:
    """A drain killed after the CRM stored a contact report and before synctool recorded it: the CRM answers that
    POST 10 s late, the drain (waiting 30 s) is killed meanwhile; the next drain reads the donor's reports once and
    takes the one carrying its marker (and so for any other report a worker was writing when the kill fell)."""
    crm = site.world.crm
    crm.timeout_sleep_s = 10
    crm.faults.append({"mode": "commit_timeout", "count": 1, "method": "POST", "path": "/contact_reports"})
    mark = len(crm.requests)
    drain = site.drain(30, env={"CRM_TIMEOUT_S": "30"})
    posted = lambda: [r for r in list(crm.requests)[mark:] if r["method"] == "POST" and r["path"].endswith("/contact_reports")]  # noqa: E731
    wait_for("a contact report POST", posted, timeout=20)
    slow = posted()[0]["body"]
    wait_for("the CRM stored it", lambda: any(r["text"] == slow["text"] for r in list(crm.contact_reports.values())))
    os.kill(drain.pid, signal.SIGKILL)
    drain.wait()
    crm.timeout_sleep_s = 1.5
    key = slow["text"].rsplit("[synctool ", 1)[1].rstrip("]\n ")
    assert site.rows("SELECT state, crm_report_id FROM crm_contact_reports WHERE key = ?", key) == [("pending", None)]
    # the drain's other workers may have been cut short mid-report too (where the kill fell is thread timing): each
    # report left open is looked for once, the slow one among them
    [(left_open,)] = site.rows("SELECT count(*) FROM crm_contact_reports WHERE state = 'pending'")
    lease_lapses(site)
    reads = len([r for r in crm.requests if r["method"] == "GET" and r["path"].endswith("/contact_reports")])
    drain_all(site, env={"CRM_TIMEOUT_S": "30"})  # a read slow on a loaded machine: not asked twice
    assert len([r for r in crm.requests if r["method"] == "GET" and r["path"].endswith("/contact_reports")]) == reads + left_open
    [(state, crm_id)] = site.rows("SELECT state, crm_report_id FROM crm_contact_reports WHERE key = ?", key)
    assert state == "done" and crm_id in crm.contact_reports
    return True
