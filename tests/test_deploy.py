"""The files a server runs synctool with (systemd units, the Caddyfile, the nginx block, the logrotate rule) are
checked the way this machine allows: by their own validators where installed (systemd-analyze, caddy, nginx),
and always by the settings the README and docs/deploy.md promise; the README's install steps name the paths
the files contain."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from synctool.config import DEFAULT_CONFIG, DEFAULT_DB, ReceiverConfig

ROOT = Path(__file__).resolve().parents[1]
UNITS = ["synctool-serve.service", "synctool-drain.service"]
README = (ROOT / "README.md").read_text()
INSTALL = README.split("## Install on a server", 1)[1].split("\n## ", 1)[0]
HOME = "/home/synctool"


def unit(name: str) -> configparser.ConfigParser:
    parsed = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#", ";"))
    parsed.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    parsed.read_string((ROOT / name).read_text())
    return parsed


def as_user(path: Path) -> str:
    """A default path under the home folder, as the synctool user's."""
    return str(path).replace(str(Path.home()), HOME)


#: the [Service] keys these units use, all documented in systemd.exec(5) / systemd.service(5) / systemd.kill(5)
KNOWN_SERVICE_KEYS = {
    "Type", "User", "Group", "Environment", "EnvironmentFile", "ExecStart", "KillSignal", "TimeoutStopSec", "Restart",
    "RestartSec", "NoNewPrivileges", "ProtectSystem", "ProtectHome", "ReadWritePaths", "PrivateTmp", "PrivateDevices",
    "ProtectKernelTunables", "ProtectKernelModules", "ProtectControlGroups", "RestrictSUIDSGID", "LockPersonality",
    "RestrictAddressFamilies", "UMask",
}  # fmt: skip


@pytest.mark.parametrize("name", UNITS)
def test_the_units_are_valid_and_hardened(name, tmp_path):
    service = unit(name)["Service"]
    assert set(service) <= KNOWN_SERVICE_KEYS, set(service) - KNOWN_SERVICE_KEYS
    assert service["Restart"] == "always" and service["User"] == "synctool" and service["NoNewPrivileges"] == "yes"
    assert service["ProtectSystem"] == "strict" and service["PrivateTmp"] == "yes"
    assert service["UMask"] == "0077"  # whatever synctool's files are written by, they are its user's alone
    assert service["ReadWritePaths"] == as_user(DEFAULT_DB.parent)  # the database's folder, and only it
    assert service["EnvironmentFile"] == f"-{HOME}/.synctool.env"
    assert service["Environment"] == f"SYNCTOOL_CONFIG={as_user(DEFAULT_CONFIG)}"
    assert service["ExecStart"].startswith("/opt/synctool/bin/synctool ")
    assert unit(name)["Install"]["WantedBy"] == "multi-user.target"
    if name == "synctool-serve.service":
        # uvicorn lets in-flight requests finish for up to 20 s (receiver.serve): systemd waits longer than that
        assert int(service["TimeoutStopSec"]) > 20 and service["ExecStart"].endswith(" serve")
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return  # the keys above are what this machine can check
    # systemd's own check, with ExecStart pointing at this machine's synctool (it must exist to verify)
    here = Path(sys.executable).parent / "synctool"
    copy = tmp_path / name
    copy.write_text((ROOT / name).read_text().replace("/opt/synctool/bin/synctool", str(here)))
    result = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60)
    complaints = [line for line in result.stderr.splitlines() if name in line]
    assert result.returncode == 0 and not complaints, result.stderr


def test_the_caddyfile_passes_only_the_receivers_routes_untouched():
    text = (ROOT / "deploy" / "Caddyfile").read_text()
    body = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    assert body.count("{") == body.count("}")
    assert re.search(r"@synctool path /webhooks/\* /health\b", body)
    assert re.search(r"reverse_proxy 127\.0\.0\.1:8787\b", body)
    assert "respond 404" in body
    for rewriting in ("rewrite", "uri ", "handle_path", "encode", "strip_prefix"):
        assert rewriting not in body, rewriting  # nothing may change the path, the query or the body
    size = re.search(r"max_size (\d+)MiB", body)
    assert size and int(size.group(1)) * 1024 * 1024 == ReceiverConfig().max_body_bytes
    caddy = shutil.which("caddy")
    if caddy is not None:
        result = subprocess.run(
            [caddy, "validate", "--config", str(ROOT / "deploy" / "Caddyfile"), "--adapter", "caddyfile"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0 and "Valid configuration" in result.stdout + result.stderr, result.stderr


def test_the_nginx_block_passes_the_uri_as_sent(tmp_path):
    text = (ROOT / "deploy" / "nginx.conf").read_text()
    body = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    passes = re.findall(r"proxy_pass\s+([^;]+);", body)
    assert passes and all(p == "http://127.0.0.1:8787" for p in passes)  # no URI part: the request URI unchanged
    assert "client_max_body_size 1m;" in body and "return 404;" in body
    for rewriting in ("rewrite ", "sub_filter", "gzip on"):
        assert rewriting not in body
    nginx, openssl = shutil.which("nginx"), shutil.which("openssl")
    if nginx is None or openssl is None:
        return
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=sync.example.org", "-days", "1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    server = re.sub(r"ssl_certificate\s+\S+;", f"ssl_certificate {cert};", text)
    server = re.sub(r"ssl_certificate_key\s+\S+;", f"ssl_certificate_key {key};", server)
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\naccess_log off;\nclient_body_temp_path {tmp_path};\n{server}\n}}\n"
    )
    result = subprocess.run([nginx, "-t", "-c", str(conf), "-p", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_proxies_keep_the_staff_page_to_the_offices_addresses():
    """The commented /admin blocks, once uncommented, pass only the office's addresses, unchanged."""
    caddy = uncommented((ROOT / "deploy" / "Caddyfile").read_text(), "handle /admin*")
    assert "@outside_office not remote_ip 203.0.113.0/24" in caddy and "respond @outside_office 403" in caddy
    assert "reverse_proxy 127.0.0.1:8787" in caddy and caddy.count("{") == caddy.count("}")
    nginx = uncommented((ROOT / "deploy" / "nginx.conf").read_text(), "location /admin")
    assert "allow 203.0.113.0/24;" in nginx and "deny all;" in nginx
    assert "proxy_pass http://127.0.0.1:8787;" in nginx and "X-Forwarded-Proto $scheme" in nginx  # the cookie's Secure flag


def uncommented(text: str, start: str) -> str:
    """The commented block that opens with ``start``, uncommented, to its closing brace."""
    lines = [line.strip().lstrip("#").strip() for line in text.splitlines()]
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    depth, block = 0, []
    for line in lines[first:]:
        block.append(line)
        depth += line.count("{") - line.count("}")
        if depth == 0:
            return "\n".join(block)
    raise AssertionError(f"{start} has no end")


def test_the_logrotate_rule_needs_no_copytruncate():
    rule = (ROOT / "deploy" / "synctool.logrotate").read_text()
    body = "\n".join(line.split("#", 1)[0] for line in rule.splitlines())
    assert body.strip().startswith("/var/log/synctool/*.log {") and "copytruncate" not in body
    assert "rotate 8" in body and "create 0600 synctool synctool" in body


def test_the_readme_install_steps_are_the_ones_the_files_contain():
    for name in UNITS:
        assert name in INSTALL
        service = unit(name)["Service"]
        assert service["ExecStart"].split()[0].rsplit("/bin/", 1)[0] in INSTALL  # the virtualenv's path
        assert service["EnvironmentFile"].lstrip("-") in INSTALL
        assert service["Environment"].split("=", 1)[1] in INSTALL  # init writes the config the units read
        assert f"--home-dir {HOME}" in INSTALL and "useradd" in INSTALL and f"enable --now {UNITS[0].split('.')[0]}" in INSTALL
    assert "cp deploy/Caddyfile /etc/caddy/Caddyfile" in INSTALL
    assert "cp deploy/synctool.logrotate /etc/logrotate.d/synctool" in INSTALL
    assert "install -d -m 700 -o synctool /var/log/synctool" in INSTALL  # where crontab.example's lines log
    assert "/var/log/synctool/" in (ROOT / "crontab.example").read_text()
    assert "PATH=/opt/synctool/bin:" in (ROOT / "crontab.example").read_text()


def test_doctor_checks_the_receiver_and_that_its_public_url_reaches_it(cli, env, isolated, secrets_env):
    import json

    from synctool.fakes.crm import FakeCrm
    from synctool.fakes.crm import create_app as crm_app
    from synctool.fakes.server import BackgroundServer
    from synctool.web.receiver import create_app
    from tests.helpers import free_port, runtime

    def doctor(public_url: str | None, port: int) -> dict:
        public = f"  public_url: {public_url}\n" if public_url else ""
        (isolated / "config.yaml").write_text(f"receiver:\n  port: {port}\n{public}")
        return {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}

    nobody = free_port()
    found = doctor(None, nobody)
    assert found["receiver"]["status"] == "fail" and "systemctl status synctool-serve" in found["receiver"]["fix"]
    assert "receiver public url" not in found
    with BackgroundServer(create_app(runtime())) as here, BackgroundServer(create_app(runtime())) as elsewhere:
        found = doctor(here.url, here.port)
        assert found["receiver"]["status"] == "ok"
        assert found["receiver public url"]["status"] == "ok" and "the same instance id" in found["receiver public url"]["detail"]
        found = doctor(elsewhere.url, here.port)  # the public name leads to another synctool
        assert (
            found["receiver public url"]["status"] == "fail"
            and "another synctool receiver" in found["receiver public url"]["detail"]
        )
        found = doctor(f"http://127.0.0.1:{nobody}", here.port)  # this server cannot reach its own public name
        assert found["receiver public url"]["status"] == "warn" and "curl" in found["receiver public url"]["fix"]
        with BackgroundServer(crm_app(FakeCrm("k"))) as other:  # the proxy sends /health somewhere else
            found = doctor(other.url, here.port)
            assert (
                found["receiver public url"]["status"] == "fail"
                and "not as synctool's receiver" in found["receiver public url"]["detail"]
            )
