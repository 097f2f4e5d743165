"""The receiver: signatures on raw bytes, ack after commit, dedup, and every rejection as JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
import stripe
from starlette.testclient import TestClient

from synctool import platforms
from synctool.config import Config
from synctool.fakes import samples
from synctool.platforms.square.webhook import is_valid_signature
from synctool.web.receiver import create_app
from tests.conftest import POS_URL, TEST_SECRETS
from tests.helpers import runtime

# Square's official test vectors (shared/reference/square-vectors.json, copied as data)
VECTORS = json.loads((Path(__file__).parent / "data/square-vectors.json").read_text())


@pytest.fixture
def client(secrets_env):
    with TestClient(create_app(runtime())) as c:
        yield c


def count(db, table: str) -> int:
    return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def post_pos(client, body: bytes, key: str = TEST_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"], url: str = POS_URL):
    return client.post(
        "/webhooks/pos",
        content=body,
        headers={"x-square-hmacsha256-signature": samples.square_signature(key, url, body), "content-type": "application/json"},
    )


class Counting(httpx.BaseTransport):
    """A transport that writes down each request before its fake answers it."""

    def __init__(self, inner: httpx.BaseTransport, asked: list[str]) -> None:
        self.inner, self.asked = inner, asked

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.asked.append(f"{request.method} {request.url}")
        return self.inner.handle_request(request)


def test_health_calls_nothing(world, transports):
    asked: list[str] = []
    for role, transport in list(transports.items()):  # the CRM's and every platform's, each to its fake
        transports[role] = Counting(transport, asked)
    assert {"crm", "donations", "pos", "mailing", "payments"} <= set(transports)
    crm_before = len(world.crm.requests)
    with TestClient(create_app(runtime())) as client:
        response = client.get("/health")
    assert response.status_code == 200 and response.json()["status"] == "ok" and len(response.json()["receiver"]) == 32
    assert asked == [] and len(world.crm.requests) == crm_before  # no CRM or platform request, not even a probe


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_square_official_vectors(vector):
    body = vector["request_body"].encode()
    assert (
        is_valid_signature(body, vector["signature_header"], vector["signature_key"], vector["notification_url"])
        is vector["valid"]
    )


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_square_vectors_through_the_receiver(vector, env, db):
    env["POS_WEBHOOK_SIGNATURE_KEY"] = vector["signature_key"]
    env["POS_WEBHOOK_NOTIFICATION_URL"] = vector["notification_url"]
    with TestClient(create_app(runtime())) as client:
        response = client.post(
            "/webhooks/pos",
            content=vector["request_body"].encode(),
            headers={"x-square-hmacsha256-signature": vector["signature_header"]},
        )
    if not vector["valid"]:
        assert response.status_code == 401
        assert count(db, "deliveries") == 0
    elif "event_id" in vector["request_body"]:
        assert response.status_code == 200 and response.json()["status"] == "accepted"
        job = db.execute("SELECT status, message FROM jobs").fetchone()
        assert job["status"] == "skipped" and "webhooks.test_notification" in job["message"]
    else:  # verified, but a notification without event_id cannot be de-duplicated
        assert response.status_code == 400 and response.json()["error"] == "missing event_id"


def test_square_order_accepted_then_duplicate(client, db):
    body = samples.square_order_event("ORDER1", event_id="ev-1")
    first = post_pos(client, body)
    assert first.status_code == 200 and first.json()["status"] == "accepted"
    job = db.execute("SELECT * FROM jobs WHERE id = ?", (first.json()["job_id"],)).fetchone()
    assert (job["source"], job["entity_type"], job["entity_id"], job["external_id"], job["status"]) == (
        "pos",
        "order",
        "ORDER1",
        "pos_order_ORDER1",
        "queued",
    )
    second = post_pos(client, body)
    assert second.status_code == 200 and second.json() == {"status": "duplicate"}
    assert count(db, "jobs") == 1 and count(db, "deliveries") == 1


def test_square_payment_event_queues_its_order(client, db):
    response = post_pos(client, samples.square_payment_event("PAY1", "ORDER9", cents=1999))
    job = db.execute("SELECT * FROM jobs WHERE id = ?", (response.json()["job_id"],)).fetchone()
    assert job["entity_id"] == "ORDER9" and job["amount"] == "19.99"


def test_square_signature_covers_raw_bytes(client, db):
    body = samples.square_order_event("ORDER2")
    pretty = json.dumps(json.loads(body), indent=2).encode()
    response = client.post(
        "/webhooks/pos",
        content=pretty,
        headers={
            "x-square-hmacsha256-signature": samples.square_signature(TEST_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"], POS_URL, body)
        },
    )
    assert response.status_code == 401
    assert response.json()["error"] == "Square signature does not verify"
    assert count(db, "deliveries") == 0


def test_square_without_key_is_503_not_accepted(env, db):
    env["POS_WEBHOOK_NOTIFICATION_URL"] = POS_URL
    with TestClient(create_app(runtime())) as client:
        response = client.post("/webhooks/pos", content=samples.square_order_event("O"))
    assert response.status_code == 503 and "POS_WEBHOOK_SIGNATURE_KEY" in response.json()["detail"]
    assert TEST_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"] not in response.text


def test_givebutter_transaction(client, db):
    body = samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION)
    response = client.post("/webhooks/donations", content=body, headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]})
    assert response.status_code == 200
    job = db.execute("SELECT * FROM jobs").fetchone()
    assert job["external_id"] == "donations_QiN7blzUhiwXBVBr" and job["amount"] == "10"
    assert job["email"] == "Ada.Lovelace@Example.org" and job["name"] == "Ada Lovelace"
    headers = json.loads(db.execute("SELECT headers FROM deliveries").fetchone()[0])
    assert "signature" not in headers  # the Givebutter header IS the secret
    assert bytes(db.execute("SELECT body FROM deliveries").fetchone()[0]) == body


@pytest.mark.parametrize("header", [None, "wrong-secret"])
def test_givebutter_bad_signature(client, db, header):
    headers = {"Signature": header} if header else {}
    response = client.post(
        "/webhooks/donations",
        headers=headers,
        content=samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION),
    )
    assert response.status_code == 401 and set(response.json()) == {"error", "detail"}
    assert count(db, "jobs") == 0


@pytest.mark.registry
@pytest.mark.parametrize("source", [p.webhook.role for p in platforms.in_use(Config()) if p.webhook and p.webhook.secret])
def test_a_platform_whose_secret_is_not_set_is_refused_never_accepted_unverified(db, env, source):
    """One secret policy for every platform (``Webhook.secret``): 503 naming the secret, nothing stored; the
    platform retries the delivery once the secret is set."""
    env.pop(platforms.webhooks()[source].secret, None)
    with TestClient(create_app(runtime())) as client:
        response = client.post(
            f"/webhooks/{source}", content=samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION)
        )
    assert response.status_code == 503 and platforms.webhooks()[source].secret in response.json()["detail"]
    assert db.execute("SELECT count(*) FROM deliveries").fetchone()[0] == 0


@pytest.mark.parametrize("event", ["refund.created", "plan.canceled", "contact.created", "made.up"])
def test_givebutter_other_events_stored_and_logged(client, db, event):
    data = {"id": "X1", "transaction_id": "T1", "amount": 5}
    response = client.post(
        "/webhooks/donations",
        content=samples.givebutter(event, data),
        headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]},
    )
    assert response.status_code == 200
    job = db.execute("SELECT * FROM jobs").fetchone()
    if event == "refund.created":  # drain applies it to its gift
        assert job["status"] == "queued" and job["external_id"] == "donations_T1" and job["amount"] == "-5.00"
    elif event == "plan.canceled":  # drain logs it for the daily summary
        assert job["status"] == "queued" and (job["entity_type"], job["entity_id"]) == ("plan", "X1")
    else:
        assert job["status"] == "skipped" and event in job["message"]


def test_mailchimp_get_validation_and_form_post(client, db):
    assert client.get("/webhooks/mailing").status_code == 200
    secret = TEST_SECRETS["MAILING_WEBHOOK_SECRET"]
    body = samples.mailchimp_unsubscribe()
    response = client.post(
        f"/webhooks/mailing?secret={secret}", content=body, headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 200 and response.json()["status"] == "accepted"
    job = db.execute("SELECT * FROM jobs").fetchone()
    assert (job["entity_type"], job["entity_id"], job["name"]) == ("unsubscribe", "jane.doe@example.org", "Jane Doe")
    again = client.post(f"/webhooks/mailing?secret={secret}", content=body)
    assert again.json() == {"status": "duplicate"}
    cleaned = client.post(f"/webhooks/mailing?secret={secret}", content=samples.MAILCHIMP_CLEANED_WIRE)
    assert cleaned.json()["status"] == "accepted"
    assert db.execute("SELECT entity_id FROM jobs WHERE entity_type = 'cleaned'").fetchone()[0] == "bounced.user@example.net"


def test_mailchimp_secret_required_when_configured(client, db):
    assert client.post("/webhooks/mailing", content=samples.mailchimp_unsubscribe()).status_code == 401
    assert client.post("/webhooks/mailing?secret=nope", content=samples.mailchimp_unsubscribe()).status_code == 401
    assert count(db, "deliveries") == 0


def test_mailchimp_not_a_form(client):
    secret = TEST_SECRETS["MAILING_WEBHOOK_SECRET"]
    response = client.post(f"/webhooks/mailing?secret={secret}", content=b'{"type": "unsubscribe"}')
    assert response.status_code == 400


def stripe_header(body: bytes, secret: str = TEST_SECRETS["PAYMENTS_WEBHOOK_SECRET"], timestamp=None) -> str:
    return stripe.WebhookSignature.generate_signature_header(body.decode(), secret, timestamp=timestamp)


def test_stripe_official_header_accepted_and_tampered_refused(client, db):
    body = samples.stripe_event(
        "payment_intent.succeeded", {"id": "pi_1", "object": "payment_intent", "status": "succeeded", "metadata": {}}
    )
    ok = client.post("/webhooks/payments", content=body, headers={"Stripe-Signature": stripe_header(body)})
    assert ok.status_code == 200 and ok.json()["status"] == "accepted"
    tampered = body.replace(b'"pi_1"', b'"pi_2"')
    bad = client.post("/webhooks/payments", content=tampered, headers={"Stripe-Signature": stripe_header(body)})
    assert bad.status_code == 401
    old = client.post(
        "/webhooks/payments", content=body, headers={"Stripe-Signature": stripe_header(body, timestamp=int(time.time()) - 301)}
    )
    assert old.status_code == 401 and "tolerance" in old.json()["error"]
    assert client.post("/webhooks/payments", content=body, headers={"Stripe-Signature": "garbage"}).status_code == 401


def test_stripe_any_v1_may_match(client):
    body = samples.stripe_event("checkout.session.completed", {"id": "cs_1", "payment_status": "paid"})
    good = stripe_header(body).split(",")
    rolled = stripe_header(body, secret="whsec_old").split(",")[1]
    header = ",".join([good[0], rolled, good[1], "v0=deadbeef"])
    assert client.post("/webhooks/payments", content=body, headers={"Stripe-Signature": header}).status_code == 200


def test_portal_push_signed(client, db):
    from synctool.platforms.stripe.webhook import sign

    body = json.dumps({"id": "push-1", "type": "user.upsert", "data": {"id": "u1", "email": "a@b.org"}}).encode()
    response = client.post(
        "/webhooks/portal", content=body, headers={"Synctool-Signature": sign(body, TEST_SECRETS["PORTAL_WEBHOOK_SECRET"])}
    )
    assert response.status_code == 200 and response.json()["status"] == "accepted"
    assert client.post("/webhooks/portal", content=body, headers={"Synctool-Signature": sign(body, "wrong")}).status_code == 401


def test_rejections_are_json(client, db):
    big = b"{" + b" " * (1024 * 1024 + 1) + b"}"
    r = client.post("/webhooks/donations", content=big)
    assert r.status_code == 413 and r.json()["error"] == "payload too large"
    r = client.post("/webhooks/donations", content=b"not json", headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]})
    assert r.status_code == 400 and r.json()["error"] == "body is not valid JSON"
    r = client.post(
        "/webhooks/donations",
        content=b'{"event": "transaction.succeeded", "data": {}}',
        headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]},
    )
    assert r.status_code == 400
    r = client.get("/webhooks/pos")
    assert r.status_code == 405 and r.json()["error"] == "method not allowed"
    r = client.put("/webhooks/mailing")
    assert r.status_code == 405
    assert client.get("/nowhere").json()["error"] == "not found"
    assert count(db, "deliveries") == 0


def test_database_that_cannot_commit_answers_503(secrets_env, db):
    with TestClient(create_app(runtime())) as client:
        assert post_pos(client, samples.square_order_event("A")).status_code == 200
        db.execute("ALTER TABLE jobs RENAME TO jobs_moved")
        response = post_pos(client, samples.square_order_event("B"))
        assert response.status_code == 503 and response.json()["error"].startswith("could not store")
    assert count(db, "deliveries") == 1  # B's delivery was rolled back with its job


def test_unopenable_database_answers_503(secrets_env, tmp_path, env):
    env["SYNCTOOL_DB"] = str(tmp_path)  # a directory
    with TestClient(create_app(runtime())) as client:
        assert post_pos(client, samples.square_order_event("A")).status_code == 503


def test_an_oversized_chunked_body_is_a_413_not_a_503(client, db):
    """No Content-Length: the body is read as it streams, refused once over the limit, and the rest read
    from the same stream (reading it a second time was Starlette's "Stream consumed": a 503)."""

    def chunks():
        for _ in range(40):
            yield b"x" * 64 * 1024  # 2.5 MB against the 1 MB limit

    r = client.post("/webhooks/donations", content=chunks(), headers={"Signature": TEST_SECRETS["DONATIONS_WEBHOOK_SECRET"]})
    assert r.status_code == 413 and r.json() == {"error": "payload too large", "detail": "the limit is 1048576 bytes"}
    assert count(db, "deliveries") == 0
