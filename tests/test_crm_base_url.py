"""The CRM key stays where it is (invariant 8): every CRM request carries the key to the base URL's host, so a
new base URL is saved only with the key given in the same call (an admin token alone cannot send the key to
another host), through the admin API and the CLI; doctor warns of a host that is not LGL's."""

from __future__ import annotations

import json

import httpx
import pytest

from synctool import settings
from tests.test_admin import api, call  # noqa: F401  (api is a fixture)

EVIL = "https://evil.example/api/v1"
REFUSED = "changing the CRM base URL needs the API key in the same request: the key is sent to the new host"


class Hosts(httpx.BaseTransport):
    """The CRM's transport, noting the host of every request before passing it on."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner, self.hosts = inner, []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.hosts.append(request.url.host)
        return self.inner.handle_request(request)


class MemoryKeyring:
    def __init__(self) -> None:
        self.saved: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, name: str) -> str | None:
        return self.saved.get((service, name))

    def set_password(self, service: str, name: str, value: str) -> None:
        self.saved[(service, name)] = value


def test_an_admin_token_alone_cannot_send_the_key_to_another_host(api, transports, db):  # noqa: F811
    sent = transports["crm"] = Hosts(transports["crm"])
    fake_url = api.world.env()["CRM_API_BASE_URL"]
    refused = call(api, "POST", "/api/admin/crm/config/api", "admin", json={"base_url": EVIL})
    assert refused.status_code == 422 and refused.json()["error"] == REFUSED, refused.text
    assert settings.get(db, "crm_base_url_production") is None
    tested = call(api, "GET", "/api/admin/crm/test-connection", "admin").json()
    assert tested["ok"] is True and tested["base_url"] == fake_url
    assert sent.hosts and "evil.example" not in sent.hosts
    # a key synctool does not hold cannot be saved here (no keyring): refused, and nothing changed
    wrong = call(api, "POST", "/api/admin/crm/config/api", "admin", json={"base_url": EVIL, "api_key": "guess"})
    assert wrong.status_code == 503 and "guess" not in wrong.text
    assert settings.get(db, "crm_base_url_production") is None
    # the same URL again is no change; with the key, the new URL is saved
    same = call(api, "POST", "/api/admin/crm/config/api", "admin", json={"base_url": fake_url})
    assert same.status_code == 200 and same.json()["base_url"] == fake_url
    key = api.world.env()["CRM_API_KEY"]
    moved = call(api, "POST", "/api/admin/crm/config/api", "admin", json={"base_url": EVIL + "/", "api_key": key})
    assert moved.status_code == 200 and moved.json()["base_url"] == EVIL and key not in moved.text
    assert settings.get(db, "crm_base_url_production") == EVIL
    assert "evil.example" not in sent.hosts  # saving it sent nothing


def test_the_cli_moves_the_base_url_only_with_the_key(fake_crm, cli, env, db, monkeypatch):
    from synctool import secrets

    refused = cli("crm", "config", "--base-url", EVIL)
    assert refused.exit_code == 2 and REFUSED in refused.output
    assert settings.get(db, "crm_base_url_production") is None
    assert json.loads(cli("crm", "test-connection", "--json").stdout)["base_url"] == fake_crm.url + "/api/v1"
    # with a keyring, the key given is saved with the new URL
    keyring = MemoryKeyring()
    monkeypatch.setattr(secrets, "_backend", lambda: keyring)
    env["SYNCTOOL_KEYRING"] = "on"
    moved = cli("crm", "config", "--base-url", EVIL, "--api-key", input="a-new-key-77\n")
    assert moved.exit_code == 0, moved.output
    assert settings.get(db, "crm_base_url_production") == EVIL and keyring.saved == {("synctool", "CRM_API_KEY"): "a-new-key-77"}
    assert "a-new-key-77" not in moved.output


@pytest.mark.parametrize(
    ("url", "status"),
    [("https://api.littlegreenlight.com/api/v1", "ok"), (EVIL, "warn"), ("http://127.0.0.1:9/api/v1", "warn")],
)
def test_doctor_warns_of_a_crm_host_that_is_not_lgls(fake_crm, cli, env, url, status):
    env["CRM_API_BASE_URL"] = url
    doctor = cli("doctor", "--json")
    row = {c["check"]: c for c in json.loads(doctor.stdout)}["crm"]
    assert row["status"] == status, row
    if status == "warn":
        assert "not api.littlegreenlight.com" in row["detail"] and "--api-key" in row["fix"]
