"""No input of any kind makes the receiver answer 500 (or crash)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from synctool.runtime import Runtime
from synctool.web.receiver import create_app

PATHS = [
    "/webhooks/donations",
    "/webhooks/pos",
    "/webhooks/mailing",
    "/webhooks/payments",
    "/webhooks/portal",
    "/health",
    "/webhooks/unknown",
]
HEADER_NAMES = [
    "Signature",
    "x-square-hmacsha256-signature",
    "Stripe-Signature",
    "Synctool-Signature",
    "content-type",
    "content-length",
]

json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)
bodies = st.one_of(
    st.binary(max_size=300),
    json_like.map(lambda v: __import__("json").dumps(v).encode()),
    st.fixed_dictionaries(
        {
            "event": st.sampled_from(["transaction.succeeded", "ticket.created", "refund.created"]),
            "id": st.text(max_size=8),
            "data": json_like,
        }
    ).map(lambda v: __import__("json").dumps(v).encode()),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass") if False else t.encode("utf-8", "ignore")),
)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "none.yaml").write_text("{}")
    environ = {
        "SYNCTOOL_DB": str(tmp / "fuzz.db"),
        "SYNCTOOL_CONFIG": str(tmp / "none.yaml"),
        "SYNCTOOL_KEYRING": "off",
        "POS_WEBHOOK_SIGNATURE_KEY": "k",
        "POS_WEBHOOK_NOTIFICATION_URL": "https://x/y",
        "PAYMENTS_WEBHOOK_SECRET": "s",
        "PORTAL_WEBHOOK_SECRET": "p",
        "DONATIONS_WEBHOOK_SECRET": "d",
        "MAILING_WEBHOOK_SECRET": "m",
    }
    with TestClient(create_app(Runtime.from_environ(None, environ)), raise_server_exceptions=False) as c:
        yield c


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.sampled_from(PATHS),
    method=st.sampled_from(["POST", "GET", "PUT", "DELETE"]),
    body=bodies,
    headers=st.dictionaries(
        st.sampled_from(HEADER_NAMES),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
        max_size=3,
    ),
    query=st.sampled_from(["", "?secret=", "?secret=x", "?a[b]=c"]),
)
def test_no_input_makes_a_500(client, path, method, body, headers, query):
    headers.pop("content-length", None)
    response = client.request(method, path + query, content=body, headers=headers)
    assert response.status_code < 500
    if response.status_code >= 400:
        assert set(response.json()) == {"error", "detail"}
