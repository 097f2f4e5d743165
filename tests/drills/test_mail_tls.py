"""Mail leaves only over verified TLS (DESIGN.md, invariant 10), drilled against a real SMTP server in a process
of its own (tests/drills/smtp_tls_server.py: aiosmtpd, with certificates from a throwaway CA made by trustme):
`synctool alerts test`, run as an operator runs it, signs in and sends only after STARTTLS or implicit TLS with a
verified certificate; a server that offers no STARTTLS, or whose certificate does not verify, is told nothing,
neither the password nor the message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from tests.drills.conftest import ROOT

SERVER = Path(__file__).with_name("smtp_tls_server.py")
USER, PASSWORD = "alerts@example.org", "smtp-pass-4e1f9a"  # the server's one user (smtp_tls_server.py)


class MailServer:
    def __init__(self, folder: Path):
        self.folder = folder
        self.events_file = folder / "events.jsonl"
        self.ca_file = folder / "ca.pem"
        self.ports: dict[str, int] = {}

    def events(self, listener: str) -> list[dict[str, Any]]:
        lines = self.events_file.read_text().splitlines()
        return [e for e in map(json.loads, lines) if e.get("listener") == listener]

    def kinds(self, listener: str) -> list[str]:
        return [e["event"] for e in self.events(listener)]


@pytest.fixture(scope="module")
def mail_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailServer]:
    folder = tmp_path_factory.mktemp("mail")
    trusted, stranger = trustme.CA(), trustme.CA()
    trusted.cert_pem.write_to_path(str(folder / "ca.pem"))
    trusted.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(str(folder / "good.pem"))
    stranger.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(str(folder / "other_ca.pem"))
    trusted.issue_cert("mail.example.org").private_key_and_cert_chain_pem.write_to_path(str(folder / "wrong_host.pem"))
    server = MailServer(folder)
    with open(server.events_file, "wb") as out, open(folder / "server.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, str(SERVER), str(folder)], cwd=ROOT, stdout=out, stderr=log)
    try:
        deadline = time.monotonic() + 15
        while not server.ports and time.monotonic() < deadline and proc.poll() is None:
            lines = server.events_file.read_text().splitlines()
            if lines and json.loads(lines[0])["event"] == "ready":
                server.ports = json.loads(lines[0])["ports"]
            else:
                time.sleep(0.05)
        assert server.ports, (folder / "server.log").read_text()
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def alerts_test(env: dict[str, str], smtp: str) -> subprocess.CompletedProcess:
    """`synctool alerts test` as its own process, with ``smtp:`` as the config's section and the password in the
    environment as an operator's env file puts it."""
    Path(env["SYNCTOOL_CONFIG"]).write_text(f"smtp: {smtp}\n")
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCTOOL_", "SMTP_", "CRM_"))}
    return subprocess.run(
        [sys.executable, "-m", "synctool.cli.main", "alerts", "test"],
        cwd=ROOT,
        env={**keep, **env, "SMTP_PASSWORD": PASSWORD},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def recipients(cli) -> None:
    assert cli("settings", "alert-recipients", "ops@example.org").exit_code == 0


def test_starttls_with_a_verified_certificate_signs_in_and_sends_only_under_tls(mail_server, env, recipients):
    port = mail_server.ports["starttls"]
    done = alerts_test(env, f"{{host: 127.0.0.1, port: {port}, username: {USER}, ca_file: '{mail_server.ca_file}'}}")
    assert done.returncode == 0, done.stderr
    assert "test alert sent to ops@example.org" in done.stdout
    assert f"security: STARTTLS to 127.0.0.1:{port}, certificate and host name verified" in done.stdout
    events = mail_server.events("starttls")
    assert [e["event"] for e in events] == ["ehlo", "starttls", "ehlo", "auth", "message"]
    auth, message = events[3], events[4]
    assert auth["ok"] and auth["tls"], auth  # the password crossed inside TLS
    assert message["tls"] and message["rcpt"] == ["ops@example.org"] and "Subject: synctool: test alert" in message["data"]
    assert PASSWORD not in done.stdout + done.stderr


def test_a_server_that_offers_no_starttls_is_told_nothing(mail_server, env, recipients):
    port = mail_server.ports["plain"]
    done = alerts_test(env, f"{{host: 127.0.0.1, port: {port}, username: {USER}, security: starttls}}")
    assert done.returncode == 1, done.stdout
    assert "does not offer STARTTLS" in done.stderr and "smtp.security is starttls" in done.stderr
    assert "Traceback" not in done.stderr and PASSWORD not in done.stdout + done.stderr
    assert mail_server.kinds("plain") == ["ehlo"]  # no AUTH, no message


@pytest.mark.parametrize("listener", ["other_ca", "wrong_host"])
def test_a_certificate_that_does_not_verify_stops_the_mail_before_the_password(mail_server, env, recipients, listener):
    port = mail_server.ports[listener]
    done = alerts_test(env, f"{{host: 127.0.0.1, port: {port}, username: {USER}, ca_file: '{mail_server.ca_file}'}}")
    assert done.returncode == 1, done.stdout
    assert "the certificate of 127.0.0.1 could not be verified" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and PASSWORD not in done.stdout + done.stderr
    assert "auth" not in mail_server.kinds(listener) and "message" not in mail_server.kinds(listener)


def test_implicit_tls_with_a_verified_certificate(mail_server, env, recipients):
    port = mail_server.ports["tls"]
    done = alerts_test(
        env, f"{{host: 127.0.0.1, port: {port}, username: {USER}, security: tls, ca_file: '{mail_server.ca_file}'}}"
    )
    assert done.returncode == 0, done.stderr
    assert f"security: implicit TLS to 127.0.0.1:{port}" in done.stdout
    events = mail_server.events("tls")
    assert [e["event"] for e in events] == ["ehlo", "auth", "message"] and all(e["tls"] for e in events), events
    assert events[1]["ok"]
