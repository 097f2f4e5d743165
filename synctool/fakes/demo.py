"""`synctool demo`: the whole path against the local fakes, on loopback, with a temporary database.

Fakes of the CRM, Givebutter, Square and Mailchimp start in this process; so does the receiver. Signed
deliveries from every source go to the receiver (with a repeat, an ineligible POS order, a forged
signature, a recurring charge, a cancelled plan, and a refund from each of Givebutter, Square and Stripe),
ends with a reconcile that finds the one planted difference (a transaction whose webhook was lost, older than
the poll looks back), fixes it and reconciles again, the backup poll runs, a drain runs, and the report holds the sync log and what the CRM
fake now holds. CRM pacing is scaled down (the real 1.1 s gap would make the demo slow, not different).

``run`` names its steps: what the accounts hold first (``demo_seed.py``), the webhooks registered, the
deliveries (``demo_deliveries.py``), the poll and the healing of a lost delivery, the drain, the reconcile and
its fix, the Square payout, and the report.
"""

from __future__ import annotations

import copy
import logging
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from synctool import store
from synctool.fakes import samples
from synctool.fakes.crm import TAG_CATEGORY
from synctool.fakes.demo_deliveries import DONORBOX_SECRET, PUBLIC_URL, send
from synctool.fakes.demo_seed import seed
from synctool.fakes.server import BackgroundServer
from synctool.fakes.world import WEBHOOK_SECRETS, FakeWorld
from synctool.ops import webhooks
from synctool.ops.alerts import summary as daily_summary
from synctool.ops.donors import changes
from synctool.ops.poll import poll
from synctool.ops.reconcile import payouts, reconcile
from synctool.ops.refunds import list_refunds
from synctool.ops.syncs import SyncQuery, list_syncs
from synctool.platforms.runner import runner
from synctool.queue.worker import DrainSummary, drain
from synctool.runtime import Runtime
from synctool.web.receiver import create_app

DEMO_ENV = {
    "CRM_RATE_LIMIT_REQUESTS": "300",
    "CRM_RATE_LIMIT_WINDOW_S": "30",
    "CRM_MIN_INTERVAL_MS": "110",
    "SYNCTOOL_KEYRING": "off",
}
Say = Callable[[str], None]
#: PayPal's certificates fetched from its fake (issue 60)
PAYPAL_CONFIG = "paypal:\n  cert_url_prefixes: ['http://paypal.fake.invalid/v1/notifications/certs/']\n"


def run(say: Say = print, world: FakeWorld | None = None) -> dict[str, Any]:
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="synctool-demo-"))
    # the built-ins, and those in use only when named (stripe-donations, donorbox, paypal)
    (tmp / "config.yaml").write_text(
        "# written by synctool demo\nplatforms: [givebutter, square, mailchimp, stripe, portal, stripe-donations, donorbox, paypal]\n"
        + PAYPAL_CONFIG
    )
    world = world or FakeWorld()  # a caller may hand one in to read its traffic afterwards (the contract tests)
    receiver = BackgroundServer()
    try:
        rt = runtime(world, tmp)
        conn = store.connect(rt.db_path)
        logging.getLogger("synctool.receiver").setLevel(logging.ERROR)  # the forged delivery is expected
        seed(world, conn, rt, say)
        secrets = register_webhooks(conn, rt, say)
        receiver.start(create_app(rt))
        say(f"receiver on loopback at {receiver.url} (the platforms' {PUBLIC_URL}), fakes in process; database {rt.db_path}")
        sent = send(world, receiver.url, say, {**WEBHOOK_SECRETS, "DONORBOX_WEBHOOK_SECRET": DONORBOX_SECRET, **secrets})
        polled = poll_and_heal(world, conn, rt, say)
        drained = drain_and_look(world, conn, rt, say)
        found, clean = reconcile_and_fix(conn, rt, say)
        deposits = square_payouts(conn, rt, say)
        return report(world, conn, rt, sent=sent, polled=polled, drained=drained, found=found, clean=clean,
                      deposits=deposits, started=started)  # fmt: skip
    finally:
        if receiver is not None:
            receiver.stop()
        world.stop()


def runtime(world: FakeWorld, tmp: Path) -> Runtime:
    """The demo's own Runtime: the fakes in process, their keys, nothing taken from (or put in) the environment."""
    return Runtime.from_environ(
        tmp / "config.yaml",
        {
            **DEMO_ENV,
            **world.env(),
            # the portal is the organisation's own: its secret is agreed, not registered
            "PORTAL_WEBHOOK_SECRET": WEBHOOK_SECRETS["PORTAL_WEBHOOK_SECRET"],
            # Donorbox's Signature Secret is copied from its dashboard (its API registers nothing), and its API's
            # Basic auth takes the account's login e-mail beside the key
            "DONORBOX_WEBHOOK_SECRET": DONORBOX_SECRET,
            "DONORBOX_ACCOUNT_EMAIL": "demo@donorbox.invalid",
            "PAYPAL_CLIENT_ID": "demo-paypal-client-id",  # the fake takes any client id with its secret
            "SYNCTOOL_DB": str(tmp / "demo.db"),
        },
        transports=world.transports(),
    )


def register_webhooks(conn: store.Connection, rt: Runtime, say: Say) -> dict[str, str]:
    """As an operator would: `synctool webhooks register`; the fakes hand back the signing secrets."""
    registered = webhooks.register(conn, rt, PUBLIC_URL)
    say(
        f"webhooks registered at {PUBLIC_URL}: "
        + ", ".join(f"{r['source']} {r['action']}" for r in registered["registered"])
        + f"; secrets kept for this run: {', '.join(registered['to_export'])}"
    )
    return {name: rt.secrets.get(name) or "" for name in registered["to_export"]}


def poll_and_heal(world: FakeWorld, conn: store.Connection, rt: Runtime, say: Say) -> dict:
    """The backup poll, then `webhooks heal` for the delivery Givebutter could not make."""
    polled = poll(conn, rt, lookback="7d")
    for role, found in polled["sources"].items():
        say(f"poll {role}: {found['seen']} seen, {found['queued']} queued ({found['requests']} requests)")

    # Givebutter could not reach the receiver for one delivery; its activity log keeps what it sent
    lost = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    lost.update(id="Unreached3Xy", number="4216", first_name="Dorothy", last_name="Vaughan", email="dv@example.org", amount=20)
    world.givebutter.record_delivery("transaction.succeeded", lost, failed=True)
    healed = webhooks.heal(conn, rt, since="1d")
    say(f"webhooks heal: {healed['found']} failed deliveries reported by the platforms, {healed['replayed']} replayed, "
        f"{healed['skipped']} received already ({healed['requests']} platform requests)")  # fmt: skip
    return polled


def drain_and_look(world: FakeWorld, conn: store.Connection, rt: Runtime, say: Say) -> DrainSummary:
    """The drain, then what it made: soft credits, gifts not acknowledged by the CRM, donor news for review."""
    summary = drain(runner(rt), max_seconds=45)
    say(summary.line())

    credits = [g for g in world.crm.gifts.values() if g.get("gift_type_name") == "Soft Credit"]
    for g in credits:
        say(f"soft credit: CRM gift {g['id']} for constituent {g['constituent_id']} (${g['received_amount']:.2f}), "
            f"the related gift of {g['parent_gift_id']}")  # fmt: skip
    quiet = [g for g in world.crm.gifts.values() if g.get("ack_template_name") == "do_not_ack" and g not in credits]
    say(f"acknowledgements: {len(quiet)} gift(s) sent with do_not_ack (the platform's receipt is the thanks)")
    news = changes(conn)["items"]
    say(f"donor news: {len(news)} proposed change(s) for review: "
        + ", ".join(f"#{c['id']} {c['kind']} {c['value']} for constituent {c['constituent_id']}" for c in news)
        + " (synctool donors apply ID)")  # fmt: skip
    return summary


def reconcile_and_fix(conn: store.Connection, rt: Runtime, say: Say) -> tuple[dict, dict]:
    """Reconcile the last 30 days with ``--fix`` (the planted difference), drain the fix, and reconcile again."""
    found = reconcile(conn, rt, start="30d", end=time.strftime("%Y-%m-%d"), source="donations", fix=True)
    say(
        f"reconcile of the last 30 days: {found['differences']} difference(s) "
        + ", ".join(f"{i['external_id']} {i['status']} ({i['reason']})" for i in found["items"] if i["status"] != "matched")
        + "; --fix: "
        + ", ".join(f"{f['external_id']} {f['action']}" for f in found["fixed"])
    )
    say(drain(runner(rt), max_seconds=20).line())
    clean = reconcile(conn, rt, start="30d", end=time.strftime("%Y-%m-%d"), source="donations")
    say(f"reconcile again: {clean['differences']} difference(s), {clean['totals']['by_status']['matched']} matched")
    return found, clean


def square_payouts(conn: store.Connection, rt: Runtime, say: Say) -> list[dict]:
    """Today's Square payout taken apart: its sales, fees and refunds, and which have their gift."""
    deposits = payouts(conn, rt, start="1d", end=time.strftime("%Y-%m-%d", time.gmtime()), source="pos")["payouts"]
    for row in deposits:
        say(
            f"Square payout {row['payout_id']}: gross {row['gross']} - fees {row['fees']} - refunds {row['refunds']} "
            f"= net {row['net']} (the payout: {row['stated_net']}); {row['with_gift']}/{row['transactions']} with their gift"
            + (f"; {row['problem']}" if row["problem"] else "")
        )
    return deposits


# -- the report ------------------------------------------------------------------------------------------------------


def report(world: FakeWorld, conn: store.Connection, rt: Runtime, *, sent: list, polled: dict, drained: DrainSummary,
           found: dict, clean: dict, deposits: list, started: float) -> dict[str, Any]:  # fmt: skip
    """What `synctool demo` shows: the sync log, what the CRM fake holds, the refunds, the reconcile, the payout,
    the CRM's request counts and the daily summary e-mail."""
    log = list_syncs(conn, SyncQuery(limit=50, sort="created_at", order="asc"))["items"]
    mail = daily_summary(conn, rt, send=False)
    return {
        "deliveries": sent,
        "poll": polled,
        "drain": drained.line(),
        "sync_log": [sync_row(r) for r in log],
        "crm_constituents": crm_constituents(world),
        "crm_gifts": [gift_row(g) for g in world.crm.gifts.values()],
        "refunds": [{k: r[k] for k in REFUND_COLUMNS} for r in list_refunds(conn)["items"]],
        "reconcile": {"before": found["totals"]["by_status"], "fixed": found["fixed"], "after": clean["totals"]["by_status"]},
        "payouts": deposits,
        "crm_requests": world.crm.stats(),
        "summary_mail": mail["text"],
        "seconds": round(time.monotonic() - started, 1),
    }


class ConstituentLine(TypedDict):
    """A constituent the CRM fake holds, as the demo prints it."""

    id: int
    name: str
    tags: str


class GiftLine(TypedDict):
    """A gift the CRM fake holds, as the demo prints it."""

    id: int
    external_id: str
    amount: float
    deductible: float | None
    date: str
    fund: str | None
    paid_by: str | None
    donor: int


REFUND_COLUMNS = ("source", "refund_id", "gift_external_id", "amount", "amount_before", "amount_after", "state", "policy")


def sync_row(r: Mapping[str, object]) -> dict[str, object]:
    """A sync log row as the demo prints it."""
    return {
        "source": r["source"],
        "what": f"{r['entity_type']} {r['entity_id']}"[:34],
        "status": r["status"],
        "outcome": r["last_error"] or r["message"] or "",
        "crm_gift_id": r["crm_gift_id"],
    }


def crm_constituents(world: FakeWorld) -> list[ConstituentLine]:
    crm = world.crm
    tags = {k["id"]: k["name"] for k in TAG_CATEGORY["keywords"]}
    return [
        {
            "id": c["id"],
            "name": f"{c.get('first_name') or ''} {c.get('last_name') or ''}".strip(),
            "tags": ", ".join(tags[k] for k in sorted(crm.keywords.get(c["id"], set()))),
        }
        for c in crm.constituents.values()
    ]


def gift_row(g: dict) -> GiftLine:
    return {
        "id": g["id"],
        "external_id": g["external_id"],
        "amount": g["received_amount"],
        "deductible": g.get("deductible_amount"),
        "date": g["received_date"],
        "fund": g.get("fund_name"),
        "paid_by": g.get("payment_type_name"),
        "donor": g["constituent_id"],
    }
