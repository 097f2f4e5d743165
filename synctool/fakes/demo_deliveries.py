"""The demo's deliveries: signed as each platform signs them and posted to the receiver on loopback, with what it
answered. Givebutter's (a repeat, a ticket, a recurring charge, a fundraiser's page, a new address, a refund, a
cancelled plan), Square's (a sale, an open order, a POS app payment and its refund, a forged signature), a Mailchimp
unsubscribe, the portal's pushes, Stripe's checkout and refund, a donation on the account's own Payment Link, and a
Donorbox donation."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from typing import Any

import httpx

from synctool.fakes import samples
from synctool.fakes.world import FakeWorld
from synctool.platforms.stripe import fake as stripe_fake
from synctool.platforms.stripe.webhook import sign

#: the address the fakes are told the receiver has; deliveries are signed for it and sent to loopback
PUBLIC_URL = "https://sync.demo.invalid"
#: Donorbox's Signature Secret for the demo's endpoint (an operator copies it from Donorbox's dashboard)
DONORBOX_SECRET = "demo-donorbox-signature-secret"


class Deliveries:
    """Posts to the receiver at ``url``, each signed with the platform's secret (``secrets``, by setting name)."""

    def __init__(self, url: str, say: Callable[[str], None], secrets: dict[str, str]) -> None:
        self.url, self.say, self.secrets = url, say, secrets
        self.results: list[dict[str, Any]] = []

    def post(self, label: str, path: str, body: bytes, headers: dict[str, str]) -> None:
        response = httpx.post(self.url + path, content=body, headers=headers, timeout=10)
        self.results.append({"delivery": label, "status": response.status_code, "answer": response.json()})
        self.say(f"  {label:<48} -> {response.status_code} {json.dumps(response.json())}")

    def givebutter(self, label: str, body: bytes) -> None:
        self.post(label, "/webhooks/donations", body, {"Signature": self.secrets["DONATIONS_WEBHOOK_SECRET"]})

    def square(self, label: str, body: bytes, key: str | None = None) -> None:
        """Square signs the URL it was given, whatever proxy is in between."""
        key = self.secrets["POS_WEBHOOK_SIGNATURE_KEY"] if key is None else key
        signature = samples.square_signature(key, PUBLIC_URL + "/webhooks/pos", body)
        self.post(label, "/webhooks/pos", body, {"x-square-hmacsha256-signature": signature, "content-type": "application/json"})

    def portal(self, label: str, push: dict) -> None:
        body = json.dumps(push).encode()
        self.post(label, "/webhooks/portal", body, {"Synctool-Signature": sign(body, self.secrets["PORTAL_WEBHOOK_SECRET"])})

    def stripe(self, label: str, body: bytes) -> None:
        self.post(label, "/webhooks/payments", body, {"Stripe-Signature": sign(body, self.secrets["PAYMENTS_WEBHOOK_SECRET"])})


def send(world: FakeWorld, url: str, say: Callable[[str], None], secrets: dict[str, str]) -> list[dict[str, Any]]:
    deliveries = Deliveries(url, say, secrets)
    say("deliveries:")
    givebutter(deliveries)
    square(deliveries, world)
    deliveries.post(
        "Mailchimp unsubscribe",
        f"/webhooks/mailing?secret={secrets['MAILING_WEBHOOK_SECRET']}",
        samples.mailchimp_unsubscribe(),
        {"content-type": "application/x-www-form-urlencoded"},
    )
    portal(deliveries)
    stripe(deliveries, world)
    donorbox(deliveries, world)
    paypal(deliveries, world)
    return deliveries.results


def _transaction(**changes: Any) -> dict:
    txn = copy.deepcopy(samples.GIVEBUTTER_TRANSACTION)
    txn.update(changes)
    return txn


def givebutter(d: Deliveries) -> None:
    txn_body = samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION, event_id="demo-evt-1")
    d.givebutter("Givebutter transaction.succeeded", txn_body)
    d.givebutter("Givebutter transaction.succeeded (repeat)", txn_body)
    ticket = {"id": "81347746A0020", "transaction_id": "QiN7blzUhiwXBVBr", "email": "Ada.Lovelace@Example.org",
              "title": "General Admission", "price": 10}  # fmt: skip
    d.givebutter("Givebutter ticket.created (same purchase)", samples.givebutter("ticket.created", ticket))
    monthly = _transaction(id="Monthly4Rt9x", number="4213", plan_id="pln_ada_monthly", amount=25, fee=1.03, fee_covered=0)
    d.givebutter("Givebutter transaction.succeeded (recurring)", samples.givebutter("transaction.succeeded", monthly))
    raised = _transaction(id="PeerPage8Zt", number="4214", first_name="Katherine", last_name="Johnson", email="kj@example.org",
                          amount=40, member_id=501, member_name="Jane Doe", address=None, phone=None)  # fmt: skip
    d.givebutter("Givebutter transaction.succeeded (Jane's page)", samples.givebutter("transaction.succeeded", raised))
    moved = _transaction(id="AdaMoved5Lp", number="4215", amount=15, address={"address_1": "3 Difference Engine Rd",
                         "city": "Berkeley", "state": "CA", "zipcode": "94704", "country": "USA"})  # fmt: skip
    d.givebutter("Givebutter transaction.succeeded (Ada, new address)", samples.givebutter("transaction.succeeded", moved))
    refund = samples.givebutter_refund(samples.GIVEBUTTER_TRANSACTION, amount=4)
    d.givebutter("Givebutter refund.created ($4 of Ada's $10)", samples.givebutter("refund.created", refund))
    plan = {"id": "pln_old_weekly", "first_name": "Alan", "last_name": "Turing", "email": "alan@example.org", "amount": 5,
            "frequency": "weekly"}  # fmt: skip
    d.givebutter("Givebutter plan.canceled", samples.givebutter("plan.canceled", plan))


def square(d: Deliveries, world: FakeWorld) -> None:
    d.square("Square order.updated COMPLETED", samples.square_order_event("ORDER-DONE-1"))
    d.square("Square order.created OPEN, no payment", samples.square_order_event("ORDER-OPEN-2", "OPEN", "order.created"))
    d.square("Square payment.created (POS app sale)", samples.square_payment_event("PAY-3", "POSAPP-3", 750))
    # a refund at the register: Square makes a return order, and the refund names it, not the sale (B7)
    refund = world.square.refund_payment("PAY-3", 250, refund_id="REF-3", status="PENDING", fee_cents=8)
    d.square("Square refund.created PENDING ($2.50)", samples.square_refund_notice(refund))
    d.square(
        "Square order.created (the refund's return order)",
        samples.square_order_event(refund["order_id"], event_type="order.created"),
    )
    refund["status"] = "COMPLETED"
    d.square("Square refund.updated COMPLETED ($2.50)", samples.square_refund_notice(refund, "refund.updated"))
    square_payout(world)
    d.square("Square order.updated, FORGED signature", samples.square_order_event("ORDER-EVIL"), key="not-the-key")


def square_payout(world: FakeWorld) -> None:
    """Today's payout: the sale, and the refund with its processing fee given back."""
    payout_day = time.strftime("%Y-%m-%d", time.gmtime())
    world.square.payouts["PO-SQ-1"] = {"id": "PO-SQ-1", "location_id": "L2GIFTSHOP001", "status": "PAID", "created_at": payout_day + "T00:00:00Z",
                                       "arrival_date": payout_day, "amount_money": {"amount": 750 - 22 - 250 + 8, "currency": "USD"}}  # fmt: skip
    world.square.payout_entries["PO-SQ-1"] = [
        {"id": "pe-1", "payout_id": "PO-SQ-1", "type": "CHARGE", "gross_amount_money": {"amount": 750, "currency": "USD"},
         "fee_amount_money": {"amount": 22, "currency": "USD"}, "net_amount_money": {"amount": 728, "currency": "USD"},
         "type_charge_details": {"payment_id": "PAY-3"}},
        {"id": "pe-2", "payout_id": "PO-SQ-1", "type": "REFUND", "gross_amount_money": {"amount": -250, "currency": "USD"},
         "fee_amount_money": {"amount": -8, "currency": "USD"}, "net_amount_money": {"amount": -242, "currency": "USD"},
         "type_refund_details": {"payment_id": "PAY-3", "refund_id": "REF-3"}},
    ]  # fmt: skip


def portal(d: Deliveries) -> None:
    user = {"id": "u-100", "email": "member@example.org", "first_name": "Mary", "last_name": "Somerville"}
    d.portal("Portal user.upsert", {"id": "push-1", "type": "user.upsert", "data": user})
    membership = {"id": "m-100", "user_id": "u-100", "level": "Individual", "status": "pending",
                  "start_date": time.strftime("%Y-%m-%d"), "renewal_date": time.strftime("%Y-12-31")}  # fmt: skip
    d.portal("Portal membership.upsert (pending)", {"id": "push-2", "type": "membership.upsert", "data": membership})
    payment = {"id": "pay-100", "user_id": "u-100", "type": "membership", "status": "pending", "gateway": "stripe",
               "amount_cents": 6000, "membership_id": "m-100"}  # fmt: skip
    d.portal("Portal payment.upsert (pending)", {"id": "push-3", "type": "payment.upsert", "data": payment})


def stripe(d: Deliveries, world: FakeWorld) -> None:
    session = {
        "id": "cs_test_demo",
        "object": "checkout.session",
        "amount_total": 6000,
        "currency": "usd",
        "payment_status": "paid",
        "status": "complete",
        "payment_intent": "pi_demo",
        "mode": "payment",
        "metadata": {"portal_payment_id": "pay-100", "portal_user_id": "u-100", "portal_membership_id": "m-100"},
    }
    account = world.fakes["stripe-donations"]  # Stripe's account (the payments fake): it holds the portal's session too
    stripe_fake.add_session(account, session)
    d.stripe("Stripe checkout.session.completed", samples.stripe_event("checkout.session.completed", session))
    charge = samples.stripe_charge("ch_demo", 6000, 6000, payment_intent="pi_demo", refund_id="re_demo")
    # no portal ids on the charge: stripe-donations claims it, finds the portal's session and hands it back
    d.stripe("Stripe charge.refunded (the whole $60)", samples.stripe_event("charge.refunded", charge))
    # a donation on the account's own Payment Link: one gift, its note naming the link (stripe-donations)
    gift = stripe_fake.add_charge(account, 4000, email="mj@example.org", name="Mary Jackson", payment_link="plink_demo_spring",
                                    payment_intent="pi_demo_donation", created=int(time.time()) - 3600)  # fmt: skip
    d.stripe(
        "Stripe charge.succeeded (a Payment Link donation)", json.dumps(stripe_fake.event_of("charge.succeeded", gift)).encode()
    )


def donorbox(d: Deliveries, world: FakeWorld) -> None:
    """A Donorbox donation made now, signed as Donorbox signs its custom webhooks."""
    from synctool.platforms.donorbox.fake import signed

    at = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    donor = {"first_name": "Grace", "last_name": "Hopper", "name": "Grace Hopper", "email": "grace@example.org"}
    donation = world.donorbox.donate(90001, "50.0", at, donor=donor)
    body, headers = signed(donation, d.secrets["DONORBOX_WEBHOOK_SECRET"], event="donation.created")
    d.post("Donorbox donation.created", "/webhooks/donorbox", body, headers)


def paypal(d: Deliveries, world: FakeWorld) -> None:
    """A donation through PayPal Checkout, signed with the fake's certificate for the webhook id PayPal gave."""
    fake = world.fakes["paypal"]
    capture = fake.donate("35.00", "mj@example.org", "Mary", "Jackson", capture_id="5CDEMO7PAYPAL0001", item="Annual appeal")
    body = fake.event("PAYMENT.CAPTURE.COMPLETED", capture)
    d.post("PayPal PAYMENT.CAPTURE.COMPLETED", "/webhooks/paypal", body, fake.sign(body, d.secrets["PAYPAL_WEBHOOK_ID"]))
