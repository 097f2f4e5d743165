"""A real SMTP server for tests/drills/test_mail_tls.py, run as its own process:
``python tests/drills/smtp_tls_server.py CERT_FOLDER``.

aiosmtpd listeners on loopback ports, one per case, with the certificates the drill made in CERT_FOLDER:

- ``starttls``: offers STARTTLS (good.pem, issued for 127.0.0.1 and localhost), requires it before anything else,
  and offers AUTH only after it, as a careful mail provider does;
- ``plain``: offers no STARTTLS at all, and would accept AUTH and mail in the clear;
- ``other_ca`` and ``wrong_host``: offer STARTTLS with a certificate from a CA the client does not trust, or
  issued for another host name, and would accept AUTH and mail without TLS;
- ``tls``: implicit TLS from the first byte (port 465 style), good.pem.

One user (USER, PASSWORD) signs in. Every event is one JSON line on stdout: first ``ready`` with the ports by
listener, then ``ehlo``, ``starttls``, ``auth`` and ``message``, each with the listener and whether the session
was under TLS at that moment.
"""

from __future__ import annotations

import json
import socket
import ssl
import sys
import threading
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

USER, PASSWORD = "alerts@example.org", "smtp-pass-4e1f9a"
_lock = threading.Lock()


def emit(**event: Any) -> None:
    with _lock:
        print(json.dumps(event), flush=True)


def under_tls(server: Any) -> bool:
    return server.transport is not None and server.transport.get_extra_info("ssl_object") is not None


class Recorder:
    """The aiosmtpd handler of one listener: records each step and keeps nothing else."""

    def __init__(self, name: str):
        self.name = name

    async def handle_EHLO(self, server: Any, session: Any, envelope: Any, hostname: str, responses: list[str]) -> list[str]:
        session.host_name = hostname
        emit(listener=self.name, event="ehlo", tls=under_tls(server))
        return responses

    def handle_STARTTLS(self, server: Any, session: Any, envelope: Any) -> bool:
        emit(listener=self.name, event="starttls")
        return True

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        content = envelope.content.decode("utf-8", "replace") if isinstance(envelope.content, bytes) else envelope.content
        emit(listener=self.name, event="message", tls=under_tls(server), rcpt=envelope.rcpt_tos, data=content)
        return "250 OK"

    def authenticate(self, server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
        ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
            USER.encode(),
            PASSWORD.encode(),
        )
        emit(listener=self.name, event="auth", tls=under_tls(server), mechanism=mechanism, ok=ok)
        return AuthResult(success=ok)


def server_context(pem: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem)
    return context


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(folder: Path) -> None:
    good = server_context(folder / "good.pem")
    listeners: dict[str, dict[str, Any]] = {
        "starttls": {"tls_context": good, "require_starttls": True, "auth_require_tls": True},
        "plain": {"auth_require_tls": False},
        "other_ca": {"tls_context": server_context(folder / "other_ca.pem"), "auth_require_tls": False},
        "wrong_host": {"tls_context": server_context(folder / "wrong_host.pem"), "auth_require_tls": False},
        # aiosmtpd counts only STARTTLS as TLS for auth_require_tls; this connection is TLS from its first byte
        "tls": {"ssl_context": good, "auth_require_tls": False},
    }
    ports: dict[str, int] = {}
    for name, options in listeners.items():
        recorder = Recorder(name)
        controller = Controller(
            recorder,
            hostname="127.0.0.1",
            port=free_port(),
            server_hostname="mail.drill.test",  # not socket.getfqdn(), which may wait on DNS
            authenticator=recorder.authenticate,
            **options,
        )
        controller.start()
        ports[name] = controller.port
    emit(event="ready", ports=ports)
    threading.Event().wait()  # until the drill terminates this process


if __name__ == "__main__":
    main(Path(sys.argv[1]))
