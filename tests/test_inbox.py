"""The inbox (inbox.py): every role's adapter verifies and parses a delivery, and the delivery and its job
are stored in one commit; a repeat is a duplicate, never a second job."""

from __future__ import annotations

import pytest

from synctool import platforms, store
from synctool.errors import InvalidInput, InvalidSignature
from synctool.fakes import samples
from synctool.ops.inbox import WebhookSecrets, accept, store_inbound
from synctool.platforms import adapter
from synctool.platforms.stripe.webhook import sign

SECRETS = WebhookSecrets(
    {
        "DONATIONS_WEBHOOK_SECRET": "gb",
        "POS_WEBHOOK_SIGNATURE_KEY": "sq",
        "MAILING_WEBHOOK_SECRET": "mc",
        "PAYMENTS_WEBHOOK_SECRET": "whsec_x",
        "PORTAL_WEBHOOK_SECRET": "portal-x",
    },
    settings={"POS_WEBHOOK_NOTIFICATION_URL": "https://sync.example.org/webhooks/pos"},
)


def signed(source: str) -> tuple[bytes, dict[str, str], dict[str, str]]:
    if source == "donations":
        return samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION), {"Signature": "gb"}, {}
    if source == "pos":
        body = samples.square_order_event("O1")
        return (
            body,
            {
                "X-Square-HmacSha256-Signature": samples.square_signature(
                    "sq", SECRETS.settings["POS_WEBHOOK_NOTIFICATION_URL"] or "", body
                )
            },
            {},
        )
    if source == "mailing":
        return samples.mailchimp_unsubscribe(), {}, {"secret": "mc"}
    if source == "payments":
        body = samples.stripe_event("checkout.session.completed", samples.stripe_session("p1", "u1", 100))
        return body, {"Stripe-Signature": sign(body, "whsec_x")}, {}
    body = b'{"id": "push-1", "type": "user.upsert", "data": {"id": "u1", "email": "u1@example.org"}}'
    return body, {"Synctool-Signature": sign(body, "portal-x")}, {}


#: the built-in platforms' webhook roles (a platform a package adds tests its own deliveries with synctool.testing)
BUILTIN = [p.webhook.role for p in platforms.registered() if p.name in platforms.DEFAULT_PLATFORMS and p.webhook]


@pytest.mark.registry
@pytest.mark.parametrize("role", BUILTIN)
def test_each_role_verifies_and_parses_once_into_its_event(role, db):
    body, headers, query = signed(role)
    inbound = accept(role, body, headers, query, SECRETS)
    assert inbound.role == role and inbound.event_id and inbound.job.entity_id
    event = adapter(role).parse_webhook(body)
    assert (event.id, event.type, event.job) == (inbound.event_id, inbound.event_type, inbound.job) and event.data is not None
    with pytest.raises(InvalidSignature):  # a changed body, or (for the shared-secret schemes) a forged secret
        if role in ("donations", "mailing"):
            accept(role, body, {k: "forged" for k in headers}, {k: "forged" for k in query}, SECRETS)
        else:
            accept(role, body + b" ", headers, query, SECRETS)
    first = store_inbound(db, inbound)
    assert first is not None and store_inbound(db, inbound) is None  # the repeat is a duplicate
    assert db.execute("SELECT count(*) FROM jobs WHERE delivery_id IS NOT NULL").fetchone()[0] == 1


@pytest.mark.registry
def test_unknown_role_and_unused_events(db):
    with pytest.raises(InvalidInput, match="unknown source 'fax'"):
        accept("fax", b"{}", {}, {}, SECRETS)
    body = samples.givebutter("contact.created", {"id": 4242})
    job_id = store_inbound(db, accept("donations", body, {"Signature": "gb"}, {}, SECRETS))
    row = db.execute("SELECT status, message, finished_at FROM jobs WHERE id = ?", (job_id,)).fetchone()
    assert row["status"] == "skipped" and "not synced" in row["message"] and row["finished_at"]


def test_inject_skips_the_signature_but_says_so(db):
    body, _, _ = signed("pos")
    inbound = accept("pos", body, {}, {}, WebhookSecrets(), verify=False)
    assert not inbound.verified and "no signature was checked" in inbound.note
    store_inbound(db, inbound)
    assert db.execute("SELECT verified FROM deliveries").fetchone()[0] == 0
    assert store.applied_migrations(db)
