"""A sixth money platform, defined entirely in this file, as a contributor (or an outside package) would add
one: a signed webhook that becomes one CRM gift, its config section, mapping keys, a reconcile listing, an API
client with a connection test, and its fake. Registered through ``platforms.register`` (what the entry point
group ``synctool.platforms`` does for a package) and named in ``platforms:`` (a platform not built in is in use
only then), it must work through the receiver, drain, ``mappings ... set``,
``reconcile``, ``backfill --dry-run``, ``doctor`` and ``test-connections`` with no edit outside this file.

This module is the platform: its hooks are the functions below, typed as the contract says.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator, Mapping
from datetime import date
from decimal import Decimal
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from synctool import mappings, platforms
from synctool.crm.constituents import Person
from synctool.errors import ConfigError, InvalidSignature
from synctool.fakes.transport import AppTransport
from synctool.platforms.job import Job
from synctool.platforms.reconcile import Expected
from synctool.platforms.webhook import Event, JobSpec, WebhookSecrets, parse_json_object
from synctool.queue.jobs import Outcome
from tests.flow_helpers import run_drain
from tests.helpers import runtime

ROLE = "tiny"
SECRET = "tiny-signing-secret"
GIFTS = [
    {"id": "K1", "amount": "25.00", "email": "ida@example.org", "first_name": "Ida", "last_name": "Wells", "date": "2026-10-05"},
    {"id": "K2", "amount": "40.00", "email": "ida@example.org", "first_name": "Ida", "last_name": "Wells", "date": "2026-10-06"},
]


# -- its config section ---------------------------------------------------------------------------------


class TinyConfig(BaseModel):
    base_url: str = "https://api.tiny.example/v1"
    default_fund_id: int | None = None


# -- its webhook adapter (platforms.webhook.Adapter) -------------------------------------------------------

KEPT_HEADERS = ("x-tiny-signature", "content-type")


def verify_webhook(
    body: bytes, headers: Mapping[str, str], query: Mapping[str, str], secrets: WebhookSecrets, *, now: float | None = None
) -> None:
    secret = secrets.get("TINY_WEBHOOK_SECRET")
    if not secret:
        raise ConfigError("TINY_WEBHOOK_SECRET", "environment", "not set")
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, headers.get("x-tiny-signature", "")):
        raise InvalidSignature("invalid signature", "X-Tiny-Signature is HMAC-SHA256 of the body")


def parse_webhook(body: bytes) -> Event:
    event = parse_json_object(body)
    gift = event.get("gift") or {}
    job = JobSpec("gift", str(gift.get("id")), external_id=f"tiny_{gift.get('id')}", email=gift.get("email"))
    return Event(str(event.get("id")), "gift.created", job, gift)


# -- its job handler -----------------------------------------------------------------------------------


def tiny_gift(event: Event, job: Job) -> Outcome:
    gift = event.payload.get("gift") or event.data
    section = job.config.section(ROLE)
    body = {
        "external_id": f"tiny_{gift['id']}",
        "received_amount": float(gift["amount"]),
        "received_date": gift["date"],
        **mappings.coding(mappings.get(job.conn, "type_default", "tiny:default"), {"fund_id": section.default_fund_id}),
        **mappings.payment_coding(job.conn, "tiny:card"),
    }
    person = Person(gift["first_name"], gift["last_name"], gift["email"])
    constituent_id, gift_id, created = job.make_gift(person, body)
    return Outcome("succeeded", "gift created" if created else "gift already in the CRM", crm_constituent_id=constituent_id,
                   crm_gift_id=gift_id, amount=gift["amount"])  # fmt: skip


# -- its API, its client and its fake ----------------------------------------------------------------------


class TinyClient:
    def __init__(self, rt: Any):
        self.api = httpx.Client(base_url=rt.config.section(ROLE).base_url, transport=rt.transport(ROLE))
        self.api.requests_sent = 0  # type: ignore[attr-defined]
        if not rt.secrets.get("TINY_API_KEY"):
            raise ConfigError("TINY_API_KEY", "environment", "not set")

    def gifts(self) -> list[dict[str, Any]]:
        self.api.requests_sent += 1  # type: ignore[attr-defined]
        return self.api.get("/gifts").json()["gifts"]

    def close(self) -> None:
        self.api.close()


def from_runtime(rt: Any) -> TinyClient:
    return TinyClient(rt)


def probe(client: TinyClient) -> str:
    return f"{len(client.gifts())} gift(s) listed"


def fake_app() -> Starlette:
    async def listed(request: Request) -> JSONResponse:
        return JSONResponse({"gifts": GIFTS})

    return Starlette(routes=[Route("/v1/gifts", listed)])


# -- its reconcile listing -------------------------------------------------------------------------------


def expected(conn: Any, rt: Any, start: date, end: date) -> tuple[list[Expected], int]:
    with platforms.using(rt, ROLE) as client:
        listed = client.gifts()
        spent = client.api.requests_sent
    items = [
        Expected(
            ROLE,
            f"tiny_{g['id']}",
            g["id"],
            Decimal(g["amount"]),
            Decimal(g["amount"]),
            g["date"],
            sync_job={
                "source": ROLE,
                "entity_type": "gift",
                "entity_id": g["id"],
                "external_id": f"tiny_{g['id']}",
                "payload": {"gift": g},
            },
        )  # fmt: skip
        for g in listed
        if str(start) <= g["date"] <= str(end)
    ]
    return items, spent


def adapter() -> Any:
    import sys

    return sys.modules[__name__]  # this module is the adapter


TINY = platforms.Platform(
    name="tinygive",
    role=ROLE,
    webhook=platforms.Webhook(adapter, secret="TINY_WEBHOOK_SECRET", secret_help="signs its webhooks"),
    client=platforms.Client(from_runtime, probe=probe, key="TINY_API_KEY", key_help="the platform's API key"),
    external_id_prefixes=("tiny_",),
    mappings=platforms.Mappings(types=("default",), payment_case="lower", payment_examples="tiny:<method> (card, ...)"),
    expected=expected,
    backfill=True,
    handlers={"gift": tiny_gift},
    config=TinyConfig,
    config_env={"TINY_API_BASE_URL": "base_url"},
)


# -- the test -------------------------------------------------------------------------------------------


@pytest.fixture
def tiny(coded, env, transports) -> Iterator[None]:
    platforms.register(TINY)
    env.update(TINY_API_KEY="tiny-key", TINY_WEBHOOK_SECRET=SECRET, TINY_API_BASE_URL="http://tiny.fake.invalid/v1")
    transports[ROLE] = AppTransport(fake_app())
    yield
    platforms.unregister(TINY.name)


def signed(gift: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    body = json.dumps({"id": f"evt_{gift['id']}", "gift": gift}).encode()
    return body, {"X-Tiny-Signature": hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()}


def test_a_platform_defined_in_one_file_works_through_every_command(tiny, coded, cli, db, tmp_path):
    from synctool.web.receiver import create_app

    (tmp_path / "config.yaml").write_text(
        f"platforms: [{', '.join([*platforms.DEFAULT_PLATFORMS, TINY.name])}]\ntiny:\n  default_fund_id: 2398\n"
    )  # its own config section
    assert cli("mappings", "types", "set", "tiny:default", "--fund-id", "2399").exit_code == 0
    assert cli("mappings", "payments", "set", "tiny:CARD", "--payment-type-id", "1509").exit_code == 0
    with TestClient(create_app(runtime())) as client:
        body, headers = signed(GIFTS[0])
        assert client.post("/webhooks/tiny", content=body, headers=headers).json()["status"] == "accepted"
        assert client.post("/webhooks/tiny", content=body, headers={"X-Tiny-Signature": "0" * 64}).status_code == 401
    run_drain()
    made = [g for g in coded.crm.gifts.values() if g["external_id"] == "tiny_K1"]
    assert len(made) == 1 and made[0]["received_amount"] == 25.0 and made[0]["fund_id"] == 2399
    assert made[0]["payment_type_id"] == 1509  # tiny:card, written as the platform's mapping keys say

    dry = json.loads(
        cli("backfill", "--since", "2026-10-01", "--until", "2026-10-31", "--source", "tiny", "--dry-run", "--json").stdout
    )
    assert dry["new"] == 1  # K2 never arrived by webhook
    result = cli("reconcile", "--from", "2026-10-01", "--to", "2026-10-31", "--source", "tiny", "--json")
    report = {i["external_id"]: i for i in json.loads(result.stdout)["items"]}
    assert report["tiny_K1"]["status"] == "matched" and report["tiny_K1"]["source"] == "tiny"
    assert report["tiny_K2"]["status"] == "missing" and result.exit_code == 1
    connections = {r["name"]: r for r in json.loads(cli("test-connections", "--json").stdout)}
    assert connections["tiny"]["state"] == "ok" and "2 gift(s) listed" in connections["tiny"]["detail"]
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert checks["secret TINY_API_KEY"]["detail"].startswith("set (environment); tinygive:")
