"""`synctool demo`: the whole path against the local fakes, on loopback, with a temporary database.

Fakes of the CRM, Givebutter, Square and Mailchimp start in this process; so does the receiver. Signed
deliveries from every source go to the receiver (with a repeat, an ineligible POS order, a forged
signature, a recurring charge, a cancelled plan, and a refund from each of Givebutter, Square and Stripe),
ends with a reconcile that finds the one planted difference (a transaction whose webhook was lost, older than
the poll looks back), fixes it and reconciles again, the backup poll runs, a drain runs, and the report holds the sync log and what the CRM
fake now holds. CRM pacing is scaled down (the real 1.1 s gap would make the demo slow, not different).
"""

from __future__ import annotations

import copy
import json
import logging
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

#: the address the fakes are told the receiver has; deliveries are signed for it and sent to loopback
PUBLIC_URL = "https://sync.demo.invalid"
DEMO_ENV = {
    "CRM_RATE_LIMIT_REQUESTS": "300",
    "CRM_RATE_LIMIT_WINDOW_S": "30",
    "CRM_MIN_INTERVAL_MS": "110",
    "SYNCTOOL_KEYRING": "off",
}


def run(say: Callable[[str], None] = print, world: Any = None) -> dict[str, Any]:
    from synctool import store
    from synctool.fakes import samples
    from synctool.fakes.server import BackgroundServer
    from synctool.fakes.world import WEBHOOK_SECRETS, FakeWorld
    from synctool.platforms.context import runner
    from synctool.platforms.stripe.webhook import sign
    from synctool.runtime import Runtime
    from synctool.web.receiver import create_app

    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="synctool-demo-"))
    (tmp / "config.yaml").write_text("# written by synctool demo\n")
    world = world or FakeWorld()  # a caller may hand one in to read its traffic afterwards (the contract tests)
    receiver = BackgroundServer()
    try:
        # the demo's own Runtime: the fakes in process, their keys, nothing taken from (or put in) the environment
        rt = Runtime.from_environ(
            tmp / "config.yaml",
            {
                **DEMO_ENV,
                **world.env(),
                # the portal is the organisation's own: its secret is agreed, not registered
                "PORTAL_WEBHOOK_SECRET": WEBHOOK_SECRETS["PORTAL_WEBHOOK_SECRET"],
                "SYNCTOOL_DB": str(tmp / "demo.db"),
            },
            transports=world.transports(),
        )
        conn = store.connect(rt.db_path)
        logging.getLogger("synctool.receiver").setLevel(logging.ERROR)  # the forged delivery is expected
        seed(world, conn, rt, say)

        # as an operator would: `synctool webhooks register`; the fakes hand back the signing secrets
        from synctool.ops.webhooks import register

        registered = register(conn, rt, PUBLIC_URL)
        say(
            f"webhooks registered at {PUBLIC_URL}: "
            + ", ".join(f"{r['source']} {r['action']}" for r in registered["registered"])
            + f"; secrets kept for this run: {', '.join(registered['to_export'])}"
        )
        secrets = {name: rt.secrets.get(name) or "" for name in registered["to_export"]}
        receiver.start(create_app(rt))
        say(f"receiver on loopback at {receiver.url} (the platforms' {PUBLIC_URL}), fakes in process; database {rt.db_path}")
        sent = send(world, receiver.url, say, samples, sign, {**WEBHOOK_SECRETS, **secrets})

        from synctool.ops.poll import poll

        polled = poll(conn, rt, lookback="7d")
        for role, found in polled["sources"].items():
            say(f"poll {role}: {found['seen']} seen, {found['queued']} queued ({found['requests']} requests)")

        # Givebutter could not reach the receiver for one delivery; its activity log keeps what it sent
        lost = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
        lost.update(
            id="Unreached3Xy", number="4216", first_name="Dorothy", last_name="Vaughan", email="dv@example.org", amount=20
        )
        world.givebutter.record_delivery("transaction.succeeded", lost, failed=True)
        from synctool.ops.webhooks import heal

        healed = heal(conn, rt, since="1d")
        say(f"webhooks heal: {healed['found']} failed deliveries reported by the platforms, {healed['replayed']} replayed, "
            f"{healed['skipped']} received already ({healed['requests']} platform requests)")  # fmt: skip

        from synctool.queue.worker import drain

        summary = drain(runner(rt), max_seconds=45)
        say(summary.line())

        credits = [g for g in world.crm.gifts.values() if g.get("gift_type_name") == "Soft Credit"]
        for g in credits:
            say(f"soft credit: CRM gift {g['id']} for constituent {g['constituent_id']} (${g['received_amount']:.2f}), "
                f"the related gift of {g['parent_gift_id']}")  # fmt: skip
        quiet = [g for g in world.crm.gifts.values() if g.get("ack_template_name") == "do_not_ack" and g not in credits]
        say(f"acknowledgements: {len(quiet)} gift(s) sent with do_not_ack (the platform's receipt is the thanks)")
        from synctool.ops.donors import changes

        news = changes(conn)["items"]
        say(f"donor news: {len(news)} proposed change(s) for review: "
            + ", ".join(f"#{c['id']} {c['kind']} {c['value']} for constituent {c['constituent_id']}" for c in news)
            + " (synctool donors apply ID)")  # fmt: skip

        from synctool.ops.reconcile import reconcile

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

        from synctool.ops.reconcile import payouts

        deposits = payouts(conn, rt, start="1d", end=time.strftime("%Y-%m-%d", time.gmtime()), source="pos")["payouts"]
        for row in deposits:
            say(
                f"Square payout {row['payout_id']}: gross {row['gross']} - fees {row['fees']} - refunds {row['refunds']} "
                f"= net {row['net']} (the payout: {row['stated_net']}); {row['with_gift']}/{row['transactions']} with their gift"
                + (f"; {row['problem']}" if row["problem"] else "")
            )

        from synctool.ops.syncs import SyncQuery, list_syncs

        log = list_syncs(conn, SyncQuery(limit=50, sort="created_at", order="asc"))["items"]
        from synctool.ops.alerts import summary as daily_summary
        from synctool.ops.refunds import list_refunds

        mail = daily_summary(conn, rt, send=False)
        crm = world.crm
        tags = {k["id"]: k["name"] for k in __import__("synctool.crm.fake", fromlist=["TAG_CATEGORY"]).TAG_CATEGORY["keywords"]}
        return {
            "deliveries": sent,
            "poll": polled,
            "drain": summary.line(),
            "sync_log": [
                {
                    "source": r["source"],
                    "what": f"{r['entity_type']} {r['entity_id']}"[:34],
                    "status": r["status"],
                    "outcome": r["last_error"] or r["message"] or "",
                    "crm_gift_id": r["crm_gift_id"],
                }
                for r in log
            ],
            "crm_constituents": [
                {
                    "id": c["id"],
                    "name": f"{c.get('first_name') or ''} {c.get('last_name') or ''}".strip(),
                    "tags": ", ".join(tags[k] for k in sorted(crm.keywords.get(c["id"], set()))),
                }
                for c in crm.constituents.values()
            ],
            "crm_gifts": [
                {
                    "id": g["id"],
                    "external_id": g["external_id"],
                    "amount": g["received_amount"],
                    "deductible": g.get("deductible_amount"),
                    "date": g["received_date"],
                    "fund": g.get("fund_name"),
                    "paid_by": g.get("payment_type_name"),
                    "donor": g["constituent_id"],
                }
                for g in crm.gifts.values()
            ],
            "refunds": [
                {
                    k: r[k]
                    for k in (
                        "source",
                        "refund_id",
                        "gift_external_id",
                        "amount",
                        "amount_before",
                        "amount_after",
                        "state",
                        "policy",
                    )
                }
                for r in list_refunds(conn)["items"]
            ],
            "reconcile": {"before": found["totals"]["by_status"], "fixed": found["fixed"], "after": clean["totals"]["by_status"]},
            "payouts": deposits,
            "crm_requests": crm.stats(),
            "summary_mail": mail["text"],
            "seconds": round(time.monotonic() - started, 1),
        }
    finally:
        if receiver is not None:
            receiver.stop()
        world.stop()


def seed(world, conn, rt, say) -> None:
    from synctool.fakes import samples
    from synctool.ops import crm, mappings
    from synctool.platforms.mailchimp import ops as mailing
    from synctool.platforms.square import settings as pos_settings

    crm_client = None
    from synctool.crm import environment as crm_environment

    crm_client = crm_environment.open_client(conn, rt)
    crm.refresh(conn, rt, client=crm_client)
    jane = crm_client.create_constituent(
        {"first_name": "Jane", "last_name": "Doe", "email_addresses": [{"address": "jane.doe@example.org"}]}
    )
    crm_client.add_keyword(jane["id"], 12221)  # Newsletter
    crm_client.close()
    mappings.set_type_default(conn, "donations:default", fund_id=2398, campaign_id=822)
    mappings.set_type_default(conn, "pos:default", fund_id=2402, ack_template_name="do_not_ack")  # Square sent a receipt
    world.givebutter.add_member(118722, {"id": 501, "first_name": "Jane", "last_name": "Doe", "email": "jane.doe@example.org"})
    mappings.set_payment_method(conn, "donations:card", payment_type_id=1509)
    mappings.set_payment_method(conn, "pos:CARD", payment_type_id=1509)
    mappings.set_payment_method(conn, "pos:CASH", payment_type_id=1507)
    mailing.set_mapping(conn, mailing.ListMappingBody(list_id="b7e21c0d94", label="Newsletter"))
    mailing.set_tag_rule(conn, mailing.TagRuleBody(list_id="b7e21c0d94", event="unsubscribe", add=[12222], remove=[12221]))
    pos_settings.write(conn, pos_settings.PosDefaultBody(email="walkin@example.org", first_name="Walk-in", last_name="Customer"))
    from synctool.platforms.portal import ops as portal

    portal.set_mapping(conn, "funds", "membership", fund_id=2400, campaign_name="Membership Drive")
    portal.set_mapping(conn, "gateways", "stripe", payment_type_id=1509)
    portal.set_mapping(conn, "levels", "*", membership_level_id=41)

    missed = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)  # its webhook was lost: only the poll finds it
    an_hour_ago = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 3600))
    missed.update(
        id="PollOnly7Kq2",
        first_name="Alan",
        last_name="Turing",
        email="alan@example.org",
        amount=50,
        created_at=an_hour_ago,
        transacted_at=an_hour_ago,
    )
    world.givebutter.add_transaction(missed)
    mappings.set_type_default(conn, "donations:recurring", fund_id=2398, gift_category_id=5940)  # "Recurring"
    paid_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600))
    world.square.payments["PAY-3"] = {"id": "PAY-3", "order_id": "POSAPP-3", "status": "COMPLETED", "location_id": "L2GIFTSHOP001",
                                      "created_at": paid_at, "total_money": {"amount": 750, "currency": "USD"}}  # fmt: skip
    planted = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)  # ten days ago, its webhook lost: older than the poll looks back
    ten_days_ago = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 10 * 86400))
    planted.update(id="Planted10dAgo", first_name="Mary", last_name="Jackson", email="mary.jackson@example.org", amount=35,
                   created_at=ten_days_ago, transacted_at=ten_days_ago)  # fmt: skip
    world.givebutter.add_transaction(planted)
    world.square.customers["CUST1"] = {
        "id": "CUST1",
        "given_name": "Grace",
        "family_name": "Hopper",
        "email_address": "grace@example.org",
    }
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    world.square.orders["ORDER-DONE-1"] = {
        "id": "ORDER-DONE-1",
        "location_id": "FPYCBCHYMXFK1",
        "state": "COMPLETED",
        "created_at": now,
        "customer_id": "CUST1",
        "total_money": {"amount": 2599, "currency": "USD"},
        "tenders": [{"id": "T1", "type": "CARD"}],
        "line_items": [{"name": "Membership card", "quantity": "1"}],
    }
    world.square.orders["ORDER-LOST-4"] = {  # its webhook never came: the backup poll finds it
        "id": "ORDER-LOST-4",
        "location_id": "FPYCBCHYMXFK1",
        "state": "COMPLETED",
        "created_at": now,
        "customer_id": "CUST1",
        "total_money": {"amount": 1800, "currency": "USD"},
        "tenders": [{"id": "T4", "type": "CARD"}],
        "line_items": [{"name": "Poster", "quantity": "1"}],
    }
    world.square.orders["ORDER-OPEN-2"] = {
        "id": "ORDER-OPEN-2",
        "location_id": "FPYCBCHYMXFK1",
        "state": "OPEN",
        "created_at": now,
        "total_money": {"amount": 1200, "currency": "USD"},
        "tenders": [],
    }
    world.square.orders["POSAPP-3"] = {
        "id": "POSAPP-3",
        "location_id": "L2GIFTSHOP001",
        "state": "COMPLETED",
        "created_at": now,
        "total_money": {"amount": 750, "currency": "USD"},
        "tenders": [{"id": "T3", "type": "CASH"}],
    }
    say(
        "seeded: CRM reference lists and mappings, a CRM constituent with a newsletter tag, POS orders, "
        "a Givebutter transaction and a Square sale whose webhooks were lost, Jane Doe fundraising on the campaign, no CRM "
        "acknowledgement for POS sales"
    )


def send(world, url: str, say, samples, sign, secrets: dict[str, str]) -> list[dict[str, Any]]:
    pos_url = PUBLIC_URL + "/webhooks/pos"  # Square signs the URL it was given, whatever proxy is in between
    results = []

    def post(label: str, path: str, body: bytes, headers: dict[str, str]) -> None:
        response = httpx.post(url + path, content=body, headers=headers, timeout=10)
        results.append({"delivery": label, "status": response.status_code, "answer": response.json()})
        say(f"  {label:<48} -> {response.status_code} {json.dumps(response.json())}")

    gb = {"Signature": secrets["DONATIONS_WEBHOOK_SECRET"]}
    txn_body = samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION, event_id="demo-evt-1")
    say("deliveries:")
    post("Givebutter transaction.succeeded", "/webhooks/donations", txn_body, gb)
    post("Givebutter transaction.succeeded (repeat)", "/webhooks/donations", txn_body, gb)
    post(
        "Givebutter ticket.created (same purchase)",
        "/webhooks/donations",
        samples.givebutter(
            "ticket.created",
            {
                "id": "81347746A0020",
                "transaction_id": "QiN7blzUhiwXBVBr",
                "email": "Ada.Lovelace@Example.org",
                "title": "General Admission",
                "price": 10,
            },
        ),
        gb,
    )

    monthly = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    monthly.update(id="Monthly4Rt9x", number="4213", plan_id="pln_ada_monthly", amount=25, fee=1.03, fee_covered=0)
    post(
        "Givebutter transaction.succeeded (recurring)",
        "/webhooks/donations",
        samples.givebutter("transaction.succeeded", monthly),
        gb,
    )
    raised = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    raised.update(id="PeerPage8Zt", number="4214", first_name="Katherine", last_name="Johnson", email="kj@example.org",
                  amount=40, member_id=501, member_name="Jane Doe", address=None, phone=None)  # fmt: skip
    post(
        "Givebutter transaction.succeeded (Jane's page)",
        "/webhooks/donations",
        samples.givebutter("transaction.succeeded", raised),
        gb,
    )
    moved = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    moved.update(id="AdaMoved5Lp", number="4215", amount=15, address={"address_1": "3 Difference Engine Rd", "city": "Berkeley",
                 "state": "CA", "zipcode": "94704", "country": "USA"})  # fmt: skip
    post(
        "Givebutter transaction.succeeded (Ada, new address)",
        "/webhooks/donations",
        samples.givebutter("transaction.succeeded", moved),
        gb,
    )
    post(
        "Givebutter refund.created ($4 of Ada's $10)",
        "/webhooks/donations",
        samples.givebutter("refund.created", samples.givebutter_refund(samples.GIVEBUTTER_TRANSACTION, amount=4)),
        gb,
    )
    post(
        "Givebutter plan.canceled",
        "/webhooks/donations",
        samples.givebutter(
            "plan.canceled",
            {
                "id": "pln_old_weekly",
                "first_name": "Alan",
                "last_name": "Turing",
                "email": "alan@example.org",
                "amount": 5,
                "frequency": "weekly",
            },
        ),
        gb,
    )

    def square(label: str, body: bytes, key: str = secrets["POS_WEBHOOK_SIGNATURE_KEY"]) -> None:
        post(
            label,
            "/webhooks/pos",
            body,
            {"x-square-hmacsha256-signature": samples.square_signature(key, pos_url, body), "content-type": "application/json"},
        )

    square("Square order.updated COMPLETED", samples.square_order_event("ORDER-DONE-1"))
    square("Square order.created OPEN, no payment", samples.square_order_event("ORDER-OPEN-2", "OPEN", "order.created"))
    square("Square payment.created (POS app sale)", samples.square_payment_event("PAY-3", "POSAPP-3", 750))
    # a refund at the register: Square makes a return order, and the refund names it, not the sale (B7)
    refund = world.square.refund_payment("PAY-3", 250, refund_id="REF-3", status="PENDING", fee_cents=8)
    square("Square refund.created PENDING ($2.50)", samples.square_refund_notice(refund))
    square(
        "Square order.created (the refund's return order)",
        samples.square_order_event(refund["order_id"], event_type="order.created"),
    )
    refund["status"] = "COMPLETED"
    square("Square refund.updated COMPLETED ($2.50)", samples.square_refund_notice(refund, "refund.updated"))
    payout_day = time.strftime("%Y-%m-%d", time.gmtime())
    world.square.payouts["PO-SQ-1"] = {"id": "PO-SQ-1", "location_id": "L2GIFTSHOP001", "status": "PAID", "created_at": payout_day + "T00:00:00Z",
                                       "arrival_date": payout_day, "amount_money": {"amount": 750 - 22 - 250 + 8, "currency": "USD"}}  # fmt: skip
    world.square.payout_entries["PO-SQ-1"] = [  # the sale, and the refund with its processing fee given back
        {"id": "pe-1", "payout_id": "PO-SQ-1", "type": "CHARGE", "gross_amount_money": {"amount": 750, "currency": "USD"},
         "fee_amount_money": {"amount": 22, "currency": "USD"}, "net_amount_money": {"amount": 728, "currency": "USD"},
         "type_charge_details": {"payment_id": "PAY-3"}},
        {"id": "pe-2", "payout_id": "PO-SQ-1", "type": "REFUND", "gross_amount_money": {"amount": -250, "currency": "USD"},
         "fee_amount_money": {"amount": -8, "currency": "USD"}, "net_amount_money": {"amount": -242, "currency": "USD"},
         "type_refund_details": {"payment_id": "PAY-3", "refund_id": "REF-3"}},
    ]  # fmt: skip
    square("Square order.updated, FORGED signature", samples.square_order_event("ORDER-EVIL"), key="not-the-key")
    post(
        "Mailchimp unsubscribe",
        f"/webhooks/mailing?secret={secrets['MAILING_WEBHOOK_SECRET']}",
        samples.mailchimp_unsubscribe(),
        {"content-type": "application/x-www-form-urlencoded"},
    )

    def portal_push(label: str, push: dict) -> None:
        body = json.dumps(push).encode()
        post(label, "/webhooks/portal", body, {"Synctool-Signature": sign(body, secrets["PORTAL_WEBHOOK_SECRET"])})

    portal_push(
        "Portal user.upsert",
        {
            "id": "push-1",
            "type": "user.upsert",
            "data": {"id": "u-100", "email": "member@example.org", "first_name": "Mary", "last_name": "Somerville"},
        },
    )
    portal_push(
        "Portal membership.upsert (pending)",
        {
            "id": "push-2",
            "type": "membership.upsert",
            "data": {
                "id": "m-100",
                "user_id": "u-100",
                "level": "Individual",
                "status": "pending",
                "start_date": time.strftime("%Y-%m-%d"),
                "renewal_date": time.strftime("%Y-12-31"),
            },
        },
    )
    portal_push(
        "Portal payment.upsert (pending)",
        {
            "id": "push-3",
            "type": "payment.upsert",
            "data": {
                "id": "pay-100",
                "user_id": "u-100",
                "type": "membership",
                "status": "pending",
                "gateway": "stripe",
                "amount_cents": 6000,
                "membership_id": "m-100",
            },
        },
    )
    stripe_body = samples.stripe_event(
        "checkout.session.completed",
        {
            "id": "cs_test_demo",
            "object": "checkout.session",
            "amount_total": 6000,
            "currency": "usd",
            "payment_status": "paid",
            "status": "complete",
            "payment_intent": "pi_demo",
            "mode": "payment",
            "metadata": {"portal_payment_id": "pay-100", "portal_user_id": "u-100", "portal_membership_id": "m-100"},
        },
    )
    post(
        "Stripe checkout.session.completed",
        "/webhooks/payments",
        stripe_body,
        {"Stripe-Signature": sign(stripe_body, secrets["PAYMENTS_WEBHOOK_SECRET"])},
    )
    refund_body = samples.stripe_event(
        "charge.refunded", samples.stripe_charge("ch_demo", 6000, 6000, payment_intent="pi_demo", refund_id="re_demo")
    )
    post(
        "Stripe charge.refunded (the whole $60)",
        "/webhooks/payments",
        refund_body,
        {"Stripe-Signature": sign(refund_body, secrets["PAYMENTS_WEBHOOK_SECRET"])},
    )
    return results
