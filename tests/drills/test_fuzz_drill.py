"""Hostile input against the real `synctool serve` over real sockets: a few thousand requests at concurrency 16
on every route (deep nesting, wrong types, garbage, truncated bodies, oversized bodies with and without a
Content-Length, signed and unsigned) get no 5xx and no dropped connection (README "Reliability")."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx

from synctool.fakes import samples
from synctool.fakes.world import WEBHOOK_SECRETS
from synctool.platforms.signing import sign
from tests.drills.conftest import POS_URL, Site

REQUESTS = 3000
CONCURRENCY = 16
LIMIT = 1024 * 1024  # receiver.max_body_bytes

SIGNERS: dict[str, Callable[[bytes], dict[str, str]]] = {
    "donations": lambda body: {"Signature": WEBHOOK_SECRETS["DONATIONS_WEBHOOK_SECRET"]},
    "pos": lambda body: {
        "x-square-hmacsha256-signature": samples.square_signature(WEBHOOK_SECRETS["POS_WEBHOOK_SIGNATURE_KEY"], POS_URL, body)
    },
    "mailing": lambda body: {},  # its secret is the ?secret= in the URL (Site.post adds it)
    "payments": lambda body: {"Stripe-Signature": sign(body, WEBHOOK_SECRETS["PAYMENTS_WEBHOOK_SECRET"])},
    "portal": lambda body: {"Synctool-Signature": sign(body, WEBHOOK_SECRETS["PORTAL_WEBHOOK_SECRET"])},
}
VALID: dict[str, Callable[[], bytes]] = {
    "donations": lambda: samples.givebutter("transaction.succeeded", samples.GIVEBUTTER_TRANSACTION),
    "pos": lambda: samples.square_order_event("FUZZ-ORDER"),
    "mailing": samples.mailchimp_unsubscribe,
    "payments": lambda: samples.stripe_event("charge.refunded", {"id": "ch_1", "object": "charge"}),
    "portal": lambda: json.dumps({"id": "p1", "type": "user.upsert", "data": {"id": "u1", "email": "a@b.org"}}).encode(),
}
ODD_VALUES = [None, True, -1, 1e308, "", "x" * 300, [], {}, [[[]]], {"a": {"b": None}}]


def wrong_types(rng: random.Random, body: bytes) -> bytes:
    """Every value of a real payload, at any depth, replaced by a value of another JSON type at random."""

    def walk(value):
        if isinstance(value, dict):
            return {k: walk(v) if rng.random() > 0.3 else rng.choice(ODD_VALUES) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return rng.choice(ODD_VALUES) if rng.random() < 0.3 else value

    try:
        return json.dumps(walk(json.loads(body))).encode()
    except ValueError:
        return body


def case(rng: random.Random) -> tuple[str, bytes | Iterator[bytes], dict[str, str]]:
    route = rng.choice(list(SIGNERS))
    kind = rng.choice(["deep", "types", "garbage", "truncated", "valid", "oversized", "oversized-chunked"])
    valid = VALID[route]()
    body: bytes
    if kind == "deep":
        depth = rng.choice([100, 1000, 5000, 20000])
        body = rng.choice([b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth, b"[" * depth])
    elif kind == "types":
        body = wrong_types(rng, valid)
    elif kind == "garbage":
        body = rng.randbytes(rng.randrange(0, 2000))
    elif kind == "truncated":
        body = valid[: rng.randrange(0, len(valid))]
    elif kind == "valid":
        body = valid
    else:  # just over the limit, or well over it
        body = b'{"pad": "' + b"x" * (LIMIT + rng.choice([1, 70_000, LIMIT])) + b'"}'
    headers = SIGNERS[route](body) if rng.random() < 0.5 else {}
    if kind == "oversized-chunked":  # no Content-Length: in pieces, or all of it in one chunk
        size = rng.choice([4096, 65536, len(body)])
        return route, iter([body[i : i + size] for i in range(0, len(body), size)]), headers
    return route, body, headers


def test_a_fuzz_at_concurrency_16_gets_no_5xx_and_no_dropped_connection(site: Site):
    site.serve()
    rng = random.Random(20261123)
    cases = [case(rng) for _ in range(REQUESTS)]
    statuses: Counter = Counter()
    dropped: list[str] = []

    def send(chunk: list) -> None:
        with httpx.Client(timeout=30) as client:
            for route, body, headers in chunk:
                try:
                    r = site.post(client, route, body, headers)  # type: ignore[arg-type]
                except httpx.HTTPError as exc:
                    dropped.append(f"{route}: {type(exc).__name__}: {exc}")
                    continue
                statuses[r.status_code] += 1
                if r.status_code >= 400:
                    assert set(r.json()) == {"error", "detail"}, r.text

    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(send, [cases[i::CONCURRENCY] for i in range(CONCURRENCY)]))
    assert not dropped, dropped[:5]
    assert not [s for s in statuses if s >= 500], statuses
    assert sum(statuses.values()) == REQUESTS and statuses[413] > 0 and statuses[200] > 0, statuses
    assert site.give(1).json()["status"] == "accepted"  # and it still takes a real delivery
