"""Mail leaves only over verified TLS (DESIGN.md, invariant 10): ``smtp.security`` and its older form
``smtp.starttls``, the refusals made before a connection, and what doctor and `alerts test` say. The real TLS
handshakes (a throwaway CA, a wrong certificate, implicit TLS) are drilled in tests/drills/test_mail_tls.py."""

from __future__ import annotations

import json
import smtplib

import pytest

from synctool.config import is_loopback
from synctool.errors import ConfigError
from tests.helpers import runtime
from tests.test_admin import SmtpSink

PASSWORD = "smtp-pass-71c2"


@pytest.fixture
def sink():
    server = SmtpSink()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def recipients(cli):
    assert cli("settings", "alert-recipients", "ops@example.org").exit_code == 0


def no_connection(*args, **kwargs):
    raise AssertionError("synctool connected to a mail server it should have refused")


@pytest.mark.parametrize("old,new", [("true", "starttls"), ("false", "none")])
def test_the_old_starttls_key_still_loads_and_names_its_new_form_in_one_line(isolated, old, new):
    (isolated / "config.yaml").write_text(f"smtp:\n  host: 127.0.0.1\n  starttls: {old}\n")
    config = runtime().config
    assert config.smtp.security == new
    [line] = config.renamed_keys
    assert f"smtp.starttls is now smtp.security: {new}" in line and "unknown key" not in line and "\n" not in line


def test_a_renamed_key_is_said_by_the_first_command_doctor_and_init_not_by_every_cron_run(isolated, cli):
    (isolated / "config.yaml").write_text("smtp:\n  host: smtp.example.org\n  starttls: true\n")
    said = "smtp.starttls is now smtp.security: starttls"
    first = cli("drain", "--max-seconds", "1")
    assert first.exit_code == 0 and said in first.stderr
    for _ in range(2):  # cron's next runs: its log gains nothing
        again = cli("drain", "--max-seconds", "1")
        assert again.exit_code == 0 and "smtp.starttls" not in again.stderr
    for _ in range(2):  # doctor says it every time, as a warning with its fix
        rows = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
        assert rows["config key"]["status"] == "warn" and said in rows["config key"]["detail"]
    assert said in cli("init").stdout


def test_an_old_config_still_runs_its_commands(isolated, cli):
    (isolated / "config.yaml").write_text("smtp:\n  host: smtp.example.org\n  starttls: true\n")
    listed = cli("deliveries", "list")
    assert listed.exit_code == 0 and "unknown key" not in listed.output
    row = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}["smtp"]
    assert row["status"] == "ok" and row["detail"].startswith("STARTTLS to smtp.example.org:587")


def test_security_beside_the_old_key_wins(isolated):
    (isolated / "config.yaml").write_text("smtp:\n  host: smtp.example.org\n  starttls: false\n  security: tls\n")
    config = runtime().config
    assert config.smtp.security == "tls" and "remove smtp.starttls" in config.renamed_keys[0]


def test_an_old_starttls_key_that_is_not_true_or_false_is_named(isolated):
    (isolated / "config.yaml").write_text("smtp:\n  starttls: sometimes\n")
    with pytest.raises(ConfigError) as info:
        runtime()
    assert info.value.key == "smtp.starttls" and "smtp.security" in str(info.value)


def test_smtp_security_from_the_environment(env, cli):
    assert runtime().config.smtp.security == "starttls"  # the default
    env["SMTP_SECURITY"] = "tls"
    assert runtime().config.smtp.security == "tls"
    env["SMTP_SECURITY"] = "plain"
    result = cli("deliveries", "list")
    assert result.exit_code == 2 and "SMTP_SECURITY (environment)" in result.output


@pytest.mark.parametrize(
    "host,loopback",
    [("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True), ("localhost", True), ("LOCALHOST.", True),
     ("10.0.0.5", False), ("smtp.example.org", False), ("localhost.example.org", False), ("", False)],
)  # fmt: skip
def test_only_loopback_hosts_may_take_mail_without_tls(host, loopback):
    assert is_loopback(host) is loopback


def test_none_to_a_remote_host_is_refused_before_connecting(isolated, cli, recipients, monkeypatch, env):
    (isolated / "config.yaml").write_text("smtp:\n  host: smtp.example.org\n  username: alerts\n  security: none\n")
    env["SMTP_PASSWORD"] = PASSWORD
    monkeypatch.setattr(smtplib, "SMTP", no_connection)
    monkeypatch.setattr(smtplib, "SMTP_SSL", no_connection)
    result = cli("alerts", "test")
    assert result.exit_code == 2, result.output
    assert "smtp.security" in result.output and "smtp.example.org" in result.output and "unencrypted" in result.output
    assert "Traceback" not in result.output and PASSWORD not in result.output
    row = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}["smtp"]
    assert row["status"] == "fail" and "starttls" in row["fix"]


def test_the_old_starttls_false_to_a_remote_host_is_refused_too(isolated, cli, recipients, monkeypatch):
    (isolated / "config.yaml").write_text("smtp:\n  host: mail.example.org\n  starttls: false\n")
    monkeypatch.setattr(smtplib, "SMTP", no_connection)
    result = cli("alerts", "test")
    assert result.exit_code == 2 and "smtp.security" in result.output


def test_a_server_without_starttls_is_never_sent_the_password_or_the_message(isolated, cli, recipients, sink, env):
    (isolated / "config.yaml").write_text(f"smtp:\n  host: 127.0.0.1\n  port: {sink.port}\n  username: alerts\n")
    env["SMTP_PASSWORD"] = PASSWORD
    result = cli("alerts", "test")
    assert result.exit_code == 1, result.output
    assert "does not offer STARTTLS" in result.output and "smtp.security is starttls" in result.output
    assert "Traceback" not in result.output and PASSWORD not in result.output
    assert "AUTH" not in sink.verbs() and "MAIL" not in sink.verbs() and sink.messages == []
    assert sink.verbs()[0] == "EHLO"


def test_alerts_test_says_how_the_mail_went(isolated, cli, recipients, sink, env):
    (isolated / "config.yaml").write_text(f"smtp:\n  host: 127.0.0.1\n  port: {sink.port}\n  security: none\n")
    result = cli("alerts", "test")
    assert result.exit_code == 0, result.output
    assert f"security: unencrypted to a loopback relay 127.0.0.1:{sink.port}" in result.stdout
    assert len(sink.messages) == 1 and "STARTTLS" not in sink.verbs()
    row = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}["smtp"]
    assert row["status"] == "ok" and "loopback relay" in row["detail"]


def test_the_description_names_tls_and_the_trusted_cas(isolated, cli):
    from synctool.ops.alerts import mail_security

    (isolated / "config.yaml").write_text("smtp: {host: smtp.example.org, port: 465, security: tls}\n")
    assert mail_security(runtime()) == (
        "implicit TLS to smtp.example.org:465, certificate and host name verified against the system's CAs"
    )
    (isolated / "config.yaml").write_text("smtp: {host: smtp.example.org, ca_file: /etc/relay-ca.pem}\n")
    assert mail_security(runtime()).startswith("STARTTLS to smtp.example.org:587")
    assert mail_security(runtime()).endswith("the CAs in /etc/relay-ca.pem")
    (isolated / "config.yaml").write_text("{}\n")
    assert mail_security(runtime()) == "not configured (smtp.host is not set)"
    row = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}["smtp"]
    assert row["status"] == "ok"  # no server and no one to tell
    cli("settings", "alert-recipients", "ops@example.org")
    row = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}["smtp"]
    assert row["status"] == "warn" and row["fix"] == "set smtp.host in config"


def test_a_ca_file_that_cannot_be_read_is_named(isolated, cli, recipients, monkeypatch):
    (isolated / "not-a-ca.pem").write_text("not a certificate\n")
    for ca_file in (isolated / "missing.pem", isolated / "not-a-ca.pem"):
        (isolated / "config.yaml").write_text(f"smtp: {{host: smtp.example.org, ca_file: '{ca_file}'}}\n")
        monkeypatch.setattr(smtplib, "SMTP", no_connection)
        result = cli("alerts", "test")
        assert result.exit_code == 2 and "smtp.ca_file" in result.output and "Traceback" not in result.output
        row = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}["smtp"]
        assert row["status"] == "fail" and "smtp.ca_file" in row["detail"]
