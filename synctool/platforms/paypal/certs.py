"""PayPal's webhook signature, checked without calling PayPal for each delivery (PayPal's "Integrate webhooks" guide,
https://developer.paypal.com/api/rest/webhooks/rest/, "Verify the signature yourself"):

- the signed string is ``<PAYPAL-TRANSMISSION-ID>|<PAYPAL-TRANSMISSION-TIME>|<webhook id>|<CRC32 of the raw body,
  in decimal>``, where the webhook id is the one PayPal gave synctool's webhook when it was registered;
- ``PAYPAL-TRANSMISSION-SIG`` is its base64 signature under ``PAYPAL-AUTH-ALGO`` (``SHA256withRSA``: RSA PKCS#1 v1.5
  over SHA-256), made with the key of the certificate that ``PAYPAL-CERT-URL`` names.

The certificate URL arrives with the delivery, so it is hostile: it is fetched only when it lies under one of
PayPal's own certificate folders (``https://api.paypal.com/v1/notifications/certs/`` and the sandbox's
``https://api.sandbox.paypal.com/v1/notifications/certs/``, the hosts PayPal's own SDK samples and documented
headers show; ``paypal.cert_url_prefixes`` adds others, which the tests use for their fake) and its last segment is
a plain name. Any other URL is refused without being fetched, and nothing secret goes with the fetch (no token, no
key: a plain GET over verified TLS, which is what vouches for the certificate). A fetched certificate is kept in
this process and, beside a SQLite database, in ``paypal-certs/`` (0600) until it expires (PayPal rotates them
rarely: one fetch per certificate, not per delivery; a blocking one, in the receiver's loop); it and every
certificate the document chains it to must be within their validity, and each must be issued by the next.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import threading
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from synctool.platform import ConfigError, InvalidSignature

if TYPE_CHECKING:
    from cryptography.x509 import Certificate

    from synctool.platform import Runtime

#: PayPal's own certificate folders (live and sandbox), as its documented ``cert_url`` values show them
PAYPAL_CERT_PREFIXES = (
    "https://api.paypal.com/v1/notifications/certs/",
    "https://api.sandbox.paypal.com/v1/notifications/certs/",
)
ALGORITHM = "SHA256withRSA"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_MAX_CERT_BYTES = 64 * 1024


@dataclass(frozen=True)
class Headers:
    transmission_id: str
    transmission_time: str
    signature: str
    cert_url: str
    algorithm: str


def headers_of(headers: dict[str, str] | object) -> Headers:
    """The five PayPal headers, each present and of a sane length, else ``InvalidSignature`` naming the first missing."""
    found = {}
    for name in ("transmission-id", "transmission-time", "transmission-sig", "cert-url", "auth-algo"):
        value = headers.get(f"paypal-{name}", "") if hasattr(headers, "get") else ""
        if not value or len(value) > 1000:
            raise InvalidSignature(f"missing PAYPAL-{name.upper()} header", "PayPal signs every webhook with five headers")
        found[name] = value
    return Headers(found["transmission-id"], found["transmission-time"], found["transmission-sig"], found["cert-url"],
                   found["auth-algo"])  # fmt: skip


def allowed(url: str, prefixes: tuple[str, ...]) -> bool:
    """Whether ``url`` is a certificate under one of ``prefixes``: the prefix exactly, then one plain name."""
    return any(url.startswith(p) and _NAME.match(url[len(p) :]) is not None for p in prefixes if p.endswith("/"))


def signed_string(h: Headers, webhook_id: str, body: bytes) -> bytes:
    return f"{h.transmission_id}|{h.transmission_time}|{webhook_id}|{zlib.crc32(body)}".encode()


def transmitted_at(h: Headers) -> datetime:
    try:
        moment = datetime.fromisoformat(h.transmission_time.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidSignature("PAYPAL-TRANSMISSION-TIME is not an ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_CACHE: dict[str, list[Certificate]] = {}
_LOCK = threading.Lock()


def _kept_at(rt: Runtime, url: str) -> Path | None:
    """Where a fetched certificate is kept between runs: ``paypal-certs/`` beside a SQLite database (synctool's own
    folder, 0700; a file per URL, 0600); None on PostgreSQL (each receiver process fetches it once)."""
    try:
        folder = Path(rt.config.db_path).parent / "paypal-certs"
    except ConfigError:
        return None
    return folder / (hashlib.sha256(url.encode()).hexdigest()[:32] + ".pem")


def _load(document: bytes) -> list[Certificate]:
    from cryptography.x509 import load_pem_x509_certificates

    try:
        return load_pem_x509_certificates(document)
    except ValueError:
        raise InvalidSignature("PAYPAL-CERT-URL names no PEM certificate") from None


def chain(url: str, rt: Runtime | None, role: str, timeout_s: float) -> list[Certificate]:
    """The certificates of ``url`` (leaf first): kept in this process, else on disk beside the database, else
    fetched through the role's transport (and kept in both)."""
    with _LOCK:
        if url in _CACHE:
            return _CACHE[url]
    if rt is None:
        raise ConfigError("PAYPAL-CERT-URL", "PayPal", "the certificate cannot be fetched here (no run-time)")
    kept = _kept_at(rt, url)
    if kept is not None and kept.is_file():
        found = _load(kept.read_bytes())
        now = datetime.now(UTC)
        if all(c.not_valid_before_utc <= now <= c.not_valid_after_utc for c in found):
            with _LOCK:
                _CACHE[url] = found
            return found
    found = _load(_fetch(url, rt, role, timeout_s))
    if kept is not None:
        try:
            kept.parent.mkdir(mode=0o700, exist_ok=True)
            part = kept.with_suffix(".partial")
            part.write_bytes(b"".join(c.public_bytes(_pem()) for c in found))
            part.chmod(0o600)
            part.replace(kept)
        except OSError:  # a read-only folder: kept in this process only
            pass
    with _LOCK:
        _CACHE[url] = found
    return found


def _pem() -> Any:
    from cryptography.hazmat.primitives.serialization import Encoding

    return Encoding.PEM


def _fetch(url: str, rt: Runtime, role: str, timeout_s: float) -> bytes:
    """One plain GET of the certificate (no token, no key), through the role's transport."""
    import httpx

    try:
        with httpx.Client(transport=rt.transport(role), timeout=timeout_s, follow_redirects=False) as http:
            answer = http.get(url)
    except httpx.HTTPError as exc:
        raise ConfigError("PAYPAL-CERT-URL", "PayPal", f"its certificate could not be fetched: {type(exc).__name__}") from None
    if answer.status_code != 200 or len(answer.content) > _MAX_CERT_BYTES:
        raise ConfigError("PAYPAL-CERT-URL", "PayPal", f"its certificate could not be fetched (HTTP {answer.status_code})")
    return answer.content


def forget() -> None:
    """Drop the certificates this process fetched (the tests' fakes make new keys)."""
    with _LOCK:
        _CACHE.clear()


def check_chain(found: list[Certificate], now: datetime) -> Certificate:
    """The leaf, once every certificate is within its validity and each is issued by the next."""
    if not found:
        raise InvalidSignature("PAYPAL-CERT-URL names no certificate")
    for cert in found:
        if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
            raise InvalidSignature("PayPal's certificate is not valid now", f"valid until {cert.not_valid_after_utc:%Y-%m-%d}")
    from cryptography.exceptions import InvalidSignature as BadSignature

    for cert, issuer in zip(found, found[1:], strict=False):
        try:
            cert.verify_directly_issued_by(issuer)
        except (BadSignature, ValueError, TypeError):
            raise InvalidSignature("PayPal's certificate chain does not hold together") from None
    return found[0]


def verify_rsa(leaf: Certificate, signature: str, message: bytes) -> None:
    from cryptography.exceptions import InvalidSignature as BadSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = leaf.public_key()
    if not isinstance(key, rsa.RSAPublicKey):
        raise InvalidSignature("PayPal's certificate holds no RSA key")
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidSignature("PAYPAL-TRANSMISSION-SIG is not base64") from None
    try:
        key.verify(raw, message, padding.PKCS1v15(), hashes.SHA256())
    except BadSignature:
        raise InvalidSignature("invalid signature", "PAYPAL-TRANSMISSION-SIG does not sign this body for this webhook") from None
