"""The ``t=<unix>,v1=<hex>`` signature scheme that Stripe uses and the portal borrows.

v1 = HMAC-SHA256(secret, ``"<t>." + raw body``) in hex. Any v1 may match (Stripe sends one per active
secret while a secret is rolled); other schemes (the test-mode ``v0``) are ignored; a timestamp older than
the tolerance (300 s) is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

from synctool.errors import ConfigError, InvalidSignature


def parse_signature_header(header: str) -> tuple[int, list[str]]:
    """The timestamp and the v1 signatures of a ``t=...,v1=...`` header; InvalidSignature if malformed."""
    timestamp = None
    signatures = []
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise InvalidSignature("malformed signature header", "t must be unix seconds") from None
        elif key == "v1":
            signatures.append(value.strip())
    if timestamp is None or not signatures:
        raise InvalidSignature("malformed signature header", "expected t=<unix seconds>,v1=<hex>")
    return timestamp, signatures


def verify_timestamped_hmac(body: bytes, header: str, secret: str, tolerance_s: int, now: float | None) -> None:
    """The scheme shared by Stripe and the portal: HMAC-SHA256 over ``"<t>." + body``, hex, with a tolerance."""
    timestamp, signatures = parse_signature_header(header)
    expected = hmac.new(secret.encode("utf-8"), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected.encode(), sig.encode()) for sig in signatures):
        raise InvalidSignature("signature does not match the payload")
    now = time.time() if now is None else now
    if timestamp < now - tolerance_s:
        raise InvalidSignature("signature timestamp is outside the tolerance", f"older than {tolerance_s} s")


def sign(body: bytes, secret: str, timestamp: int | None = None) -> str:
    """A ``t=...,v1=...`` header for body (for the demo and tests)."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signed_delivery(
    body: bytes,
    headers: Mapping[str, str],
    header_name: str,
    secret: str | None,
    secret_name: str,
    tolerance_s: int,
    now: float | None,
) -> None:
    """A delivery signed with the ``t=...,v1=...`` scheme in ``header_name`` (lower case), keyed by ``secret``."""
    if not secret:
        raise ConfigError(secret_name, "keyring/environment", "not set; these deliveries cannot be verified")
    header = headers.get(header_name) or ""
    if not header:
        raise InvalidSignature(f"missing {header_name} header")
    verify_timestamped_hmac(body, header, secret, tolerance_s, now)
